import { join } from 'node:path'
import { subplanTree } from '../../plan/subplan-tree.js'
import { readOutput } from '../../store/output-note.js'
import { outputFile } from '../../store/trace.js'
import { visitKey } from '../core/run-core.js'
import { readRecords } from './observe-run.js'

/**
 * Whether the visit `key` names was completed with `output` already, in any
 * vault of the run's tree (a subplan's last note included): its output note
 * holds that output whole, with its checks' report after it for a note with
 * checks. Read on the way to a `stale-step` refusal only: a completion
 * repeated after its answer got lost is answered, not refused.
 */
export async function completedWith(vault: string, key: string, output: string): Promise<boolean> {
  const records = await readRecords(vault)
  for (const { folder, vault: plan } of subplanTree(records)) {
    const trace = plan.trace
    if (!trace) continue
    for (const record of trace.records) {
      if (record.kind === 'stop' || visitKey(trace.header.run, record.node, record.visit) !== key) continue
      const saved = await readOutput(join(vault, folder), record.kind === 'hop' ? record.output : outputFile(record.step, record.node))
      if (saved?.whole && sameOutput(saved.output, output)) return true
    }
  }
  return false
}

/** Whether a saved output is `given` as the worker handed it in: the same text, or that text with its checks' report below. */
function sameOutput(saved: string, given: string): boolean {
  return saved === given || saved.startsWith(`${given.trimEnd()}\n\n## Checks\n`)
}
