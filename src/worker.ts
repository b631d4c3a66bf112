import type { CallLLM, StepInput } from './types.js'

/** How much of the earlier outputs the built-in worker passes on. */
const RECENT_OUTPUTS = 3
const OUTPUT_CHARS = 8_000

/**
 * The built-in worker: the node's body is the instruction, with the run's
 * query and the freshest outputs as context, sent to the node's `role:`
 * model (or the `action` role).
 */
export function createWorker(llm: CallLLM): (step: StepInput) => Promise<string> {
  return async (step) => {
    const recent = step.outputs.slice(-RECENT_OUTPUTS).reverse()
    const parts = [
      `You are carrying out one step of a plan. The overall task:\n${step.query}`,
      `This step: ${step.node.title}\n\n${step.node.body}`,
      ...recent.map((entry) => `Output of an earlier step (${entry.node}, visit ${entry.visit}):\n${clip(entry.output)}`),
      'Do this step now and reply with its result only.',
    ]
    const options: { role: string; system: string; signal?: AbortSignal } = {
      role: step.node.role ?? 'action',
      system: 'You carry out one step of a plan at a time and reply with the result of that step.',
    }
    if (step.signal) options.signal = step.signal
    return llm(parts.join('\n\n'), options)
  }
}

function clip(text: string): string {
  return text.length <= OUTPUT_CHARS ? text : `${text.slice(0, OUTPUT_CHARS)}\n[... ${text.length - OUTPUT_CHARS} more characters]`
}
