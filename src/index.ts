export { formatIssue, PlanValidationError, RunStateError } from './errors.js'
export { loadPlan, savePlan, updateStatus } from './markdown-io.js'
export { PlanGraph } from './plan-graph.js'
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
