import type { CallLLM, StepInput } from 'vaultplan'

/** One call of a scripted judge. */
export interface JudgeCall {
  prompt: string
  role: string
  system: string | undefined
}

/**
 * A judge (the `llm` option) that answers from a script and records every
 * call. `reply` gets the prompt and the 0-based call number.
 */
export function scriptedJudge(reply: (prompt: string, call: number) => string | Promise<string>): CallLLM & { calls: JudgeCall[] } {
  const calls: JudgeCall[] = []
  const llm = async (prompt: string, options: { role: string; system?: string }) => {
    calls.push({ prompt, role: options.role, system: options.system })
    return reply(prompt, calls.length - 1)
  }
  return Object.assign(llm, { calls })
}

/** A judge that must not be called. */
export function noJudge(): CallLLM & { calls: JudgeCall[] } {
  return scriptedJudge(() => {
    throw new Error('the judge was called')
  })
}

/** What a scripted worker saw in one call. */
export interface WorkCall {
  node: string
  visit: number
  step: number
  key: string
  outputs: { node: string; visit: number; output: string }[]
  body: string
}

/**
 * A worker (the `work` option) that records each call and returns
 * `<node> v<visit>` unless `act` returns something else. `act` runs inside
 * the worker, so it can look at the vault or edit it as a person would.
 */
export function scriptedWorker(act?: (step: StepInput, call: number) => unknown): ((step: StepInput) => Promise<string>) & { calls: WorkCall[] } {
  const calls: WorkCall[] = []
  const work = async (step: StepInput) => {
    calls.push({ node: step.node.id, visit: step.visit, step: step.step, key: step.key, outputs: step.outputs, body: step.node.body })
    const result = await act?.(step, calls.length - 1)
    return typeof result === 'string' ? result : `${step.node.id} v${step.visit}`
  }
  return Object.assign(work, { calls })
}

/** The grid answer for a prompt: `1: YES` for the conditions listed in `yes`, `NO` for the others. */
export function grid(count: number, yes: number[]): string {
  return Array.from({ length: count }, (_, index) => `${index + 1}: ${yes.includes(index + 1) ? 'YES' : 'NO'}`).join('\n')
}

/** The numbered conditions the judge was asked about. */
export function conditionsIn(prompt: string): string[] {
  const block = prompt.split('Conditions:\n')[1] ?? ''
  return block
    .split('\n\n')[0]!
    .split('\n')
    .map((line) => line.trim())
    .filter(Boolean)
}

/** This visit's output as the judge prompt shows it (the first data block after "The output of this visit"). */
export function currentOutput(prompt: string): string {
  const match = /The output of this visit \(visit \d+\):\n<<<(DATA-\w+)\n([\s\S]*?)\n\1>>>/.exec(prompt)
  if (!match) throw new Error(`no current output in the prompt:\n${prompt}`)
  return match[2]!
}

/**
 * A judge for the draft/review plan: `approved` (condition 1) holds when
 * this visit's output is one of `approve`, else `needs revision` (condition 2).
 */
export function reviewJudge(...approve: string[]): CallLLM & { calls: JudgeCall[] } {
  return scriptedJudge((prompt) => (approve.includes(currentOutput(prompt)) ? '1: YES\n2: NO\nThe draft is ready.' : '1: NO\n2: YES\nIt needs work.'))
}
