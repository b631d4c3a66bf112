import type { StepOutput } from './types.js'

/** The `count` most recent outputs, newest first: what a prompt shows of a run's history. */
export function recentOutputs(outputs: StepOutput[], count: number): StepOutput[] {
  return outputs.slice(-count).reverse()
}

/** `text` cut to `limit` characters, saying how much was left out. */
export function clip(text: string, limit: number): string {
  return text.length <= limit ? text : `${text.slice(0, limit)}\n[... ${text.length - limit} more characters]`
}

/** How many line breaks `text` has before offset `end` (all of them by default). */
export function countLines(text: string, end = text.length): number {
  let lines = 0
  for (let index = text.indexOf('\n'); index !== -1 && index < end; index = text.indexOf('\n', index + 1)) lines++
  return lines
}
