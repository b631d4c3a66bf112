import { closeSync, constants, fstatSync, fsyncSync, lstatSync, openSync, readSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { createHash } from 'node:crypto'
import { join } from 'node:path'
import { RunStateError } from '../core/errors.js'
import { parseFrontmatter } from '../vault/frontmatter.js'
import { syncFolder, writeAllSync, writeFileAtomic, writeFileAtomicSync, type WriteOptions } from '../vault/fs-atomic.js'
import { FINAL_FILE, OUTPUTS_FOLDER as OUTPUTS, TRACE_FILE, TRACE_FOLDER } from '../vault/run-folder.js'
import {
  CLAIM_KINDS,
  claimSchema,
  editSchema,
  recordSchemaV1,
  recordSchemaV2,
  TRACE_FORMAT,
  type ClaimRecord,
  type EditRecord,
  type HopRecord,
  type TraceRecord,
} from './trace-records.js'

export { TRACE_FORMAT, type ClaimRecord, type EditRecord, type HopRecord, type TraceRecord }
import { lazyModule } from '../core/lazy-module.js'
import { MARKER, markerText, renderRecord, safe } from './trace-render.js'
import { runFolder } from '../vault/run-file-path.js'
import { runFileToRead } from '../vault/path-gate.js'
import { stringifyFlat } from '../vault/plain-yaml.js'

/** The YAML writer, for the trace's header (once a run). */
const yaml = lazyModule<typeof import('yaml')>('yaml')

/** What the trace header records about the run. */
export interface TraceHeader {
  run: string
  format: number
  query: string
  started: string
  degraded?: string
  /** Where the plan came from: the real path of a template folder, or `sha256:<hash>` of an in-memory graph. */
  source?: string
  /** The run and step this run was forked from. */
  fork?: { run: string; step: number }
  /** The step budget the run was started with (a subplan's: the whole run's then): what a snapshot decides for when not told (traces before it have none). */
  maxSteps?: number
}

/** The trace, relative to its vault: `00_plan-trace/trace.md`. */
export const TRACE_PATH = `${TRACE_FOLDER}/${TRACE_FILE}`

/** Paths of the files a run writes, all under `00_plan-trace/`. */
export function tracePaths(vault: string) {
  const folder = join(vault, TRACE_FOLDER)
  return { folder, trace: join(folder, TRACE_FILE), outputs: join(folder, OUTPUTS), final: join(folder, FINAL_FILE) }
}

/** The output note of a step, relative to the trace folder: `outputs/0003-review.md`. */
export function outputFile(step: number, node: string): string {
  const flat = node.replace(/\//g, '__')
  const name = `${String(step).padStart(4, '0')}-${flat}`
  // File names are limited to 255 bytes: a long id is shortened and made unique again by a hash of it.
  if (Buffer.byteLength(name) + 3 <= NAME_BYTES) return `${OUTPUTS}/${name}.md`
  const hash = createHash('sha256').update(node).digest('hex').slice(0, 12)
  let short = flat
  while (Buffer.byteLength(`${String(step).padStart(4, '0')}-${short}-${hash}.md`) > NAME_BYTES) short = short.slice(0, -1)
  return `${OUTPUTS}/${String(step).padStart(4, '0')}-${short}-${hash}.md`
}

/** The longest file name most file systems allow, in bytes. */
const NAME_BYTES = 255

/** A run's trace as read: its header and every complete entry. */
export interface Trace {
  header: TraceHeader
  records: TraceRecord[]
  /** The claims recorded (format 3), oldest first: the step number each claimed visit was given. */
  claims?: ClaimRecord[]
  /** The edits of the plan recorded (format 3, `editPlan`), oldest first. */
  edits?: EditRecord[]
}

/**
 * Reads a run's trace: its header and every complete entry. An entry cut
 * short by a crash has no marker line and is ignored.
 *
 * @returns `undefined` when the vault has no trace.
 * @throws {@link RunStateError} when the trace was written by a newer, incompatible vaultplan; `trace-outside-vault` when a symlink stands on its way (as a run refuses it)
 */
export async function readTrace(vault: string): Promise<Trace | undefined> {
  const path = runFileToRead(vault, TRACE_PATH)
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch {
    return undefined
  }
  return parseTrace(vault, text).trace
}

/** A parsed trace with what parsing it again after an append needs. */
export interface ParsedTrace {
  text: string
  trace: Trace
  /** Lines of `text` parsed, for the line numbers of the next part's errors. */
  lines: number
}

/**
 * Parses the text of a vault's trace. With `earlier`, the parse of a text
 * this one only adds whole lines to (the trace was appended to), only the
 * added lines are parsed and the header is the earlier one.
 *
 * @throws {@link RunStateError} as `readTrace`
 */
export function parseTrace(vault: string, text: string, earlier?: ParsedTrace): ParsedTrace {
  // Compared whole, not by `startsWith` (which goes a character at a time: ten times slower on a long trace).
  if (earlier && earlier.text.endsWith('\n') && text.slice(0, earlier.text.length) === earlier.text)
    return parseAppended(vault, earlier, text.slice(earlier.text.length))
  const { data } = parseFrontmatter(text)
  const format = Number(data.format)
  if (!Number.isInteger(format) || data.vaultplan !== 'trace') {
    throw new RunStateError('trace-unreadable', `The trace \`${tracePaths(vault).trace}\` has no vaultplan header; move it away or run with \`fresh: true\``, {
      file: tracePaths(vault).trace,
    })
  }
  if (format > TRACE_FORMAT) {
    throw new RunStateError(
      'trace-too-new',
      `The trace in \`${vault}\` was written in format ${format} by a newer vaultplan; this version reads format ${TRACE_FORMAT}. Upgrade vaultplan to resume it.`,
      { file: tracePaths(vault).trace, format, supported: TRACE_FORMAT },
    )
  }
  const header: TraceHeader = { run: String(data.run), format, query: String(data.query ?? ''), started: String(data.started ?? '') }
  if (typeof data.degraded === 'string') header.degraded = data.degraded
  if (typeof data.source === 'string') header.source = data.source
  const fork = data.fork as { run?: unknown; step?: unknown } | undefined
  if (fork && typeof fork.run === 'string' && Number.isInteger(fork.step)) header.fork = { run: fork.run, step: Number(fork.step) }
  if (Number.isInteger(data.maxSteps) && Number(data.maxSteps) >= 1) header.maxSteps = Number(data.maxSteps)
  const { records, claims, edits, lines } = parseRecords(vault, text, format, 0)
  return { text, trace: { header, records, claims, edits }, lines }
}

/**
 * {@link parseTrace} of the text of `earlier` followed by `added`, for a
 * caller that knows the trace only grew by `added` (whole lines after a
 * text that ends in a line break): only `added` is parsed.
 *
 * @throws {@link RunStateError} as `readTrace`
 */
export function parseAppended(vault: string, earlier: ParsedTrace, added: string): ParsedTrace {
  const { records, claims, edits, lines } = parseRecords(vault, added, earlier.trace.header.format, earlier.lines)
  const { header } = earlier.trace
  return {
    text: earlier.text + added,
    trace: {
      header,
      records: [...earlier.trace.records, ...records],
      claims: [...(earlier.trace.claims ?? []), ...claims],
      edits: [...(earlier.trace.edits ?? []), ...edits],
    },
    lines: earlier.lines + lines,
  }
}

/** The records of a part of a trace that starts at a line start, `before` lines into the file. */
function parseRecords(
  vault: string,
  part: string,
  format: number,
  before: number,
): { records: TraceRecord[]; claims: ClaimRecord[]; edits: EditRecord[]; lines: number } {
  const schema = format >= 2 ? recordSchemaV2 : recordSchemaV1
  const records: TraceRecord[] = []
  const claims: ClaimRecord[] = []
  const edits: EditRecord[] = []
  const lines = part.split('\n')
  let lineNumber = before
  for (const line of lines) {
    lineNumber++
    const marked = CLAIM_KINDS.find((kind) => line.startsWith(`${MARKER}${kind} `))
    if (marked) {
      // A claim cut short, or one that does not fit, only loses its number: the visit takes the next when claimed again.
      const claim = claimSchema.safeParse(markerJson(line, marked))
      if (claim.success && claim.data.kind === marked) claims.push(claim.data)
      continue
    }
    if (line.startsWith(`${MARKER}edit `)) {
      // Flushed before the call returns: one cut short by a crash is written again by the repeated call.
      const edit = editSchema.safeParse(markerJson(line, 'edit'))
      if (edit.success) edits.push(edit.data)
      continue
    }
    if (!line.startsWith(`${MARKER}hop `)) continue
    // A marker line cut short by a crash has no end: that entry is torn and ignored.
    const whole = line.trimEnd()
    if (!whole.endsWith(' -->')) continue
    let json: unknown
    try {
      json = JSON.parse(whole.slice(MARKER.length + 4, -4))
    } catch {
      continue
    }
    const parsed = schema.safeParse(json)
    if (parsed.success) records.push(parsed.data as TraceRecord)
    else if (format >= 2) {
      throw new RunStateError(
        'trace-format',
        `The trace \`${tracePaths(vault).trace}\` line ${lineNumber} holds a record this vaultplan ` +
          `does not know (${parsed.error.issues[0]?.message ?? 'unknown fields'}); it was written by ` +
          `another version, or edited. Move the trace away, or run with \`fresh: true\`.`,
        { file: tracePaths(vault).trace, line: lineNumber },
      )
    }
  }
  // A part ending in a newline ends in an empty "line" that is not one of the file's.
  return { records, claims, edits, lines: lines.length - 1 }
}

/** The JSON of a whole marker line of `kind`, or `undefined` for one cut short. */
function markerJson(line: string, kind: string): unknown {
  const whole = line.trimEnd()
  if (!whole.endsWith(' -->')) return undefined
  try {
    return JSON.parse(whole.slice(MARKER.length + kind.length + 1, -4))
  } catch {
    return undefined
  }
}

/** Starts a trace: the header with the run id and format. */
export async function writeTraceHeader(vault: string, header: TraceHeader, options: WriteOptions): Promise<void> {
  const paths = tracePaths(vault)
  runFolder(vault, `${TRACE_FOLDER}/${OUTPUTS}`)
  // The new folders' entries must be as durable as the files the run puts in them.
  if (options.fsync ?? true) await Promise.all([syncFolder(vault), syncFolder(paths.folder)])
  const front = yaml().stringify({ vaultplan: 'trace', ...header })
  const text = `---\n${front}---\n# Plan trace\n\nRun \`${header.run}\`, started ${header.started}. One section per hop, appended as the run goes.\n`
  await writeFileAtomic(paths.trace, text, options)
}

/** Where a trace's appends are journaled first: `text` at byte `offset`; `record`, a hop's commit point, flushed there. */
export type TraceJournal = (offset: number, text: string, record: boolean) => void

/**
 * Appends entries to a run's trace: a readable section for people, ended by
 * a marker line the executor reads back. The file stays open for the run,
 * and each entry is flushed before the next hop begins: it is the hop's
 * commit point. With a journal, each entry goes to it first (flushed
 * there), and the trace is brought up to it after a crash.
 */
export class TraceAppender {
  private constructor(
    private readonly fd: number,
    private readonly fsync: boolean,
    private size: number,
    private readonly journal: TraceJournal | undefined,
  ) {}

  /**
   * Opens the run's trace for appending, with the synchronous calls: only a
   * regular file is opened (looked at first, opened without blocking and
   * without following a symlink), so a FIFO put in its place cannot stall
   * the run.
   *
   * @throws {@link RunStateError} `trace-unreadable` when the trace is not a regular file
   */
  static async open(vault: string, options: WriteOptions & { journal?: TraceJournal }): Promise<TraceAppender> {
    const path = tracePaths(vault).trace
    const refuse = () =>
      new RunStateError('trace-unreadable', `The trace \`${path}\` is not a regular file; move it away or run with \`fresh: true\``, { file: path })
    if (!lstatSync(path).isFile()) throw refuse()
    const fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | constants.O_NOFOLLOW | constants.O_NONBLOCK)
    if (!fstatSync(fd).isFile()) {
      closeSync(fd)
      throw refuse()
    }
    const appender = new TraceAppender(fd, options.fsync ?? true, fstatSync(fd).size, options.journal)
    const closing = closingOfTornEntry(path, fd)
    if (closing) appender.write(closing, false)
    return appender
  }

  /** Appends one entry: the hop's commit point, flushed when `fsync` is on (in the journal, when there is one). */
  async append(record: TraceRecord, rationale: string): Promise<void> {
    this.write(renderRecord(record, rationale), true)
  }

  /**
   * Appends a claim on a marker line of its own, not flushed: a claim lost
   * to a power cut only costs its number (the visit takes the next one).
   */
  appendClaim(claim: ClaimRecord): void {
    this.write(`\n${MARKER}${claim.kind} ${markerText(claim)} -->\n`, false)
  }

  /** Appends an edit of the plan: a short section for people and its marker line, flushed. */
  appendEdit(edit: EditRecord): void {
    const notes = (ids: string[]) => ids.map((id) => `[[${safe(id)}]]`).join(', ')
    const lines = ['', `## Plan edited${edit.agent === undefined ? '' : ` by ${safe(edit.agent)}`}`, '']
    if (edit.written.length > 0) lines.push(`- Written: ${notes(edit.written)}`)
    if (edit.removed.length > 0) lines.push(`- Removed (into \`.trash/\`): ${edit.removed.map((id) => `\`${safe(id)}\``).join(', ')}`)
    if (edit.copies !== undefined) lines.push(`- The notes as they were: \`${TRACE_FOLDER}/edits/${edit.copies}/\``)
    lines.push('', `${MARKER}edit ${markerText(edit)} -->`, '')
    this.write(lines.join('\n'), true)
  }

  /** Journals the text at the trace's end (a `record` flushed there), then appends it to the trace. */
  private write(text: string, record: boolean): void {
    this.journal?.(this.size, text, record)
    const data = Buffer.from(text, 'utf8')
    writeAllSync(this.fd, data)
    if (record && this.fsync && !this.journal) fsyncSync(this.fd)
    this.size += data.length
  }

  /** Closes the trace file. */
  async close(): Promise<void> {
    closeSync(this.fd)
  }
}

/** How much of a trace's end is looked at for an entry a crash cut short. */
const TAIL_BYTES = 64 * 1024

/**
 * Ends what a crash cut short at the trace's end before anything is
 * appended: a marker line cut before its `-->` (an open HTML comment, which
 * would hide the entries after it from every reader of the note) is closed
 * by a line `-->` of its own, which no record reads as the end of the cut one.
 */
function closingOfTornEntry(path: string, fd: number): string | undefined {
  const size = fstatSync(fd).size
  if (size === 0) return undefined
  const reader = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
  const buffer = Buffer.alloc(Math.min(size, TAIL_BYTES))
  try {
    readSync(reader, buffer, 0, buffer.length, size - buffer.length)
  } finally {
    closeSync(reader)
  }
  const tail = buffer.toString('utf8')
  // A cut line is ended by the next entry's leading line break; an open comment needs its end.
  return tail.lastIndexOf('<!--') > tail.lastIndexOf('-->') ? `${tail.endsWith('\n') ? '' : '\n'}-->\n` : undefined
}

/** Writes the final answer note, naming its note as an output note does: `id` for the reader, `node` as a wikilink for Obsidian's graph. */
export async function writeFinal(vault: string, node: string, output: string, options: WriteOptions): Promise<void> {
  writeFileAtomicSync(tracePaths(vault).final, `---\n${stringifyFlat({ vaultplan: 'final', id: node, node: `[[${node}]]` })}---\n${output}`, options)
}
