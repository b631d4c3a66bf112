import type { CallLLM, PlanNode, Predicate, StepOutput } from './types.js'

/** Options of the stepping calls (`nextStep`, `completeStep`). */
export interface StepOptions {
  /** What the run is for; required for a vault with no run yet, the recorded one is used on resume. */
  query?: string
  /** The model behind the judge when `completeStep` gets no `choice`. */
  llm?: CallLLM
  /** Code that decides condition labels; always asked before the caller's choice. */
  predicates?: Record<string, Predicate>
  /** @default 50 */
  maxSteps?: number
  /** @default true */
  fsync?: boolean
  signal?: AbortSignal
  /** `nextStep` only: start over (statuses reset, the old trace archived). */
  fresh?: boolean
}

/** A budget that ran out. */
export interface StopInfo {
  budget: 'max_visits' | 'maxSteps'
  node: string
  visit: number
  /** The loop the node sits in, as ids; empty when it is in none. */
  loop: string[]
}

/** A note waiting for a person's decision. */
export interface WaitingNote {
  node: string
  /** The note, relative to the vault the call was made on. */
  file: string
  /** The labels a person may choose (`next` for an unconditional edge). */
  choices: string[]
}

/** What a plan asks of the caller now. */
export type Step =
  | {
      kind: 'work'
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
    }
  | { kind: 'waiting'; runId: string; waiting: WaitingNote[]; reason: string }
  | { kind: 'completed'; runId: string; node: string; output: string }
  | { kind: 'stopped'; runId: string; stop: StopInfo; reason: string }
