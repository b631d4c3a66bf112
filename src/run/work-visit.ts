import { StepError } from '../core/errors.js'
import type { StepInput } from '../core/types.js'
import { readLedger } from '../memory/ledger.js'
import { ModelConfigError } from '../models/llm-client.js'
import type { Step } from './run-options.js'

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
