import type { ZodType } from 'zod'
import type { JUDGE_KINDS, NODE_STATUSES, NODE_TYPES } from './knobs.js'
import type { LedgerView } from './ledger-types.js'

/** What a node is: `start` marks the entry node, everything else is a `step`. */
export type NodeType = (typeof NODE_TYPES)[number]

/**
 * The resume marker the executor writes into a node's frontmatter.
 * `waiting` is used only by nodes decided by a person (`judge: human`).
 */
export type NodeStatus = (typeof NODE_STATUSES)[number]

/** Who decides a node's conditions. */
export type JudgeKind = (typeof JUDGE_KINDS)[number]

/** A transition out of a node, read from a list item under `## Next`. */
export interface Edge {
  /** The condition as written (`approved`), or `''` / `next` for an unconditional edge. */
  label: string
  /** The id of the node the edge leads to (the link as written when it resolves to no note). */
  target: string
  /** `false` for an unconditional edge (`- [[target]]` or `- next -> [[target]]`). */
  conditional: boolean
  /**
   * Where the edge was read from; absent for edges built in code. Not enumerable: two edges
   * compare equal, and print, however they were made.
   */
  readonly at?: EdgeOrigin
}

/** Gives an edge the place it was read from, as a property that equality, JSON and the trace leave out. */
export function withOrigin(edge: Edge, at: EdgeOrigin): Edge {
  return Object.defineProperty(edge, 'at', { value: at, enumerable: false })
}

/** Where an edge was read from in its note, for diagnostics and for the person's decision. */
export interface EdgeOrigin {
  /** 1-based line in the real file. */
  line: number
  column: number
  /** The link matched several notes (already reported) or climbed out of the vault. */
  problem?: 'ambiguous' | 'outside' | 'subplan'
  /** The box of a task item: `true` ticked, `false` empty, absent when the item has none. */
  checked?: boolean
}

/** One note of a plan vault. */
export interface PlanNode {
  /** The note's path relative to the vault, without `.md`, `/` between folders. */
  id: string
  /** The first `# ` heading, or the id when there is none. */
  title: string
  /** The step description handed to the worker: the note without frontmatter, title, `## Next` and `## Feedback`. */
  body: string
  type: NodeType
  status: NodeStatus
  /** Tools the worker may use at this node; absent means every tool. */
  tools?: string[]
  /** Routes this node's LLM calls to that role's model. */
  role?: string
  /** Visit budget of this node. */
  maxVisits: number
  /** Who decides this node's conditions; absent means the LLM judge. */
  judge?: JudgeKind
  /** The `plan:` knob: the note is worked by running these folders (relative to the note's folder) as subplans; `['generate']` asks the planner for one. */
  plan?: string[]
  /** The `check:` knob: names of checks the runner defines, run after the work; they decide the labels `passed` and `failed`. */
  check?: string[]
  /** The `retries:` knob: how often a worker that throws is retried (with backoff) before the visit fails. */
  retries?: number
  /** The `wait:` knob, as written (`4h`): how long a wait for a person may last before its `timeout` edge is taken. */
  wait?: string
  edges: Edge[]
  /** Path of the note relative to the vault, when the node came from a file. */
  file?: string
  /** Everything the user wrote in the frontmatter, knobs included, kept as written. */
  frontmatter: Record<string, unknown>
  /** Problems found while reading the note (a bad knob, an ambiguous link), reported by `validate()`; absent for nodes built in code. */
  issues?: PlanIssue[]
  /**
   * Where the note's frontmatter was read from; absent for nodes built in code. Not
   * enumerable, like an edge's `at`: two nodes compare equal, and print, however they were made.
   */
  readonly at?: NodeOrigin
}

/** Where a node's frontmatter was read from in its note, for diagnostics. */
export interface NodeOrigin {
  /** 1-based line and column in the real file of each top-level frontmatter key's value (of the key, when it has none). */
  keys: ReadonlyMap<string, { line: number; column: number }>
  /** The frontmatter could not be read (broken YAML): its knobs, `type: start` perhaps, are unknown. */
  unread?: boolean
}

/** Gives a node the place its frontmatter was read from, as a property that equality and JSON leave out. */
export function withNodeOrigin<Node extends PlanNode>(node: Node, at: NodeOrigin): Node {
  return Object.defineProperty(node, 'at', { value: at, enumerable: false })
}

/** Every `code` a {@link PlanIssue} can carry. */
export const PLAN_ISSUE_CODES = [
  'ambiguous-link',
  'ambiguous-unconditional',
  'cycle-without-exit',
  'dangling-edge',
  'duplicate-id',
  'invalid-frontmatter',
  'invalid-subplan',
  'misspelled-knob',
  'misspelled-label',
  'multiple-starts',
  'multiple-targets',
  // No longer reported: a start that reaches no terminal reaches a loop with no way out or a broken edge, reported there.
  'no-reachable-terminal',
  'no-sections',
  'no-start',
  'not-a-note',
  'note-too-large',
  'outside-vault',
  'run-folder',
  'too-many-sections',
  'two-active',
  'unknown-check',
  'unknown-knob',
  'unknown-tool',
  // `editPlan`'s `after` cannot put a note there: the note named branches, a note that moves branches, ...
  'unplaceable-note',
  'unprintable-name',
  'unreachable',
  'unreadable-next',
  'unreadable-note',
  'unwritable-note',
] as const

/** What a plan's problem is: `dangling-edge`, `cycle-without-exit`, ... */
export type PlanIssueCode = (typeof PLAN_ISSUE_CODES)[number]

/** A problem found in a plan: an error stops a run before it starts, a warning does not. */
export interface PlanIssue {
  /** Stable identifier, such as `dangling-edge` or `cycle-without-exit`. */
  code: PlanIssueCode
  severity: 'error' | 'warning'
  message: string
  node?: string
  /** Path of the note relative to the vault. */
  file?: string
  /** 1-based line in the real file (frontmatter lines included). */
  line?: number
  /** 1-based column. */
  column?: number
}

/** One earlier output of the run, as handed to workers and judges. */
export interface StepOutput {
  node: string
  visit: number
  output: string
  /** A person's feedback (from a note's `## Feedback`, handed on at a decision or an unblock), not a worker's output. */
  feedback?: true
  /** A worker's output: its output note, relative to its vault's `00_plan-trace/` (`outputs/0003-review.md`). */
  file?: string
}

/** What a transition is judged against. */
export interface TransitionContext {
  query: string
  node: PlanNode
  visit: number
  step: number
  /** This visit's work output. */
  output: string
  /** The run's outputs so far, oldest first. */
  outputs: StepOutput[]
  /** The vault's ledger when the transition is judged: the judge sees its facts and valid assumptions. */
  ledger?: LedgerView
}

/** Code that decides a condition label instead of the LLM. */
export type Predicate = (context: TransitionContext) => boolean | Promise<boolean>

/** Who decides a transition: one table for the type, the trace's schema and the prose. */
export const DECIDED_BY = ['predicate', 'llm', 'agent', 'human', 'unconditional', 'rework', 'terminal', 'check', 'failure', 'timeout'] as const

/**
 * Who decided a transition; `agent`: the caller's `choice` given to
 * `completeStep`; `check`: the note's checks (`passed` / `failed`);
 * `failure`: a worker that failed after its retries took the `failed` edge;
 * `timeout`: a wait for a person ran past its `wait:` deadline.
 */
export type DecidedBy = (typeof DECIDED_BY)[number]

/**
 * A text-in, text-out model call. `role` picks the model (`action`, `transition`,
 * `planning`, or a node's `role:`).
 */
export type CallLLM = (
  prompt: string,
  options: {
    role: string
    system?: string
    signal?: AbortSignal
    /** Told, after a reply, which model answered and the tokens the endpoint reported (for the trace and telemetry). */
    onUsage?: (usage: ModelUsage) => void
  },
) => Promise<string>

/** What one model call cost, as the endpoint reported it. */
export interface ModelUsage {
  role: string
  model: string
  /** Prompt tokens, when the endpoint reported them. */
  input?: number
  /** Completion tokens, when the endpoint reported them. */
  output?: number
}

/** A tool the built-in worker may call. */
export interface Tool {
  name: string
  description: string
  /** zod schema of the arguments. */
  schema: ZodType
  execute: (args: unknown) => unknown | Promise<unknown>
}

/** What a worker gets for one visit of one node. */
export interface StepInput {
  node: PlanNode
  query: string
  visit: number
  step: number
  /** The run's outputs so far, oldest first. */
  outputs: StepOutput[]
  /** Stable for one visit (run + node + visit), even when the visit is worked again after a crash. */
  key: string
  signal?: AbortSignal
  /** The vault the run writes into: the built-in worker's ledger tools record there. */
  vault?: string
  /** The vault's ledger when the visit began. */
  ledger?: LedgerView
  /** Inside a subplan: its folder relative to the top vault (`node.id` is then the id inside the subplan). */
  plan?: string
}

/** Progress of a run, as it happens. */
export type RunEvent =
  | { type: 'start'; runId: string; resumed: boolean }
  | { type: 'enter'; node: string; visit: number; step: number; maxVisits?: number }
  | { type: 'work'; node: string; visit: number; output: string }
  | {
      type: 'transition'
      node: string
      visit: number
      step: number
      edge: Edge | null
      decidedBy: string
      rationale: string
      /** The model(s) the hop called, and the tokens the endpoint reported for the hop. */
      model?: string
      tokens?: { input: number; output: number }
    }
  | { type: 'waiting' | 'stop' | 'end'; node: string; reason?: string }
  /** Before the run goes on: the plan's warnings (files relative to the vault run), such as a `tools:` name the runner does not have. Told only when there are some. */
  | { type: 'warnings'; issues: PlanIssue[] }

/** What a run can do now: a visit to work, a saved output to judge, a planner call due. */
export interface WorkItem {
  /** `judge`: an output is saved, its transition not yet judged; `plan`: a planner call is due. */
  kind: 'work' | 'judge' | 'plan'
  /** The note, by its path from the top vault (`research/find`). */
  node: string
  visit: number
  /** The step the visit has (claimed) or would get if the items were claimed in frontier order, as its vault's trace numbers it. */
  step: number
  /** The subplan folder, relative to the top vault, for an item inside one. */
  plan?: string
  /** A visit an agent claimed (docs/stepping.md, several agents): who, its key, and when the lease ends. */
  claim?: AgentClaim
}

/** An agent's claim on a visit, as the snapshot and `busy` show it. */
export interface AgentClaim {
  agent: string
  /** The visit's key, the one `completeStep` takes. */
  key: string
  /** When the lease ends, ISO 8601: after it, another agent may take the visit. */
  until: string
}
