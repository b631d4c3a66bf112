import { createHash } from 'node:crypto'
import { readdirSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { StepOutput } from '../core/types.js'
import { parseFrontmatter } from '../vault/frontmatter.js'
import { stringifyFlat } from '../vault/plain-yaml.js'
import { writeFileAtomicSync, type FileStamp } from '../vault/fs-atomic.js'
import { runFolder } from '../vault/run-file-path.js'
import { confineSync, runFileToRead, type GateMemo } from '../vault/path-gate.js'
import { OUTPUTS_FOLDER as OUTPUTS, TRACE_FOLDER } from '../vault/run-folder.js'
import { tracePaths } from './trace.js'

/**
 * Writes a step's output note (`file` relative to the trace folder) from
 * the journal, which holds its bytes: it is not flushed on its own (a power
 * cut's torn note is written again from the journal when the vault opens).
 */
export function writeOutputNote(root: string, file: string, text: string): void {
  const path = join(tracePaths(root).folder, file)
  const write = () => writeFileAtomicSync(path, text, { mode: 0o644, fsync: false })
  try {
    write()
  } catch (error) {
    // The outputs folder deleted while the run went on: made again (checked as every run folder is), then written.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    runFolder(root, `${TRACE_FOLDER}/${dirname(file)}`)
    write()
  }
}

/**
 * The text of a step's output note; its frontmatter says which visit it
 * belongs to, and its `digest` tells a whole note from one a crash cut short.
 */
export function renderOutput(meta: OutputMeta, output: string): string {
  // `node` links the output to its note in Obsidian's graph; `id` is what the executor reads back.
  const { node, choice, ...rest } = meta
  const front = stringifyFlat({
    vaultplan: 'output',
    ...rest,
    id: node,
    node: `[[${node}]]`,
    ...(choice !== undefined && { choice }),
    digest: digestOf(output),
  })
  return `---\n${front}---\n${output}`
}

/** The digest an output note carries of its body: 16 hex digits of its SHA-256. */
function digestOf(output: string): string {
  return createHash('sha256').update(output).digest('hex').slice(0, 16)
}

/** Which visit an output note belongs to; `choice` is the caller's choice saved with it (stepping). */
export interface OutputMeta {
  run: string
  step: number
  node: string
  visit: number
  choice?: string
  /** A subplan note's output: the works its subplans did, for the record judged from it after a crash. */
  works?: number
  /** What decided the visit before any judge, saved with its output so a crash never runs a check twice for it: its checks (`passed`, `failed`), or its worker's failure (`error`). */
  outcome?: VisitOutcome
}

/** What decided a visit before any judge: its checks passed or failed, or its worker failed after its retries. */
export type VisitOutcome = 'passed' | 'failed' | 'error'
const OUTCOMES: readonly string[] = ['passed', 'failed', 'error'] satisfies VisitOutcome[]

/**
 * An output note as read back. `whole` is false when the body is not the
 * one its digest names: cut short by a crash (or edited by a person), so
 * not the worker's output of a step whose hop was never recorded. A note
 * with no digest (an earlier release's) counts as whole.
 */
export type SavedOutput = StepOutput & { step: number; run: string; choice?: string; works?: number; outcome?: VisitOutcome; whole: boolean }

/** Reads a saved output note back (`file` as a trace names it); `undefined` for none, or one {@link outputPath} refuses. */
export async function readOutput(vault: string, file: string, seen?: GateMemo): Promise<SavedOutput | undefined> {
  const path = outputPath(vault, file, seen)
  if (path === undefined) return undefined
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    return undefined
  }
  return parseOutput(text)
}

/**
 * Where an output note a trace names is read: the trace is a file anyone may
 * edit, so its `output` passes the path gate, inside the vault's trace
 * folder. `undefined` for a path the gate refuses, or no trace folder.
 */
export function outputPath(vault: string, file: string, seen?: GateMemo): string | undefined {
  return outputTarget(vault, file, seen)?.path
}

/**
 * {@link outputPath}, with the stamp the gate took of the note when it is a
 * regular file. A trace folder that is a symlink (to another run's) gives
 * no output: looked at once in a pass of `seen`.
 */
export function outputTarget(vault: string, file: string, seen?: GateMemo): { path: string; stamp?: FileStamp } | undefined {
  try {
    if (!seen?.has('')) runFileToRead(vault, TRACE_FOLDER)
    return confineSync(tracePaths(vault).folder, file, 'an output of the trace', seen)
  } catch {
    return undefined
  }
}

/** The output note of this text, or `undefined` when it is not one. */
export function parseOutput(text: string): SavedOutput | undefined {
  const { data, split } = parseFrontmatter(text)
  if (data.vaultplan !== 'output') return undefined
  const output = text.slice(split.contentStart)
  const saved: SavedOutput = {
    node: String(data.id ?? data.node),
    visit: Number(data.visit),
    step: Number(data.step),
    run: String(data.run),
    output,
    whole: typeof data.digest !== 'string' || data.digest === digestOf(output),
  }
  if (typeof data.choice === 'string') saved.choice = data.choice
  if (Number.isSafeInteger(data.works)) saved.works = data.works as number
  if (typeof data.outcome === 'string' && OUTCOMES.includes(data.outcome)) saved.outcome = data.outcome as VisitOutcome
  return saved
}

/** Finds the output saved for a step, if any (an output saved before a crash cut its hop short). */
export async function findOutputOfStep(vault: string, step: number): Promise<string | undefined> {
  let names: string[] = []
  try {
    // Listed at once: a listing never blocks on what it lists, and a run looks here at every call.
    names = readdirSync(tracePaths(vault).outputs)
  } catch {
    // No outputs folder: no output.
  }
  return outputOfStepAmong(names, step)
}

/** {@link findOutputOfStep} among the names of the outputs folder as just listed. */
export function outputOfStepAmong(names: readonly string[], step: number): string | undefined {
  const prefix = `${String(step).padStart(4, '0')}-`
  const name = names.find((entry) => entry.startsWith(prefix) && entry.endsWith('.md'))
  return name === undefined ? undefined : `${OUTPUTS}/${name}`
}
