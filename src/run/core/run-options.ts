import type { CallLLM, PlanNode, Predicate, RunEvent, StepInput, StepOutput, Tool } from '../../core/types.js'
import type { ClaimGate, WorkItem } from './claims.js'
import { checkDefinitions, type CheckDefinition } from './checks.js'
import type { BudgetEntry } from './run-core.js'

/** Options of `runPlan`. */
export interface RunOptions {
  /**
   * What the run is for; handed to every worker and judge. Required for a new
   * run; a resumed run uses the recorded one (another query is a
   * `RunStateError` `query-mismatch`).
   */
  query?: string
  /**
   * Does the work of one visit and returns its output.
   *
   * @default the built-in LLM worker
   */
  work?: (step: StepInput) => Promise<string>
  /**
   * The model behind the judge (and the built-in worker).
   *
   * @default the client configured from `LLM_*` environment variables
   */
  llm?: CallLLM
  /**
   * Code that decides condition labels instead of the LLM; wins over `registerPredicate`.
   *
   * @default {}
   */
  predicates?: Record<string, Predicate>
  /** Tools for the built-in worker; a node's `tools:` scopes them. */
  tools?: Tool[]
  /**
   * The checks a note's `check:` may name, by name: commands run after the
   * work that decide its `passed` / `failed` edges. Only the runner defines
   * them; a note naming another is the validation error `unknown-check`.
   *
   * @default {}
   */
  checks?: Record<string, CheckDefinition>
  /**
   * Node works plus planner calls (`plan: generate`) allowed in the whole run, across restarts.
   *
   * @default 50
   */
  maxSteps?: number
  /** Copy the plan here and run the copy (a plan folder stays a template). */
  runVault?: string
  /**
   * Flush every write to the disk, so it survives a power loss and not only a crash.
   *
   * @default true
   */
  fsync?: boolean
  /**
   * Start over: statuses reset, the old trace archived.
   *
   * @default false
   */
  fresh?: boolean
  /** Aborts the run between or during steps (the worker and the model get it too); the vault stays resumable. */
  signal?: AbortSignal
  /** Called as the run goes: `start`, `enter`, `work`, `transition`, `waiting`, `stop`, `end`. */
  onEvent?: (event: RunEvent) => void
}

/** How a run ended. */
export interface RunResult {
  /** `waiting`: a person must decide (a `judge: human` node). */
  status: 'completed' | 'stopped' | 'waiting'
  /** The terminal's output, or the latest output when the run stopped or waits. */
  output: string
  /** Why the run stopped or waits, in words; the same is in `stop` and `waiting` as data. */
  reason?: string
  /** The run's id, as recorded in the trace header. */
  runId: string
  /** Set when `status` is `stopped`: which budget ran out, where. */
  stop?: StopInfo
  /** Set when `status` is `waiting`: every note waiting for a person. */
  waiting?: WaitingNote[]
  /** Node works of the whole run, the terminal's included. */
  steps: number
  /** Calls of the planning role that wrote subplans (`plan: generate`) in the whole run; `maxSteps` bounds `steps` plus these. */
  plannerCalls: number
  /** Visits per node. */
  visits: Record<string, number>
  /** The last node worked. */
  lastNode: string
  /** The vault the run wrote into. */
  runVault: string
  /** Set when an LLM-emitted plan fell back to a path graph. */
  degraded?: string
}

/** The default step budget of a run, written once. */
export const DEFAULT_MAX_STEPS = 50

/**
 * The step budget of a call, one rule for every surface (`runPlan`, the
 * stepping calls, MCP, the queue, status and the board): the `maxSteps` the
 * call gives; else the budget recorded with the run's latest claim, stop,
 * hop or wait in any vault of its tree (`entries`); else the one the run
 * started with (`started`, its trace header's); else `fallback`
 * ({@link DEFAULT_MAX_STEPS} unless a server sets its own).
 */
export function resolveBudget(
  told: number | undefined,
  run: { entries?: Iterable<BudgetEntry> | undefined; started?: number | undefined } = {},
  fallback = DEFAULT_MAX_STEPS,
): number {
  if (told !== undefined) return told
  let last: { at: string; maxSteps: number } | undefined
  for (const entry of run.entries ?? []) {
    if (entry.maxSteps === undefined || entry.at === undefined) continue
    if (!last || entry.at >= last.at) last = { at: entry.at, maxSteps: entry.maxSteps }
  }
  return last?.maxSteps ?? run.started ?? fallback
}

/** Defaults of the run options (the step budget's is `resolveBudget`'s). */
export const DEFAULTS = { fsync: true, fresh: false }

/** Throws at once, naming the bad value, on options no run can use. */
export function checkOptions(plan: unknown, options: RunOptions): void {
  if (typeof plan !== 'string' && !(plan && typeof plan === 'object' && 'nodes' in plan)) {
    throw new TypeError(`Expected \`plan\` to be a vault folder or a PlanGraph, got \`${String(plan)}\``)
  }
  if (!options || typeof options !== 'object') throw new TypeError(`Expected \`options\` to be an object, got \`${String(options)}\``)
  if (options.query !== undefined && typeof options.query !== 'string')
    throw new TypeError(`Expected \`options.query\` to be a string, got \`${typeof options.query}\``)
  const { maxSteps } = options
  if (maxSteps !== undefined && !(Number.isInteger(maxSteps) && maxSteps >= 1)) {
    throw new TypeError(`Expected \`maxSteps\` to be an integer from 1 up, got \`${maxSteps}\``)
  }
  if (options.work !== undefined && typeof options.work !== 'function')
    throw new TypeError(`Expected \`work\` to be a function, got \`${typeof options.work}\``)
  checkDefinitions(options.checks)
}

/** Options of the stepping calls (`nextStep`, `completeStep`). */
export interface StepOptions {
  /** What the run is for; required for a vault with no run yet, the recorded one is used on resume. */
  query?: string
  /** The model behind the judge when `completeStep` gets no `choice`. */
  llm?: CallLLM
  /** Code that decides condition labels; always asked before the caller's choice. */
  predicates?: Record<string, Predicate>
  /**
   * The checks a note's `check:` may name (see `RunOptions.checks`):
   * `completeStep` runs them before judging, and they decide `passed` /
   * `failed`, which are then not among a step's `conditions`.
   *
   * @default {}
   */
  checks?: Record<string, CheckDefinition>
  /**
   * The step budget of the run from this call on, recorded with the claim so
   * later calls go on under it.
   *
   * @default the budget the run last ran with (its latest records say it), else the one it started with, else 50
   */
  maxSteps?: number
  /** @default true */
  fsync?: boolean
  signal?: AbortSignal
  /** `nextStep` only: start over (statuses reset, the old trace archived). */
  fresh?: boolean
  /**
   * The agent making the call, when several work one plan at once
   * (docs/stepping.md, several agents): `nextStep` returns this agent's pending claim, else claims
   * the first ready item nobody holds, else answers `busy`. Without it, a
   * call takes the earliest claim, whoever holds it, and is never `busy`.
   */
  agent?: string
  /**
   * How long an agent's claim lasts unless the agent calls again; an expired
   * claim may be taken by another agent (same key and visit). At most a
   * year (31536000000), as every duration vaultplan takes.
   *
   * @default 1800000 (30 minutes)
   */
  leaseMs?: number
}

/** How long an agent's claim lasts by default: 30 minutes. */
export const LEASE_MS = 30 * 60 * 1000

/** A budget that ran out. */
export interface StopInfo {
  budget: 'max_visits' | 'maxSteps'
  node: string
  visit: number
  /** The loop the run went round to come back to the node, as ids from its note first in file order; empty when it did not come back round one. */
  loop: string[]
}

/** A note waiting for a person's decision. */
export interface WaitingNote {
  /** What the note waits for: a person's decision (`judge: human`), a step an agent blocked (`blockStep`), a proposal. */
  kind: 'human' | 'blocked' | 'proposal'
  node: string
  /** The note, relative to the vault the call was made on. */
  file: string
  /** The labels a person may choose (`next` for an unconditional edge). */
  choices: string[]
  /** A blocked step: the agent's reason; a proposal to revise by an agent: the person's feedback. */
  reason?: string
  /** When the wait began, ISO 8601 (a wait recorded before times were kept has none). */
  since?: string
  /** For a note with `wait:`: when its deadline falls, ISO 8601; the `timeout` edge is taken then, if the note has one. */
  deadline?: string
  /** `true` once the deadline has passed on a note with no `timeout` edge: it keeps waiting. */
  overdue?: boolean
}

/**
 * What a plan asks of the caller now. `saved: true` is set on the answer to
 * a `completeStep` repeated with the key and the output an earlier call
 * saved already: nothing was written again, and the step is where the run
 * is now.
 */
export type Step =
  | {
      kind: 'work'
      /** The run's id: the top vault's, in every subplan (a subplan's own run id is in `key`). */
      runId: string
      key: string
      step: number
      visit: number
      node: PlanNode
      query: string
      outputs: StepOutput[]
      /** The subplan folder, relative to the top vault. */
      plan?: string
      /** The valid choices: undecided labels in file order, then `next`. */
      conditions: string[]
      /** Whether the whole run ends with this note's work: never for a subplan's last note whose run goes on above it. */
      terminal: boolean
      saved?: true
    }
  | { kind: 'waiting'; runId: string; waiting: WaitingNote[]; reason: string; saved?: true }
  | { kind: 'completed'; runId: string; node: string; output: string; saved?: true }
  | { kind: 'stopped'; runId: string; stop: StopInfo; reason: string; saved?: true }
  /** Every ready item is claimed by other agents (only with `StepOptions.agent`): the claims, who holds each and until when. */
  | { kind: 'busy'; runId: string; claims: WorkItem[]; saved?: true }

/** A claim the tree's one budget refused (`DriverOptions.admit`), nothing written: the tree's own answer, never a caller's. */
export interface Refused {
  kind: 'refused'
  node: PlanNode
}

/** What the driver of one vault answers: a step for the caller, or a claim the tree's budget refused. */
export type DriverStep = Step | Refused

/** What a driver needs to know of the call it serves. */
export interface DriverOptions {
  query?: string | undefined
  llm?: CallLLM | undefined
  predicates?: Record<string, Predicate> | undefined
  /** The checks the runner defines, run for a note with `check:` after its work. */
  checks?: Record<string, CheckDefinition> | undefined
  /** The call's step budget, resolved by the run tree as it opens (`resolveBudget`) from `budget` and the run's records. */
  maxSteps: number
  /** The `maxSteps` the call gives, the budget to fall back on when the run records none, and whether the claim must record the budget (the call gave one that differs from the recorded one). */
  budget: { told?: number | undefined; fallback?: number | undefined; record?: boolean }
  fsync: boolean
  fresh: boolean
  signal?: AbortSignal | undefined
  onEvent?: ((event: RunEvent) => void) | undefined
  /** Set when an LLM-emitted plan fell back to a path graph. */
  degraded?: string | undefined
  /** The plan's source identity, recorded in a new trace's header. */
  source?: string | undefined
  /** Called before a visit is claimed (before anything is written for it); may throw to refuse. */
  beforeClaim?: ((node: PlanNode) => void) | undefined
  /**
   * The tree's one budget, asked before a visit of this vault is claimed:
   * `false` refuses it, and the driver answers `refused`, nothing written.
   */
  admit?: ((node: PlanNode) => boolean) | undefined
  /** What the whole run has spent of `maxSteps` (works, planner calls, visits other branches claimed), when this vault is one of a tree (a subplan shares its parent's budget). */
  spent?: (() => number) | undefined
  /**
   * The whole run's step numbers, when this vault is one of a tree: `take`
   * gives a visit of `node` claimed here the run's next number (none for a
   * note whose subplans number their own works), `last` is the highest given
   * so far. Alone, a vault numbers its own steps.
   */
  steps?: { take(node: PlanNode): number | undefined; last(): number } | undefined
  /** Whether a note of this vault runs subplans (when this vault is one of a tree): a claimed one is not a work the budget refuses, its subplans' claims are. */
  runsSubplans?: ((node: PlanNode) => boolean) | undefined
  /** This vault's folder from the top vault (`''` at the top), as the gate is told it. */
  folder?: string | undefined
  /** The agent the call claims for, and its lease (docs/stepping.md, several agents): its claims are recorded with its name and an end. */
  agent?: { name: string; leaseMs: number } | undefined
  /** Asked before a visit to work is claimed or handed out: `skip` passes it by (another agent holds it, or it was deferred). */
  gate?: ClaimGate | undefined
}

/** A claimed visit, as the driver remembers it within one call. */
export interface Claim {
  node: string
  visit: number
  step: number
  at: number
}

export type { SessionOptions } from '../../store/session-options.js'
