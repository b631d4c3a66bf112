import { mkdir, open, readdir, readFile, rename, type FileHandle } from 'node:fs/promises'
import { join } from 'node:path'
import { stringify } from 'yaml'
import { z } from 'zod'
import { RunStateError } from './errors.js'
import { parseFrontmatter } from './frontmatter.js'
import { syncFolder, writeFileAtomic, type WriteOptions } from './fs-atomic.js'
import { TRACE_FOLDER } from './markdown-io.js'
import type { StepOutput } from './types.js'

/** The trace format this version writes and reads. */
export const TRACE_FORMAT = 1
const TRACE_FILE = 'trace.md'
const OUTPUTS = 'outputs'
const MARKER = '<!-- vaultplan:'

const edgeSchema = z.object({ label: z.string(), target: z.string(), conditional: z.boolean() })
const recordSchema = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('hop'),
    step: z.number().int().min(1),
    node: z.string(),
    visit: z.number().int().min(1),
    edge: edgeSchema.nullable(),
    decidedBy: z.enum(['predicate', 'llm', 'human', 'unconditional', 'rework', 'terminal']),
    next: z.string().nullable(),
    output: z.string(),
    /** What a person wrote under `## Feedback` with a human decision. */
    feedback: z.string().optional(),
  }),
  z.object({
    kind: z.literal('stop'),
    step: z.number().int().min(0),
    node: z.string(),
    visit: z.number().int().min(1),
    budget: z.enum(['max_visits', 'maxSteps']),
    reason: z.string(),
  }),
  z.object({ kind: z.literal('waiting'), step: z.number().int().min(1), node: z.string(), visit: z.number().int().min(1) }),
])

/** One entry of the trace: a hop, a budget stop or a wait for a person. */
export type TraceRecord = z.infer<typeof recordSchema>
/** A hop entry of the trace: a node worked and the edge it took. */
export type HopRecord = Extract<TraceRecord, { kind: 'hop' }>

/** What the trace header records about the run. */
export interface TraceHeader {
  run: string
  format: number
  query: string
  started: string
  degraded?: string
}

/** Paths of the files a run writes, all under `00_plan-trace/`. */
export function tracePaths(vault: string) {
  const folder = join(vault, TRACE_FOLDER)
  return { folder, trace: join(folder, TRACE_FILE), outputs: join(folder, OUTPUTS), final: join(folder, 'final.md') }
}

/** The output note of a step, relative to the trace folder: `outputs/0003-review.md`. */
export function outputFile(step: number, node: string): string {
  return `${OUTPUTS}/${String(step).padStart(4, '0')}-${node.replace(/\//g, '__')}.md`
}

/**
 * Reads a run's trace: its header and every complete entry. An entry cut
 * short by a crash has no marker line and is ignored.
 *
 * @returns `undefined` when the vault has no trace.
 * @throws {RunStateError} when the trace was written by a newer, incompatible vaultplan.
 */
export async function readTrace(vault: string): Promise<{ header: TraceHeader; records: TraceRecord[] } | undefined> {
  let text: string
  try {
    text = await readFile(tracePaths(vault).trace, 'utf8')
  } catch {
    return undefined
  }
  const data = parseFrontmatter(text).data
  const format = Number(data.format)
  if (!Number.isInteger(format) || data.vaultplan !== 'trace') {
    throw new RunStateError('trace-unreadable', `The trace \`${tracePaths(vault).trace}\` has no vaultplan header; move it away or run with \`fresh: true\``)
  }
  if (format > TRACE_FORMAT) {
    throw new RunStateError(
      'trace-too-new',
      `The trace in \`${vault}\` was written in format ${format} by a newer vaultplan; this version reads format ${TRACE_FORMAT}. Upgrade vaultplan to resume it.`,
    )
  }
  const header: TraceHeader = { run: String(data.run), format, query: String(data.query ?? ''), started: String(data.started ?? '') }
  if (typeof data.degraded === 'string') header.degraded = data.degraded
  const records: TraceRecord[] = []
  for (const line of text.split('\n')) {
    if (!line.startsWith(`${MARKER}hop `)) continue
    const json = line.slice(MARKER.length + 4).replace(/\s*-->\s*$/, '')
    try {
      const parsed = recordSchema.safeParse(JSON.parse(json))
      if (parsed.success) records.push(parsed.data)
    } catch {
      // an entry torn by a crash
    }
  }
  return { header, records }
}

/** Starts a trace: the header with the run id and format. */
export async function writeTraceHeader(vault: string, header: TraceHeader, options: WriteOptions): Promise<void> {
  const paths = tracePaths(vault)
  await mkdir(paths.outputs, { recursive: true })
  // The new folders' entries must be as durable as the files the run puts in them.
  if (options.fsync ?? true) await Promise.all([syncFolder(vault), syncFolder(paths.folder)])
  const front = stringify({ vaultplan: 'trace', ...header })
  const text = `---\n${front}---\n# Plan trace\n\nRun \`${header.run}\`, started ${header.started}. One section per hop, appended as the run goes.\n`
  await writeFileAtomic(paths.trace, text, options)
}

/**
 * Appends entries to a run's trace: a readable section for people, ended by
 * a marker line the executor reads back. The file stays open for the run,
 * and each entry is flushed before the next hop begins: it is the hop's
 * commit point.
 */
export class TraceAppender {
  private constructor(
    private readonly handle: FileHandle,
    private readonly fsync: boolean,
  ) {}

  /** Opens the run's trace for appending. */
  static async open(vault: string, options: WriteOptions): Promise<TraceAppender> {
    return new TraceAppender(await open(tracePaths(vault).trace, 'a'), options.fsync ?? true)
  }

  /** Appends one entry, flushed when `fsync` is on. */
  async append(record: TraceRecord, rationale: string): Promise<void> {
    await this.handle.appendFile(renderRecord(record, rationale), 'utf8')
    if (this.fsync) await this.handle.sync()
  }

  /** Closes the trace file. */
  async close(): Promise<void> {
    await this.handle.close()
  }
}

function renderRecord(record: TraceRecord, rationale: string): string {
  const link = `[[${safe(record.node)}]]`
  const lines: string[] = ['']
  if (record.kind === 'hop') {
    lines.push(`## Step ${record.step} · ${link} · visit ${record.visit}`, '')
    lines.push(`- Edge: ${record.edge ? `${safe(record.edge.label) || 'next'} → [[${safe(record.edge.target)}]]` : record.decidedBy === 'terminal' ? 'none (terminal)' : 'none (work again)'}`)
    lines.push(`- Decided by: ${record.decidedBy}`)
    lines.push(`- Output: [[${TRACE_FOLDER}/${record.output.replace(/\.md$/, '')}|${record.output.replace(/^outputs\/|\.md$/g, '')}]]`)
  } else if (record.kind === 'stop') {
    lines.push(`## Stopped before step ${record.step + 1} · ${link} · visit ${record.visit}`, '', `- Budget: ${record.budget}`)
  } else {
    lines.push(`## Waiting after step ${record.step} · ${link} · visit ${record.visit}`, '', '- A person decides: tick one box under `## Next` in the note, then run the vault again.')
  }
  if (rationale.trim() !== '') {
    // Every line of the model's text is quoted, so nothing in it can pass for a marker line.
    lines.push('', ...rationale.trimEnd().split(/\r?\n/).map((line) => `> ${line}`))
  }
  const json = JSON.stringify(record).replace(/</g, '\\u003c').replace(/>/g, '\\u003e')
  lines.push('', `${MARKER}hop ${json} -->`, '')
  return lines.join('\n')
}

function safe(text: string): string {
  return text.replace(/[\r\n]+/g, ' ')
}

/** Saves a step's output as a note; its frontmatter says which visit it belongs to. */
export async function writeOutput(vault: string, file: string, meta: { run: string; step: number; node: string; visit: number }, output: string, options: WriteOptions): Promise<void> {
  const front = stringify({ vaultplan: 'output', ...meta })
  await writeFileAtomic(join(tracePaths(vault).folder, file), `---\n${front}---\n${output}`, { mode: 0o644, ...options })
}

/** Reads a saved output note back. */
export async function readOutput(vault: string, file: string): Promise<(StepOutput & { step: number; run: string }) | undefined> {
  let text: string
  try {
    text = await readFile(join(tracePaths(vault).folder, file), 'utf8')
  } catch {
    return undefined
  }
  const { data, split } = parseFrontmatter(text)
  if (data.vaultplan !== 'output') return undefined
  return { node: String(data.node), visit: Number(data.visit), step: Number(data.step), run: String(data.run), output: text.slice(split.contentStart) }
}

/** Finds the output saved for a step, if any (an output saved before a crash cut its hop short). */
export async function findOutputOfStep(vault: string, step: number): Promise<string | undefined> {
  const prefix = `${String(step).padStart(4, '0')}-`
  const names = await readdir(tracePaths(vault).outputs).catch(() => [] as string[])
  const name = names.find((entry) => entry.startsWith(prefix) && entry.endsWith('.md'))
  return name === undefined ? undefined : `${OUTPUTS}/${name}`
}

/** Moves the trace, outputs and final answer of a finished run to `00_plan-trace/archive/<run>/`. */
export async function archiveTrace(vault: string, run: string): Promise<void> {
  const paths = tracePaths(vault)
  const target = join(paths.folder, 'archive', run.replace(/[^\w.-]+/g, '_'))
  await mkdir(target, { recursive: true })
  for (const name of [TRACE_FILE, OUTPUTS, 'final.md']) {
    await rename(join(paths.folder, name), join(target, name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error
    })
  }
}

/** Writes the final answer note. */
export async function writeFinal(vault: string, node: string, output: string, options: WriteOptions): Promise<void> {
  await writeFileAtomic(tracePaths(vault).final, `---\nvaultplan: final\nnode: ${JSON.stringify(node)}\n---\n${output}`, options)
}

