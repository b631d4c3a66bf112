import { observeRun, type ObserveOptions } from './observe-run.js'
import type { RunSnapshot, WorkItem } from '../core/run-snapshot.js'

/**
 * Where a plan vault's run stands, as `vaultplan status` shows it: the run's
 * snapshot (its one phase, the notes with their visits, the frontier, the
 * waits, the stop or the result, the latest hops, what comes next) with the
 * claims agents hold shown beside the phase.
 */
export interface RunStatus extends RunSnapshot {
  /** The visits agents hold now: who, with which key, until when (the frontier's items that have a claim). */
  claims: WorkItem[]
}

/**
 * Reads where the run of a plan vault stands: a view of its snapshot
 * (`observeRun`), the same decision `runPlan` and `nextStep` resume by,
 * with the claims agents hold beside the phase; it computes nothing the
 * snapshot does not. Reads only; never changes the vault.
 *
 * @param options.hops - how many of the latest hops to report (default 5)
 * @param options.maxSteps - the step budget a run would have (default: the one the run last ran with, else 50)
 * @throws {@link VaultPathError} when `vault` is not a folder
 * @throws {@link RunStateError} when the trace is unreadable or written by a newer vaultplan
 */
export async function readRunStatus(vault: string, options: ObserveOptions = {}): Promise<RunStatus> {
  const snapshot = await observeRun(vault, options)
  return { ...snapshot, claims: snapshot.frontier.filter((item) => item.claim !== undefined) }
}
