import { lstatSync } from 'node:fs'
import { open, readFile, realpath, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { z } from 'zod'
import { RunStateError } from '../core/errors.js'
import { parseFrontmatter } from '../vault/frontmatter.js'
import { readRegularFileSync, writeFileAtomic } from '../vault/fs-atomic.js'
import { runFilePath } from '../vault/run-file-path.js'
import { heldByThisProcess, lockVault } from '../vault/lock.js'
import { LEDGER_FILE, TRACE_FILE, TRACE_FOLDER } from '../vault/run-folder.js'
import { LEDGER_KINDS, type Assumption, type LedgerEntry, type LedgerKind, type LedgerView, type StandingChange } from '../core/ledger-types.js'

export { LEDGER_KINDS, type Assumption, type LedgerEntry, type LedgerKind, type LedgerView, type StandingChange }

/** The ledger format this version writes and reads. */
export const LEDGER_FORMAT = 1
const MARKER = '<!-- vaultplan:ledger '
const END = ' -->'

/** What `recordEntry` records. */
export interface NewLedgerEntry {
  kind: LedgerKind
  text: string
  reason?: string
  /** The note whose work records it. */
  node?: string
  step?: number
}

/** Options of the ledger writes. */
export interface LedgerWriteOptions {
  /**
   * Flush the entry to the disk before resolving.
   *
   * @default true
   */
  fsync?: boolean
}

/** Options of `invalidate` and `revalidate`: where the change was made. */
export interface StandingOptions extends LedgerWriteOptions {
  node?: string
  step?: number
}

const place = { at: z.string(), node: z.string().optional(), step: z.number().int().min(0).optional(), run: z.string().optional() }
const recordSchema = z.discriminatedUnion('op', [
  z.object({
    op: z.literal('record'),
    kind: z.enum(['fact', 'assumption', 'decision']),
    id: z.string(),
    text: z.string(),
    reason: z.string().optional(),
    ...place,
  }),
  z.object({ op: z.literal('invalidate'), id: z.string(), reason: z.string(), ...place }),
  z.object({ op: z.literal('revalidate'), id: z.string(), reason: z.string().optional(), ...place }),
])
type LedgerRecord = z.infer<typeof recordSchema>

/**
 * Records a fact, an assumption or a decision in the vault's ledger
 * (`00_plan-trace/ledger.md`, appended) and resolves to its new id. From
 * inside a run of this process (a worker's tool) the write goes through
 * that run's lock; otherwise the vault's lock is taken for the write.
 *
 * @throws `TypeError` on a bad argument.
 * @throws {@link RunStateError} (`vault-locked`) when another process runs the vault; (`ledger-unreadable`, `ledger-too-new`) for a ledger this version cannot extend.
 */
export async function recordEntry(vault: string, entry: NewLedgerEntry, options: LedgerWriteOptions = {}): Promise<string> {
  checkVault(vault)
  if (typeof entry !== 'object' || entry === null)
    throw new TypeError(`Expected \`entry\` to be an object { kind, text, reason?, node?, step? }, got \`${String(entry)}\``)
  if (!Object.hasOwn(LEDGER_KINDS, entry.kind)) {
    throw new TypeError(`Expected \`kind\` to be one of \`fact\`, \`assumption\`, \`decision\`, got \`${String(entry.kind)}\``)
  }
  checkText('text', entry.text)
  const where = checkPlace(entry)
  if (entry.reason !== undefined) checkText('reason', entry.reason)
  return withLedger(vault, options, async (ledger) => {
    const id = `${LEDGER_KINDS[entry.kind]}${ledger.next[entry.kind]}`
    const record: LedgerRecord = {
      op: 'record',
      kind: entry.kind,
      id,
      text: entry.text,
      ...(entry.reason === undefined ? {} : { reason: entry.reason }),
      ...where,
      ...(await runOf(vault)),
      at: now(),
    }
    await ledger.append(record)
    return id
  })
}

/**
 * Marks an assumption invalid, with the reason; the judge no longer sees it.
 *
 * @throws `TypeError` when `id` is no assumption of the ledger, or `reason` is empty.
 * @throws {@link RunStateError} as `recordEntry` does.
 */
export async function invalidate(vault: string, id: string, reason: string, options: StandingOptions = {}): Promise<void> {
  checkText('reason', reason)
  await changeStanding(vault, id, { op: 'invalidate', reason }, options)
}

/**
 * Makes an invalidated assumption valid again.
 *
 * @throws `TypeError` when `id` is no assumption of the ledger.
 * @throws {@link RunStateError} as `recordEntry` does.
 */
export async function revalidate(vault: string, id: string, reason?: string, options: StandingOptions = {}): Promise<void> {
  if (reason !== undefined) checkText('reason', reason)
  await changeStanding(vault, id, reason === undefined ? { op: 'revalidate' } : { op: 'revalidate', reason }, options)
}

/**
 * Replays the vault's ledger: facts, assumptions (each with `valid`) and
 * decisions, in the order recorded. An entry cut short by a crash is
 * ignored; a vault without a ledger has an empty one.
 *
 * @throws {@link RunStateError} (`ledger-unreadable`) for a ledger that is not one or holds an entry this version does not know; (`ledger-too-new`) for a newer format.
 */
export async function readLedger(vault: string): Promise<LedgerView> {
  checkVault(vault)
  const text = await readLedgerText(join(vault, LEDGER_FILE))
  return text === undefined ? emptyView() : replayLedger(text, vault).view
}

async function changeStanding(
  vault: string,
  id: string,
  change: { op: 'invalidate'; reason: string } | { op: 'revalidate'; reason?: string },
  options: StandingOptions,
): Promise<void> {
  checkVault(vault)
  if (typeof id !== 'string' || !/^A[1-9]\d*$/.test(id)) {
    throw new TypeError(`Expected \`id\` to name an assumption (\`A1\`, \`A2\`, ...), got \`${String(id)}\`; only assumptions can be invalidated`)
  }
  const where = checkPlace(options)
  await withLedger(vault, options, async (ledger) => {
    if (!ledger.view.assumptions.some((entry) => entry.id === id)) {
      const known = ledger.view.assumptions.map((entry) => entry.id)
      throw new TypeError(
        `Expected \`id\` to be an assumption of the ledger of \`${vault}\`, got \`${id}\`; it has ${known.length === 0 ? 'none' : known.slice(0, 20).join(', ')}`,
      )
    }
    await ledger.append({ ...change, id, ...where, ...(await runOf(vault)), at: now() })
  })
}

interface OpenLedger {
  view: LedgerView
  /** The number of the next id of each kind (a bigint: a torn heading may carry any number of digits). */
  next: Record<LedgerKind, bigint>
  append(record: LedgerRecord): Promise<void>
}

/** Writers of one vault, in this process, one after the other: two never take the same id. */
const queues = new Map<string, Promise<unknown>>()

async function withLedger<T>(vault: string, options: LedgerWriteOptions, write: (ledger: OpenLedger) => Promise<T>): Promise<T> {
  const info = await stat(vault).catch(() => undefined)
  if (!info?.isDirectory()) throw new TypeError(`Expected \`vault\` to be a vault folder, got \`${vault}\``)
  const key = await realpath(vault).catch(() => resolve(vault))
  const before = queues.get(key) ?? Promise.resolve()
  const turn = before.then(() => locked(vault, options, write))
  const tail = turn.catch(() => undefined)
  queues.set(key, tail)
  try {
    return await turn
  } finally {
    if (queues.get(key) === tail) queues.delete(key)
  }
}

async function locked<T>(vault: string, options: LedgerWriteOptions, write: (ledger: OpenLedger) => Promise<T>): Promise<T> {
  // A run of this process holds the lock already: its workers' entries belong to it.
  const lock = (await heldByThisProcess(vault)) ? undefined : await lockVault(vault)
  try {
    const path = runFilePath(vault, LEDGER_FILE)
    const text = await readLedgerText(path)
    const { view, next } = text === undefined ? { view: emptyView(), next: firstIds() } : replayLedger(text, vault)
    const fsync = options.fsync ?? true
    let created = text !== undefined
    return await write({
      view,
      next,
      async append(record) {
        lock?.check()
        if (!created) {
          await writeFileAtomic(path, header() + renderRecord(record), { fsync })
          created = true
          return
        }
        const handle = await open(path, 'a')
        try {
          await handle.appendFile(renderRecord(record), 'utf8')
          if (fsync) await handle.sync()
        } finally {
          await handle.close()
        }
      },
    })
  } finally {
    await lock?.release()
  }
}

/** A ledger up to this size is read with the synchronous calls (a real one is a few KB). */
const MAX_SYNC_READ = 8 * 1024 * 1024

async function readLedgerText(path: string): Promise<string | undefined> {
  // Read at every hop, for the worker and the judge: a missing ledger or a regular one is a system
  // call or four, not round trips through the thread pool. Anything else is read the careful way.
  if (lstatSync(path, { throwIfNoEntry: false }) === undefined) return undefined
  const read = readRegularFileSync(path, MAX_SYNC_READ)
  if (read) return read.text
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
}

function header(): string {
  return `---\nvaultplan: ledger\nformat: ${LEDGER_FORMAT}\n---\n# Ledger\n\nFacts, assumptions and decisions this plan's runs rest on, appended as they are recorded. Ids are never reused.\n`
}

function firstIds(): Record<LedgerKind, bigint> {
  return { fact: 1n, assumption: 1n, decision: 1n }
}

/** The next id's number once `seen` (digits) is taken: exact at any length, where a float would round. */
function after(next: bigint, seen: string): bigint {
  const taken = BigInt(seen) + 1n
  return taken > next ? taken : next
}

const HEADING = /^## ([FAD])([1-9]\d*) · (fact|assumption|decision)$/

/** Replays a ledger's text; `next` counts the headings of torn entries too, so an id seen once is never given again. */
export function replayLedger(text: string, vault: string): { view: LedgerView; next: Record<LedgerKind, bigint> } {
  const data = parseFrontmatter(text).data
  const format = Number(data.format)
  if (data.vaultplan !== 'ledger' || !Number.isInteger(format)) {
    throw new RunStateError('ledger-unreadable', `The ledger \`${join(vault, LEDGER_FILE)}\` has no vaultplan header; move it away to start a new one`, {
      file: join(vault, LEDGER_FILE),
    })
  }
  if (format > LEDGER_FORMAT) {
    throw new RunStateError(
      'ledger-too-new',
      `The ledger of \`${vault}\` was written in format ${format} by a newer vaultplan; this version reads format ${LEDGER_FORMAT}. Upgrade vaultplan to use it.`,
      { file: join(vault, LEDGER_FILE), format, supported: LEDGER_FORMAT },
    )
  }
  const view = emptyView()
  const next = firstIds()
  const byId = new Map<string, Assumption>()
  const seen = new Set<string>()
  const lines = text.split('\n')
  lines.forEach((raw, index) => {
    // An editor may have turned the line ends into CRLF; the entries stay readable.
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    const heading = HEADING.exec(line)
    if (heading) {
      const kind = heading[3] as LedgerKind
      next[kind] = after(next[kind], heading[2]!)
      return
    }
    if (!line.startsWith(MARKER) || !line.endsWith(END)) return
    let json: unknown
    try {
      json = JSON.parse(line.slice(MARKER.length, -END.length))
    } catch {
      return // an entry torn by a crash
    }
    const bad = (why: string) =>
      new RunStateError(
        'ledger-unreadable',
        `Line ${index + 1} of the ledger \`${join(vault, LEDGER_FILE)}\` ${why}; this version cannot read it. Move the ledger away or fix that line.`,
        { file: join(vault, LEDGER_FILE), line: index + 1 },
      )
    const parsed = recordSchema.safeParse(json)
    if (!parsed.success)
      throw bad(`is no entry this version knows (${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'entry'}: ${issue.message}`).join('; ')})`)
    const record = parsed.data
    if (record.op === 'record') {
      const match = /^([FAD])([1-9]\d*)$/.exec(record.id)
      if (!match || match[1] !== LEDGER_KINDS[record.kind]) throw bad(`gives the ${record.kind} the id \`${record.id}\``)
      if (seen.has(record.id)) throw bad(`records \`${record.id}\` a second time`)
      seen.add(record.id)
      next[record.kind] = after(next[record.kind], match[2]!)
      const entry: LedgerEntry = { id: record.id, text: record.text, ...placeOf(record), at: record.at }
      if (record.reason !== undefined) entry.reason = record.reason
      if (record.run !== undefined) entry.run = record.run
      if (record.kind === 'fact') view.facts.push(entry)
      else if (record.kind === 'decision') view.decisions.push(entry)
      else {
        const assumption: Assumption = { ...entry, valid: true, changes: [] }
        view.assumptions.push(assumption)
        byId.set(record.id, assumption)
      }
      return
    }
    const assumption = byId.get(record.id)
    if (!assumption) throw bad(`changes \`${record.id}\`, which is no assumption recorded before it`)
    const change: StandingChange = { valid: record.op === 'revalidate', ...placeOf(record), at: record.at }
    if (record.reason !== undefined) change.reason = record.reason
    assumption.valid = change.valid
    assumption.changes.push(change)
  })
  return { view, next }
}

function placeOf(record: { node?: string | undefined; step?: number | undefined }): { node?: string; step?: number } {
  const out: { node?: string; step?: number } = {}
  if (record.node !== undefined) out.node = record.node
  if (record.step !== undefined) out.step = record.step
  return out
}

function renderRecord(record: LedgerRecord): string {
  const lines = ['']
  if (record.op === 'record') {
    lines.push(`## ${record.id} · ${record.kind}`, '', ...quote(record.text))
  } else {
    lines.push(`## ${record.id} · ${record.op === 'invalidate' ? 'invalidated' : 'valid again'}`)
  }
  if (record.reason !== undefined) lines.push('', 'Because:', ...quote(record.reason))
  const where = [
    record.node === undefined ? '' : `[[${oneLine(record.node)}]]`,
    record.step === undefined ? '' : `step ${record.step}`,
    record.run === undefined ? '' : `run \`${oneLine(record.run).replace(/`/g, "'")}\``,
    record.at,
  ]
  lines.push('', `- ${record.op === 'record' ? 'Recorded' : 'Changed'}: ${where.filter(Boolean).join(', ')}`)
  // `<` and `>` escaped: nothing in the JSON can end the comment early.
  const json = JSON.stringify(record).replace(/</g, '\\u003c').replace(/>/g, '\\u003e')
  lines.push('', `${MARKER}${json}${END}`, '')
  return lines.join('\n')
}

/** Every line of a person's or a model's text quoted, so none can pass for a heading or a marker line. */
function quote(text: string): string[] {
  return text.split(/\r\n|\r|\n/).map((line) => `> ${line}`)
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ')
}

/** The run of the vault's trace now, read from its header. */
async function runOf(vault: string): Promise<{ run?: string }> {
  let head = ''
  try {
    const handle = await open(join(vault, TRACE_FOLDER, TRACE_FILE), 'r')
    try {
      const buffer = Buffer.alloc(4096)
      const { bytesRead } = await handle.read(buffer, 0, buffer.length, 0)
      head = buffer.subarray(0, bytesRead).toString('utf8')
    } finally {
      await handle.close()
    }
  } catch {
    return {}
  }
  const data = parseFrontmatter(head).data
  return data.vaultplan === 'trace' && typeof data.run === 'string' ? { run: data.run } : {}
}

function emptyView(): LedgerView {
  return { facts: [], assumptions: [], decisions: [] }
}

function now(): string {
  return new Date().toISOString()
}

function checkVault(vault: unknown): void {
  if (typeof vault !== 'string' || vault === '') throw new TypeError(`Expected \`vault\` to be the path of a vault folder, got \`${String(vault)}\``)
}

function checkText(name: string, value: unknown): void {
  if (typeof value !== 'string' || value.trim() === '')
    throw new TypeError(`Expected \`${name}\` to be a non-empty string, got \`${typeof value === 'string' ? value : String(value)}\``)
}

function checkPlace(where: { node?: unknown; step?: unknown }): { node?: string; step?: number } {
  const out: { node?: string; step?: number } = {}
  if (where.node !== undefined) {
    if (typeof where.node !== 'string' || where.node === '') throw new TypeError(`Expected \`node\` to be a note id, got \`${String(where.node)}\``)
    out.node = where.node
  }
  if (where.step !== undefined) {
    if (typeof where.step !== 'number' || !Number.isInteger(where.step) || where.step < 0)
      throw new TypeError(`Expected \`step\` to be an integer from 0 up, got \`${String(where.step)}\``)
    out.step = where.step
  }
  return out
}
