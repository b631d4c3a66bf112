import type { WriteOptions } from '../vault/fs-atomic.js'
import { open, readFile, realpath } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { parseFrontmatter } from '../vault/frontmatter.js'
import { readRegularFileSync, writeFileAtomic } from '../vault/fs-atomic.js'
import { runFilePath } from '../vault/run-file-path.js'
import { runFileToRead } from '../vault/path-gate.js'
import { heldByThisProcess, lockVault } from '../vault/lock.js'
import { LEDGER_FILE, TRACE_FILE, TRACE_FOLDER } from '../vault/run-folder.js'
import { LEDGER_KINDS, type Assumption, type LedgerEntry, type LedgerKind, type LedgerView, type StandingChange } from '../core/ledger-types.js'
import { emptyView, firstIds, header, renderRecord, replayLedger, type LedgerRecord } from './ledger-format.js'
import { KeyedMutex } from '../core/keyed-mutex.js'
import { statOrNothing, statOrNothingSync } from '../vault/stat-or-nothing.js'

export { LEDGER_FORMAT, replayLedger } from './ledger-format.js'
export { LEDGER_KINDS, type Assumption, type LedgerEntry, type LedgerKind, type LedgerView, type StandingChange }

/** What `recordEntry` records. */
export interface NewLedgerEntry {
  kind: LedgerKind
  text: string
  reason?: string
  /** The note whose work records it. */
  node?: string
  step?: number
}

/** Options of `invalidate` and `revalidate`: where the change was made. */
export interface StandingOptions extends WriteOptions {
  node?: string
  step?: number
}

/**
 * Records a fact, an assumption or a decision in the vault's ledger
 * (`00_plan-trace/ledger.md`, appended) and resolves to its new id. From
 * inside a run of this process (a worker's tool) the write goes through
 * that run's lock; otherwise the vault's lock is taken for the write.
 *
 * @throws `TypeError` on a bad argument.
 * @throws {@link RunStateError} (`vault-locked`) when another process runs the vault; (`ledger-unreadable`, `ledger-too-new`) for a ledger this version cannot extend.
 */
export async function recordEntry(vault: string, entry: NewLedgerEntry, options: WriteOptions = {}): Promise<string> {
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
  const text = await readLedgerText(runFileToRead(vault, LEDGER_FILE))
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
const writers = new KeyedMutex()

async function withLedger<T>(vault: string, options: WriteOptions, write: (ledger: OpenLedger) => Promise<T>): Promise<T> {
  const info = await statOrNothing(vault)
  if (!info?.isDirectory()) throw new TypeError(`Expected \`vault\` to be a vault folder, got \`${vault}\``)
  const key = await realpath(vault).catch(() => resolve(vault))
  return writers.run(key, () => locked(vault, options, write))
}

async function locked<T>(vault: string, options: WriteOptions, write: (ledger: OpenLedger) => Promise<T>): Promise<T> {
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
  if (statOrNothingSync(path, { link: true }) === undefined) return undefined
  const read = readRegularFileSync(path, MAX_SYNC_READ)
  if (read) return read.text
  try {
    return await readFile(path, 'utf8')
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw error
  }
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
