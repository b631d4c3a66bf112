/**
 * Load and check a plan vault, run it or step through it, edit it, picture it, and
 * read what its runs left behind.
 *
 * @module vaultplan
 */
export {
  formatIssue,
  PictureTooLargeError,
  PlanValidationError,
  RUN_STATE_ERROR_CODES,
  RunAbortedError,
  RunStateError,
  StepError,
  VaultPathError,
  VaultplanError,
  type AnyRunStateError,
  type LockHolder,
  type ModelErrorCode,
  type PendingStep,
  type RunStateErrorCode,
  type RunStateErrorData,
  type VaultPathErrorCode,
  type VaultplanErrorCode,
} from './core/errors.js'
export { DECIDED_BY, PLAN_ISSUE_CODES, type EdgeOrigin, type ModelUsage, type NodeOrigin, type PlanIssueCode } from './core/types.js'
export { decide, type HumanDecision } from './run/decide/decide.js'
export { editPlan, type EditPlanOptions, type PlanEdit, type PlanEditResult } from './run/edits/edit-plan.js'
export { dryRun, type JudgePreview } from './run/read/dry-run.js'
export { runSchedules, type RunningSchedules, type RunSchedulesOptions } from './run/schedules/run-schedules.js'
export type { ScheduleDefinition } from './run/schedules/schedules.js'
export { observeRun, type ObserveOptions } from './run/read/observe-run.js'
export type { RunNext, RunPhase, RunSnapshot, SnapshotHop, SnapshotNode, WorkItem } from './run/core/run-snapshot.js'
export type { AgentClaim } from './core/types.js'
export { forkRun, type ForkOptions } from './run/forks/fork.js'
export { blockStep, completeStep, deferStep, nextStep, type Step, type StepOptions, type StopInfo, type WaitingNote } from './run/entry/stepping.js'
export { runPlan } from './run/entry/executor.js'
export type { RunOptions, RunResult } from './run/core/run-options.js'
export type { CheckDefinition, CheckResult } from './run/core/checks.js'
export { createLLM, LLMError, ModelConfigError, resolveModelConfig, type CreateLLMOptions, type ModelConfig } from './models/llm-client.js'
export {
  invalidate,
  readLedger,
  recordEntry,
  revalidate,
  type Assumption,
  type LedgerEntry,
  type LedgerKind,
  type LedgerView,
  type NewLedgerEntry,
  type StandingChange,
  type StandingOptions,
} from './memory/ledger.js'
export { loadPlan } from './plan/load-plan.js'
export { savePlan } from './plan/save-plan.js'
export type { WriteOptions } from './vault/fs-atomic.js'
export { updateStatus } from './vault/update-status.js'
export { parsePlanDocument, pathGraphFromSteps, planGraph } from './plan/plan-document.js'
export { PlanGraph } from './plan/plan-graph.js'
export { proposePlan, type ProposeOptions } from './run/proposals/propose-plan.js'
export { PROPOSAL_STATUSES, readProposal, type ProposalInfo, type ProposalStatus } from './vault/proposal-note.js'
export { JUDGE_KINDS, NODE_STATUSES, NODE_TYPES } from './core/knobs.js'
export { LEDGER_KINDS } from './core/ledger-types.js'
export { readRunStatus, type RunStatus } from './run/read/run-status.js'
export { createWorker, type WorkerOptions } from './models/worker.js'
export { chooseEdge, registerPredicate, type ChooseEdgeOptions, type Decision } from './models/transitions.js'
export type { ValidateOptions } from './plan/validate.js'
export type {
  CallLLM,
  DecidedBy,
  Edge,
  JudgeKind,
  NodeStatus,
  NodeType,
  PlanIssue,
  PlanNode,
  Predicate,
  RunEvent,
  StepInput,
  StepOutput,
  Tool,
  TransitionContext,
} from './core/types.js'
export { searchRuns, type SearchHit, type SearchOptions } from './memory/search-runs.js'
