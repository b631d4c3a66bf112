/*
 * The words of a reason that name a knob, for the reader of each surface:
 * the library's reasons (and the trace) name `maxSteps`, the CLI's
 * `--max-steps`. No imports: the CLI loads it before any parser.
 */

/** Who reads a reason: a program calling the library passes `maxSteps`, a person at the command line `--max-steps`. */
export type ReasonReader = 'library' | 'cli'

const STEP_BUDGET_KNOB: Record<ReasonReader, string> = { library: 'maxSteps', cli: '--max-steps' }

/** The step budget's knob as `reader` passes it (`maxSteps`, `--max-steps`). */
export function stepBudgetKnob(reader: ReasonReader): string {
  return STEP_BUDGET_KNOB[reader]
}

/** The words of a step-budget stop that name the knob, for one reader: one wording, the knob as that reader passes it. */
export function stepBudgetWords(reader: ReasonReader): { spent: string; advice: string } {
  const knob = stepBudgetKnob(reader)
  return { spent: `${knob} budget`, advice: `Pass a larger \`${knob}\` and run the vault again to go on.` }
}

/**
 * A reason as the library words it (and the trace records it), told to
 * another reader: a step-budget stop names the knob that reader passes.
 */
export function reasonFor(reader: ReasonReader, reason: string): string {
  const library = stepBudgetWords('library')
  const words = stepBudgetWords(reader)
  return reason.replace(` ${library.spent} of `, ` ${words.spent} of `).replace(library.advice, words.advice)
}
