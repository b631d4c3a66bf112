/**
 * A judge that answers from a script, for the tests of a plan, without a
 * model. It reads the judge's prompt and replies as a model must: one
 * `N: YES` or `N: NO` line per condition (docs/models.md, "The judge's
 * contract").
 *
 * @module vaultplan/testing
 */
import type { CallLLM } from '../core/types.js'
// `judgePrompt` in transitions.ts is the one place that writes the prompt read here.
import { JUDGE_SYSTEM } from './transitions.js'

/** What the judge is asked after a visit, read from its prompt. */
export interface JudgeQuestion {
  /** The conditions to answer, in the note's file order: the labels of its conditional edges that no check, predicate or choice decided. */
  conditions: string[]
  /** The step's title, as the prompt shows it (the note's `# ` heading, else its id). */
  step: string
  /** The visit whose output is judged. */
  visit: number
  /** That visit's output. */
  output: string
  /** The run's query. */
  query: string
  /** The role the call is made for: the note's `role:`, else `transition`. */
  role: string
  /** The prompt and the system message as a model gets them. */
  prompt: string
  system: string
}

/** The conditions that hold: a label, a list of labels, or none (`undefined`, `null`, `[]`): every other condition is answered NO. */
export type JudgeAnswer = string | readonly string[] | null | undefined

/** Options of {@link scriptedJudge}. */
export interface ScriptedJudgeOptions {
  /**
   * What answers the calls that are not the judge's (the built-in worker's,
   * the planner's), when the test has any.
   *
   * @default none: such a call throws, naming its role
   */
  otherwise?: CallLLM
}

/**
 * A judge for tests: an `llm` for `runPlan`, `nextStep` or `chooseEdge`
 * that answers each judgment with the conditions `decide` says hold, as
 * the reply a model gives (`1: YES`, `2: NO`, one line per condition),
 * and records every question it was asked in `questions`.
 *
 * ```ts
 * import { runPlan } from 'vaultplan'
 * import { scriptedJudge } from 'vaultplan/testing'
 *
 * const llm = scriptedJudge(({ visit }) => (visit === 1 ? 'needs revision' : 'approved'))
 * await runPlan('plan', { query: 'Announce it', work: async () => 'a draft', llm })
 * llm.questions.map((question) => question.conditions) // [['approved', 'needs revision'], ...]
 * ```
 *
 * @param decide - gets the question (conditions, step, visit, output, query, role) and returns the labels that hold (compared ignoring case and surrounding space)
 * @throws `TypeError` (from the call) when `decide` names a label that is not one of the question's conditions; `Error` for a call that is not a judgment and no `otherwise`
 */
export function scriptedJudge(
  decide: (question: JudgeQuestion) => JudgeAnswer | Promise<JudgeAnswer>,
  options: ScriptedJudgeOptions = {},
): CallLLM & { questions: JudgeQuestion[] } {
  const questions: JudgeQuestion[] = []
  const llm: CallLLM = async (prompt, call) => {
    const system = call.system ?? ''
    if (!system.startsWith(JUDGE_SYSTEM)) {
      if (options.otherwise) return options.otherwise(prompt, call)
      throw new Error(
        `scriptedJudge answers the judge's calls only, and this call is for the role \`${call.role}\` (the worker's or the planner's): give runPlan a \`work\` function, or scriptedJudge an \`otherwise\``,
      )
    }
    const question = readQuestion(prompt, system, call.role)
    questions.push(question)
    const answer = await decide(question)
    const holds = (answer === null || answer === undefined ? [] : typeof answer === 'string' ? [answer] : [...answer]).map(normalized)
    const known = question.conditions.map(normalized)
    const unknown = holds.filter((label) => !known.includes(label))
    if (unknown.length > 0)
      throw new TypeError(
        `Expected the labels that hold to be among the conditions ${question.conditions.map((label) => `\`${label}\``).join(', ')}, got \`${unknown.join('`, `')}\``,
      )
    const rows = known.map((label, index) => `${index + 1}: ${holds.includes(label) ? 'YES' : 'NO'}`)
    return `${rows.join('\n')}\n(scripted judge)`
  }
  return Object.assign(llm, { questions })
}

function normalized(label: string): string {
  return label.trim().toLowerCase()
}

/** The question of a judge's prompt: its fenced parts (between the markers its system message names) and its numbered conditions. */
function readQuestion(prompt: string, system: string, role: string): JudgeQuestion {
  const marker = /<<<(DATA-[0-9a-f]+) /.exec(system)?.[1] ?? ''
  const fenced = (title: RegExp) => new RegExp(`${title.source}\\n<<<${marker}\\n([\\s\\S]*?)\\n${marker}>>>`).exec(prompt)
  const current = fenced(/The output of this visit \(visit (\d+)\):/)
  // The last such heading: the conditions come after every fenced part, and an output may hold the words too.
  const listed = prompt.slice(prompt.lastIndexOf('\n\nConditions:\n') + '\n\nConditions:\n'.length).split('\n\n')[0] ?? ''
  const conditions = listed.split('\n').flatMap((line) => /^\d+\. (.*)$/.exec(line)?.[1] ?? [])
  return {
    conditions,
    step: /^# (.*)/.exec(fenced(/The step:/)?.[1] ?? '')?.[1] ?? '',
    visit: Number(current?.[1] ?? 0),
    output: current?.[2] ?? '',
    query: fenced(/The query of the run:/)?.[1] ?? '',
    role,
    prompt,
    system,
  }
}
