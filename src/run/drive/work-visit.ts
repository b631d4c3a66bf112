import { sleep } from '../../core/abort.js'
import { StepError } from '../../core/errors.js'
import type { PlanNode, StepInput } from '../../core/types.js'
import { readLedger } from '../../memory/ledger.js'
import { ModelConfigError } from '../../models/llm-client.js'
import type { Step } from '../core/run-options.js'
import { failureEdge } from '../../models/transitions.js'
import type { WorkFailure } from './tree-vaults.js'

/** Where a visit is worked: the top vault (the ledger's), the subplan folder from it, the signal of the call. */
export interface VisitPlace {
  /** The top vault: a run's ledger is one record, subplans included. */
  vault: string
  /** The subplan folder, relative to the top vault; absent or `''` at the top. */
  plan?: string | undefined
  signal?: AbortSignal | undefined
}

/**
 * Works a claimed visit with a worker, as every runner hands it over
 * (`runPlan`, the queue's hop): the input names the step, its subplan folder
 * (`plan`), the top vault and its ledger; a failure is a `StepError` naming
 * the note by its path from the top vault. An abort rejects with its reason,
 * and a missing model configuration is passed on as it is (no step failed:
 * the variables are to be set).
 *
 * @throws {@link StepError} when the worker throws or returns no string
 */
export async function workVisit(step: Extract<Step, { kind: 'work' }>, work: (input: StepInput) => Promise<string>, place: VisitPlace): Promise<string> {
  const input: StepInput = {
    node: step.node,
    query: step.query,
    visit: step.visit,
    step: step.step,
    outputs: step.outputs,
    key: step.key,
    vault: place.vault,
    ledger: await readLedger(place.vault),
  }
  if (place.plan) input.plan = place.plan
  if (place.signal) input.signal = place.signal
  const id = place.plan ? `${place.plan}/${step.node.id}` : step.node.id
  let output: string
  try {
    output = await work(input)
  } catch (error) {
    if (place.signal?.aborted) throw place.signal.reason
    // No model configured is not this step's failure: say what to set.
    if (error instanceof ModelConfigError) throw error
    throw new StepError(id, step.visit, error)
  }
  if (typeof output !== 'string') throw new StepError(id, step.visit, new TypeError(`Expected the worker to return a string, got \`${typeof output}\``))
  return output
}

/** The wait before retry `attempt` (1 for the first retry): 1 s, doubling, at most 1 minute. */
export function retryDelayMs(attempt: number): number {
  return Math.min(1000 * 2 ** (attempt - 1), 60_000)
}

/**
 * What follows a worker that threw on a visit: `retry` (after `delayMs`)
 * while the note's `retries:` allow another attempt, else `failed` (the
 * note's `failed` edge is taken, `failure` to be recorded), else `reject`
 * (the `StepError` stands). Every runner decides with this: `runPlan` in
 * its loop, the queue between the attempts of a hop's job.
 *
 * @param attempt - the attempt that failed, 1 for the first
 */
export function afterWorkerFailure(
  node: PlanNode,
  attempt: number,
  error: StepError,
): { kind: 'retry'; delayMs: number } | { kind: 'failed'; failure: WorkFailure } | { kind: 'reject' } {
  if (attempt <= (node.retries ?? 0)) return { kind: 'retry', delayMs: retryDelayMs(attempt) }
  if (!failureEdge(node)) return { kind: 'reject' }
  const why = error.cause instanceof Error ? error.cause.message : String(error.cause)
  const tries = attempt === 1 ? 'once' : `${attempt} times`
  return { kind: 'failed', failure: { output: `The worker failed (tried ${tries}): ${why}`, failure: why } }
}

/**
 * Works a claimed visit like {@link workVisit}, retrying a worker that
 * throws as often as the note's `retries:` say, with backoff (1 s,
 * doubling, at most 1 minute), under the same key. When the last attempt
 * fails too, a note with a `failed` edge takes it (its failure is returned,
 * to be recorded); any other note's visit rejects.
 *
 * @throws {@link StepError} when the last attempt fails and the note has no `failed` edge to take
 */
export async function workWithRetries(
  step: Extract<Step, { kind: 'work' }>,
  work: (input: StepInput) => Promise<string>,
  place: VisitPlace,
): Promise<string | WorkFailure> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await workVisit(step, work, place)
    } catch (error) {
      if (!(error instanceof StepError)) throw error
      const next = afterWorkerFailure(step.node, attempt, error)
      if (next.kind === 'reject') throw error
      if (next.kind === 'failed') return next.failure
      await sleep(next.delayMs, place.signal)
    }
  }
}
