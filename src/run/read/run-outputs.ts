import type { RunFiles } from '../../store/run-files.js'
import type { GateMemo } from '../../vault/path-gate.js'
import { outputFile, type ClaimRecord, type TraceRecord } from '../../store/trace.js'
import { findOutputOfStep, parseOutput, readOutput, type SavedOutput } from '../../store/output-note.js'
import { TRACE_FOLDER } from '../../vault/run-folder.js'

/*
 * Reading a run's output notes: those the trace names, and the one a crash
 * saved for the step after the last recorded.
 */

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
