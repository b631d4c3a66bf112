import type { PlanNode } from '../../core/types.js'
import type { SavedOutput } from '../../store/output-note.js'
import { checkPassed, checksReport } from '../core/checks.js'
import type { DriverOptions } from '../core/run-options.js'
import type { Verdict } from './hop-writer.js'
import { runChecks } from './run-checks.js'

/*
 * What decides a worked visit before any judge: its worker's failure, or its
 * checks, run once per visit (after a crash, the verdict saved with the
 * output is the one judged).
 */

/** The verdict saved with an output (a crash after the save): judged from it, the checks never run twice for one visit. */
export function verdictSaved(saved: SavedOutput): Verdict | undefined {
  if (saved.outcome === undefined) return undefined
  return saved.outcome === 'error' ? { outcome: 'error', error: saved.output } : { outcome: saved.outcome }
}

/**
 * The verdict of a worked visit: its worker's failure, or its checks (run
 * now), and the output they make. While the checks' commands run, the turn
 * is theirs (`turn.leave`), so what the hops journaled is written meanwhile.
 */
export async function verdictOf(
  node: PlanNode,
  result: { output: string; failure?: string | undefined },
  options: Pick<DriverOptions, 'checks' | 'signal'>,
  turn: { leave(): void; enter(): Promise<void> },
): Promise<Verdict & { output: string }> {
  if (result.failure !== undefined) return { outcome: 'error', error: result.failure, output: result.output }
  if (!node.check) return { output: result.output }
  turn.leave()
  const checks = await runChecks(node.check, options.checks ?? {}, options.signal).finally(() => turn.enter())
  const outcome = checks.every(checkPassed) ? 'passed' : 'failed'
  return { outcome, checks, output: `${result.output.trimEnd()}\n\n${checksReport(checks)}\n` }
}
