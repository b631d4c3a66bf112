export {
  formatIssue,
  PlanValidationError,
  RUN_STATE_ERROR_CODES,
  RunStateError,
  StepError,
  VaultPathError,
  type RunStateErrorCode,
  type VaultPathErrorCode,
} from './errors.js'
export { decide, type Decision as HumanDecision } from './decide.js'
export { dryRun, type JudgePreview } from './dry-run.js'
export { forkRun, type ForkOptions } from './fork.js'
export { completeStep, nextStep, type Step, type StepOptions, type StopInfo, type WaitingNote } from './stepping.js'
export { runPlan } from './executor.js'
export type { RunOptions, RunResult } from './run-options.js'
export { createLLM, LLMError, ModelConfigError, resolveModelConfig, type CreateLLMOptions, type ModelConfig } from './llm-client.js'
export {
  invalidate,
  readLedger,
  recordEntry,
  revalidate,
  type Assumption,
  type LedgerEntry,
  type LedgerKind,
  type LedgerView,
  type LedgerWriteOptions,
  type NewLedgerEntry,
  type StandingChange,
  type StandingOptions,
} from './ledger.js'
export { loadPlan, savePlan, updateStatus } from './markdown-io.js'
export { parsePlanDocument, pathGraphFromSteps, planGraph } from './plan-document.js'
export { PlanGraph } from './plan-graph.js'
export { proposePlan, type ProposeOptions } from './propose-plan.js'
export { readProposal, type ProposalInfo, type ProposalStatus } from './proposal-note.js'
export { toDot, toMermaid, type PictureState } from './plan-picture.js'
export { toCanvas, type CanvasColor, type CanvasDocument, type CanvasEdge, type CanvasNode, type CanvasOptions } from './plan-canvas.js'
export { toSvg } from './plan-svg.js'
export { readRunStatus, type DecisionBox, type HopSummary, type NodeState, type RunNext, type RunPhase, type RunStatus, type RunStatusOptions } from './run-status.js'
export { createWorker, type WorkerOptions } from './worker.js'
export { chooseEdge, registerPredicate, type ChooseEdgeOptions, type Decision } from './transitions.js'
export type { ValidateOptions } from './validate.js'
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
} from './types.js'
export type { RunDocumentKind } from './run-documents.js'
export { searchRuns, type SearchHit, type SearchOptions } from './search-runs.js'
