import { readdirSync } from 'node:fs'
import { join } from 'node:path'
import { RunStateError } from '../core/errors.js'
import { removeStaleTempFiles } from '../vault/fs-atomic.js'
import { recoverOldVersions } from '../vault/replace-note.js'
import type { RunFiles } from '../store/run-files.js'
import type { GateMemo } from '../vault/path-gate.js'
import { outputFile, tracePaths, type ClaimRecord, type Trace, type TraceRecord } from '../store/trace.js'
import { archiveInterrupted, archiveTrace } from '../store/trace-archive.js'
import { findOutputOfStep, outputOfStepAmong, parseOutput, readOutput, type SavedOutput } from '../store/output-note.js'
import { clipLine } from './run-words.js'
import { OUTPUTS_FOLDER, TRACE_FOLDER } from '../vault/run-folder.js'
import { runFolder } from '../vault/run-file-path.js'
import type { VaultSession } from '../store/vault-session.js'

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

/** Reads the output notes of a vault's run: `RunFiles`, or what `readOutput` reads; `outputOfStep` finds a step's (else its folder is listed). */
export type OutputReader = Pick<RunFiles, 'readOutput'> & { outputOfStep?: (step: number) => Promise<string | undefined> }

/** The texts of the output notes a trace's records name, by file, for the replay. */
export async function outputsOf(vault: string, records: readonly TraceRecord[], files: OutputReader = readerOf(vault)): Promise<Map<string, string>> {
  const outputs = new Map<string, string>()
  // One pass of the path gate: the trace and outputs folders are looked at once, not once an output.
  const seen: GateMemo = new Map()
  for (const record of records) {
    const file = record.kind === 'hop' ? record.output : record.kind === 'waiting' ? outputFile(record.step, record.node) : undefined
    if (file === undefined || outputs.has(file)) continue
    const saved = await files.readOutput(file, seen)
    if (saved) outputs.set(file, saved.output)
  }
  return outputs
}

/**
 * The output saved whole for the visit after the last recorded step, if a
 * crash left one (its hop not recorded): saved with the number its claim
 * gave it (the whole run's, inside a subplan), else the step after `steps`.
 */
export async function pendingOutput(
  vault: string,
  steps: number,
  files: OutputReader = readerOf(vault),
  claims: readonly ClaimRecord[] = [],
): Promise<(SavedOutput & { file: string }) | undefined> {
  const claimed = claims.at(-1)?.step
  const step = claimed !== undefined && claimed > steps ? claimed : steps + 1
  const file = await (files.outputOfStep ?? ((each: number) => findOutputOfStep(vault, each)))(step)
  const saved = file === undefined ? undefined : await files.readOutput(file)
  // A note cut short by a crash is not the worker's output: the step works again and writes it anew.
  return file !== undefined && saved?.whole ? { ...saved, file } : undefined
}

function readerOf(vault: string): OutputReader {
  return { readOutput: (file, seen) => readOutput(vault, file, seen) }
}

/**
 * The output notes of a vault's run as a reader without its lock sees
 * them: the ones its journal holds and the files may lack yet (a live run's
 * last hops, written within milliseconds) from the journal, the others from
 * the files. `journaled` is `journaledWrites(vault).files`, read before any
 * output through this reader: an output applied since is in the files.
 * Only outputs of run `run` are taken from it (another run's belong to an
 * archived run).
 */
export function journaledOutputs(vault: string, journaled: ReadonlyMap<string, string>, run: string | undefined): OutputReader {
  const held = new Map<string, SavedOutput>()
  for (const [path, text] of journaled) {
    const saved = path.startsWith(`${TRACE_FOLDER}/`) ? parseOutput(text) : undefined
    if (saved && saved.run === run) held.set(path.slice(TRACE_FOLDER.length + 1), saved)
  }
  const files = readerOf(vault)
  return {
    readOutput: async (file) => {
      const saved = held.get(file)
      return saved ? { ...saved } : files.readOutput(file)
    },
    outputOfStep: async (step) => [...held].find(([, saved]) => saved.step === step)?.[0] ?? findOutputOfStep(vault, step),
  }
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
