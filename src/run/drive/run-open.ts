import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { RunStateError } from '../../core/errors.js'
import { removeStaleTempFiles } from '../../vault/fs-atomic.js'
import { recoverOldVersions } from '../../vault/replace-note.js'
import { tracePaths, type Trace } from '../../store/trace.js'
import { archiveInterrupted, archiveTrace } from '../../store/trace-archive.js'
import { outputOfStepAmong } from '../../store/output-note.js'
import { clipLine } from '../core/messages.js'
import { OUTPUTS_FOLDER, TRACE_FOLDER } from '../../vault/run-folder.js'
import { runFolder } from '../../vault/run-file-path.js'
import type { VaultSession } from '../../store/vault-session.js'
import { type OutputReader, outputsOf } from '../read/run-outputs.js'

/**
 * Reads the run of a locked vault before it goes on: validates the plan,
 * finishes an archive a kill cut short, applies `fresh` (statuses reset,
 * the old run archived) and the query policy (a resumed run keeps its recorded query; another
 * one is refused unless `fresh`), and reads
 * the outputs the trace names, for the replay.
 *
 * @throws {@link PlanValidationError} when the plan is invalid
 * @throws {@link RunStateError} `query-mismatch` for another query than the recorded one; `note-busy` when a note left out because it kept changing leaves the plan invalid
 * @throws `TypeError` for a new run without a query
 */
export async function openRun(
  vault: string,
  session: VaultSession,
  options: { fresh: boolean; query?: string | undefined; fsync: boolean },
): Promise<{ trace: Trace | undefined; outputs: Map<string, string>; reader: OutputReader }> {
  session.validate()
  const listed = await removeStaleTempFilesIn(vault, session)
  let trace = await session.runFiles.readTrace(vault)
  // A `fresh` start killed while it archived the old run: finish the archive; the old run is over.
  if (trace && (await archiveInterrupted(vault, trace.header.run))) {
    await archiveTrace(vault, trace.header.run, options)
    trace = undefined
  }
  if (options.fresh) {
    for (const node of session.graph.nodes.values()) if (node.status !== 'pending') await session.setStatus(node.id, 'pending')
    if (trace) await archiveTrace(vault, trace.header.run, options)
    trace = undefined
  } else if (trace && options.query !== undefined && options.query !== trace.header.query) {
    throw new RunStateError(
      'query-mismatch',
      `The vault \`${vault}\` holds a run for the query ${JSON.stringify(clipLine(trace.header.query))}, ` +
        `not ${JSON.stringify(clipLine(options.query))}. Nothing was changed: leave the query out (or ` +
        `pass the same one) to go on with that run, or pass \`fresh: true\` to start over with the ` +
        `new query.`,
      { recorded: trace.header.query },
    )
  }
  if (!trace && options.query === undefined) throw new TypeError('Expected `query` for a new run (the vault holds no run to resume), got `undefined`')
  // A person may have deleted the outputs folder: the trace still says where the run is, and the next output needs it.
  if (trace) runFolder(vault, `${TRACE_FOLDER}/${OUTPUTS_FOLDER}`)
  // The outputs folder as listed under this call's lock: a step's output is found there without listing it again.
  const reader: OutputReader = {
    readOutput: (file, seen) => session.runFiles.readOutput(file, seen),
    outputOfStep: async (step) => outputOfStepAmong(listed, step),
  }
  return { trace, outputs: await outputsOf(vault, trace?.records ?? [], session.runFiles), reader }
}

/**
 * Temp files and old versions a killed write left behind (every call may follow a kill: runPlan's and the stepping calls alike).
 *
 * @returns the names in the outputs folder
 */
async function removeStaleTempFilesIn(vault: string, session: VaultSession): Promise<string[]> {
  const folders = new Set([vault, tracePaths(vault).folder, tracePaths(vault).outputs])
  for (const node of session.graph.nodes.values()) if (node.file?.includes('/')) folders.add(join(vault, node.file.slice(0, node.file.lastIndexOf('/'))))
  // And a person's save that a killed run caught going into a note's old version goes back into the note.
  // Each folder listed once, at once: a listing never blocks on what it lists, and a call does this every time.
  const listed = new Map<string, string[]>()
  await Promise.all(
    [...folders].map(async (folder) => {
      const names = namesIn(folder)
      listed.set(folder, names)
      await removeStaleTempFiles(folder, names)
      await recoverOldVersions(folder, names)
    }),
  )
  return listed.get(tracePaths(vault).outputs) ?? []
}

/** The names in a folder, none when it cannot be listed (gone, or not a folder). */
function namesIn(folder: string): string[] {
  try {
    return readdirSync(folder)
  } catch {
    return []
  }
}
