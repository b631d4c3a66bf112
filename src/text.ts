import type { StepOutput } from './types.js'

/** The `count` most recent outputs, newest first: what a prompt shows of a run's history. */
export function recentOutputs(outputs: StepOutput[], count: number): StepOutput[] {
  return outputs.slice(-count).reverse()
}

/** `text` cut to `limit` characters, saying how much was left out. */
export function clip(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}\n[... ${text.length - limit} more characters]`
}
