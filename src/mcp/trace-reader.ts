import { RunFiles } from '../store/run-files.js'
import type { Trace } from '../store/trace.js'

/** How many vaults' traces the server keeps parsed. */
const KEPT_VAULTS = 16

/** The run files of the vaults the server's calls read traces of lately, the most recent last. */
const kept = new Map<string, RunFiles>()

/**
 * The trace of the run in `folder`, as `readTrace` reads it, for what a
 * call answers with (the step budget a run was given, the output notes of
 * its visits): `undefined` for none, or one that cannot be read. The trace
 * is read whole and compared every time, never trusted, and parsed again
 * only where it changed (a trace that only grew, from where the last parse
 * ended; see `RunFiles`): a hop reads it twice, and a long run's trace is
 * not parsed whole again at each call.
 */
export async function traceOf(folder: string): Promise<Trace | undefined> {
  const files = kept.get(folder) ?? new RunFiles(folder)
  kept.delete(folder)
  kept.set(folder, files)
  if (kept.size > KEPT_VAULTS) kept.delete(kept.keys().next().value!)
  return files.readTrace().catch(() => undefined)
}
