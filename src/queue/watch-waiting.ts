import { stampsOf } from './advance-hop.js'
import { resumeInQueue } from './enqueue-run.js'
import type { RunQueue } from './run-queue.js'
import type { WaitingStamp } from './runs-table.js'

/**
 * One look at the runs waiting for a person: a run whose waiting note
 * changed on disk since it started waiting (a person ticked a box in their
 * notes app, or `decide` did) is queued again. Its next hop then follows the
 * tick, or records the wait again when the edit was no decision. Several
 * workers may look at once: the run's row is changed in the same
 * transaction as its job is sent, so one job results. Resolves to the
 * vaults queued again.
 */
export async function watchWaiting(queue: RunQueue): Promise<string[]> {
  const { rows } = await queue.query<{ vault: string; waiting: WaitingStamp[] | null }>(
    `SELECT vault, waiting FROM ${queue.runs} WHERE queue = $1 AND state = 'waiting'`,
    [queue.name],
  )
  const resumed: string[] = []
  for (const row of rows) {
    const recorded = row.waiting ?? []
    const now = await stampsOf(
      row.vault,
      recorded.map((note) => note.file),
    )
    if (now.every((note, index) => note.stamp === recorded[index]?.stamp)) continue
    if (await resumeInQueue(queue, row.vault, ['waiting'])) resumed.push(row.vault)
  }
  return resumed
}
