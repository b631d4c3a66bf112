import { createHash } from 'node:crypto'
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { z } from 'zod'
import { writeFileAtomic } from '../vault/fs-atomic.js'
import { runFilePath } from '../vault/run-file-path.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'

/*
 * `decide` along one of several boxes a person ticked by hand unticks the
 * others. It writes only the note and takes no lock, so it cannot append to
 * a trace a runner may hold open; it leaves what it unticked here instead,
 * in the trace folder of the plan folder that holds the note, before it
 * writes the note. The run that follows the tick puts it on the decision's
 * hop record (`unticked`), so the trace says which boxes were unticked.
 */

/** Where the records are kept, one file per note: `00_plan-trace/decisions/<hash of the id>.json`. */
const FOLDER = `${TRACE_FOLDER}/decisions`

const recordSchema = z.strictObject({
  /** The run whose wait it decided. */
  run: z.string(),
  /** The note's id in its plan folder. */
  node: z.string(),
  /** The visit that waited for the decision. */
  visit: z.number().int().min(1),
  /** The edge decided, by its label (`next` for the unconditional edge). */
  edge: z.string(),
  /** The ticked boxes it unticked, by their labels. */
  unticked: z.array(z.string()).min(1),
  /** When `decide` wrote it, ISO 8601. */
  at: z.string(),
})

/** What a decision unticked in a waiting note. */
export type UntickedBoxes = z.infer<typeof recordSchema>

function fileOf(node: string): string {
  return `${FOLDER}/${createHash('sha256').update(node).digest('hex').slice(0, 16)}.json`
}

/**
 * Records what a decision is about to untick (before the note is written, so
 * a run that follows the tick at once finds it).
 *
 * @param folder - the plan folder that holds the note (a subplan's own folder for a nested note)
 */
export async function writeUntickedBoxes(folder: string, record: UntickedBoxes): Promise<void> {
  await writeFileAtomic(runFilePath(folder, fileOf(record.node)), `${JSON.stringify(record)}\n`)
}

/**
 * The boxes a decision unticked, when the one recorded for `node` was made in
 * this run at this `visit` along `edge`; `undefined` when none was (nothing
 * unticked, an earlier visit's or run's, or a file that does not read).
 */
export async function readUntickedBoxes(folder: string, decided: { run: string; node: string; visit: number; edge: string }): Promise<string[] | undefined> {
  const { run, node, visit, edge } = decided
  let json: unknown
  try {
    json = JSON.parse(await readFile(join(folder, fileOf(node)), 'utf8'))
  } catch {
    return undefined
  }
  const parsed = recordSchema.safeParse(json)
  if (!parsed.success) return undefined
  const record = parsed.data
  // Another run's or visit's, or a decision a person changed by hand afterwards (the run follows another box): not this one's.
  return record.run === run && record.node === node && record.visit === visit && record.edge === edge ? record.unticked : undefined
}

/** Forgets the record of `node` once its decision is in the trace. */
export async function forgetUntickedBoxes(folder: string, node: string): Promise<void> {
  await rm(join(folder, fileOf(node)), { force: true })
}
