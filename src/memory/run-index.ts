import type { Stats } from 'node:fs'
import { readdir, readFile, realpath, stat } from 'node:fs/promises'
import { join } from 'node:path'
import type MiniSearch from 'minisearch'
import { z } from 'zod'
import type { Options as MiniSearchOptions } from 'minisearch'
import { sameStamp, toStamp, writeFileAtomic, type FileStamp } from '../vault/fs-atomic.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import { runFilePath } from '../vault/run-file-path.js'
import { insideSegments } from '../vault/path-gate.js'
import { documentsOf, runFileOf, runIdOfTrace, tracePartEntered, type RunDocumentKind } from './run-documents.js'
import { KeyedMutex } from '../core/keyed-mutex.js'
import { statOrNothing, statOrNothingSync } from '../vault/stat-or-nothing.js'

/** The cache folder under the root, and the index in it. */
export const INDEX_FOLDER = '.vaultplan'
export const INDEX_FILE = 'search-index.json'
const INDEX_FORMAT = 1
const ENGINE = 'minisearch@7'
/** Run files larger than this are left out (a real output is far smaller). */
const MAX_FILE_BYTES = 8 * 1024 * 1024

/** What the index stores of a document, to make a hit of it. */
export interface StoredDocument {
  kind: RunDocumentKind
  vault: string
  runId: string
  file: string
  node?: string
  step?: number
  shown?: string
}

interface FolderState {
  m: number
  i: number
  dirs: string[]
  files: string[]
}

interface FileState {
  m: number
  s: number
  i: number
  docs: string[]
  /** A trace's run id. */
  run?: string
}

/** The index of the runs under a root, with what it was built from. */
export interface RunIndex {
  root: string
  engine: MiniSearch<StoredDocument & { id: string; text: string }>
  folders: Record<string, FolderState>
  files: Record<string, FileState>
  /** The stamp of the index file as last written or read here. */
  stamp?: FileStamp
}

/** What a refresh did. */
export interface RefreshReport {
  /** The index was built from nothing: it was missing, unreadable or of another format. */
  rebuilt: boolean
  /** Run files read (again) because they are new or changed. */
  read: number
  /** Run files gone since the last refresh. */
  removed: number
  documents: number
}

const OPTIONS: MiniSearchOptions = {
  fields: ['text'],
  storeFields: ['kind', 'vault', 'runId', 'file', 'node', 'step', 'shown'],
  autoVacuum: false,
}

/** Indexes loaded in this process, by real root; each is checked against the notes at every search. */
const loaded = new Map<string, RunIndex>()
/** One refresh of a root at a time in this process: two would add the same documents twice. */
const refreshing = new KeyedMutex()

/**
 * Brings the index of the runs under `root` up to date and returns it:
 * loaded from `<root>/.vaultplan/search-index.json` (or kept from an earlier
 * call), rebuilt when that file is missing or unreadable, then updated from
 * the notes: a folder whose stamp is unchanged keeps its listing, and a run
 * file is read again when its stamp changed. Saved back atomically when
 * anything changed. Dot-folders, `node_modules` and symlinks are never entered.
 */
export async function refreshRunIndex(root: string): Promise<{ index: RunIndex; report: RefreshReport }> {
  const real = await realpath(root)
  return refreshing.run(real, () => refresh(real))
}

async function refresh(real: string): Promise<{ index: RunIndex; report: RefreshReport }> {
  const path = join(real, INDEX_FOLDER, INDEX_FILE)
  const found = await statOrNothing(path)
  const onDisk = found && toStamp(found)
  const { default: MiniSearchClass } = await import('minisearch')
  const kept = loaded.get(real)
  // The index in memory is good while the file is the one it wrote or read (or, for a root the cache cannot be written into, while there is none).
  const current = kept !== undefined && (kept.stamp === undefined ? onDisk === undefined : sameStamp(kept.stamp, onDisk))
  const fromDisk = current ? kept : await loadIndex(MiniSearchClass, real, path)
  const rebuilt = fromDisk === undefined
  const index: RunIndex = fromDisk ?? { root: real, engine: new MiniSearchClass(OPTIONS), folders: {}, files: {} }
  const report = await update(index)
  report.rebuilt = rebuilt
  if (rebuilt || report.read > 0 || report.removed > 0 || onDisk === undefined) {
    if (index.engine.dirtCount > 0) await index.engine.vacuum()
    const saved = { vaultplan: 'search-index', format: INDEX_FORMAT, engine: ENGINE, folders: index.folders, files: index.files, index: index.engine.toJSON() }
    try {
      // A cache: losing it to a power cut costs a rebuild, so it is not flushed. Never written through a symlink.
      index.stamp = await writeFileAtomic(runFilePath(real, `${INDEX_FOLDER}/${INDEX_FILE}`), JSON.stringify(saved), { fsync: false })
    } catch {
      // A root the cache cannot be written into is still searched, from the index in memory.
      delete index.stamp
    }
  }
  loaded.set(real, index)
  return { index, report }
}

async function loadIndex(MiniSearchClass: typeof MiniSearch, root: string, path: string): Promise<RunIndex | undefined> {
  try {
    const text = await readFile(path, 'utf8')
    const stamp = await stat(path).then(toStamp)
    const raw = JSON.parse(text) as { index?: unknown }
    // Anyone who can write into the root can write this file: of another shape, or naming a path the gate refuses, it is rebuilt.
    const parsed = SAVED_INDEX.safeParse(raw)
    if (!parsed.success || !pathsHold(parsed.data)) return undefined
    const engine = MiniSearchClass.loadJS(raw.index as Parameters<typeof MiniSearch.loadJS>[0], OPTIONS) as RunIndex['engine']
    return { root, engine, folders: parsed.data.folders, files: parsed.data.files as RunIndex['files'], stamp }
  } catch {
    return undefined // missing or unreadable: rebuilt from the notes
  }
}

async function update(index: RunIndex): Promise<RefreshReport> {
  const seen = new Set<string>()
  const gone: string[] = []
  const check: string[] = []
  const visit = async (rel: string, trace: string | undefined): Promise<void> => {
    const abs = rel === '' ? index.root : join(index.root, rel)
    const info = quickStat(abs)
    if (!info?.isDirectory()) return
    seen.add(rel)
    const cached = index.folders[rel]
    if (cached !== undefined && cached.m === info.mtimeMs && cached.i === info.ino) {
      // Outputs and finals are written by a rename, which changes their folder's stamp; traces and ledgers are
      // appended in place, so they are checked one by one (an outputs folder holds none: it is skipped whole).
      if (!rel.endsWith('/outputs')) for (const file of cached.files) if (APPENDED.test(file) || index.files[file] === undefined) check.push(file)
    } else {
      const folder = await list(rel, abs, trace, info)
      const now = new Set(folder.files)
      for (const file of cached?.files ?? []) if (!now.has(file)) gone.push(file)
      check.push(...folder.files)
      index.folders[rel] = folder
    }
    await Promise.all(index.folders[rel]!.dirs.map((dir) => visit(dir, trace ?? (dir.split('/').at(-1) === TRACE_FOLDER ? dir : undefined))))
  }
  await visit('', undefined)
  for (const [folder, state] of Object.entries(index.folders)) {
    if (seen.has(folder)) continue
    gone.push(...state.files)
    delete index.folders[folder]
  }

  const changed: string[] = []
  for (const file of check) {
    const known = index.files[file]
    const now = quickStat(join(index.root, file))
    if (!now) gone.push(file)
    else if (!known || known.m !== now.mtimeMs || known.s !== now.size || known.i !== now.ino) changed.push(file)
  }
  let removed = 0
  for (const file of gone) {
    if (index.files[file] === undefined) continue
    discard(index, file)
    delete index.files[file]
    removed++
  }
  // Traces first: the other files of a run take its id from there.
  changed.sort((a, b) => Number(!a.endsWith('/trace.md')) - Number(!b.endsWith('/trace.md')))
  for (const file of changed) await reindex(index, file)
  return { rebuilt: false, read: changed.length, removed, documents: index.engine.documentCount }
}

/**
 * A stat without the thread pool: a search checks a few hundred stamps, and
 * a synchronous stat costs a few microseconds where an asynchronous one
 * costs ten times more (6 ms against 0.4 ms for 226 stamps here).
 */
function quickStat(path: string): Stats | undefined {
  return statOrNothingSync(path)
}

const APPENDED = /(^|\/)(trace|ledger)\.md$/

async function list(rel: string, abs: string, trace: string | undefined, info: { mtimeMs: number; ino: number }): Promise<FolderState> {
  const entries = await readdir(abs, { withFileTypes: true }).catch(() => [])
  const folder: FolderState = { m: info.mtimeMs, i: info.ino, dirs: [], files: [] }
  for (const entry of entries) {
    if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
    const path = rel === '' ? entry.name : `${rel}/${entry.name}`
    // Dirents of symlinks are neither directories nor files: a link is never followed, in or out of the root.
    if (entry.isDirectory()) {
      const inTrace = trace ?? (entry.name === TRACE_FOLDER ? path : undefined)
      if (inTrace === undefined || inTrace === path || tracePartEntered(path.slice(inTrace.length + 1))) folder.dirs.push(path)
    } else if (entry.isFile() && runFileOf(path)) folder.files.push(path)
  }
  return folder
}

async function reindex(index: RunIndex, file: string): Promise<void> {
  discard(index, file)
  const abs = join(index.root, file)
  const info = await statOrNothing(abs)
  const where = runFileOf(file)
  if (!info || !where) {
    delete index.files[file]
    return
  }
  const state: FileState = { m: info.mtimeMs, s: info.size, i: info.ino, docs: [] }
  index.files[file] = state
  if (info.size > MAX_FILE_BYTES) return
  const text = await readFile(abs, 'utf8').catch(() => '')
  if (where.role === 'trace') state.run = runIdOfTrace(text)
  const runOf = (runFolder: string) => index.files[`${runFolder}/trace.md`]?.run || (where.archived ?? '')
  documentsOf(where, text, runOf).forEach((doc, n) => {
    const id = `${file}#${n}`
    const stored: StoredDocument & { id: string; text: string } = { id, text: doc.text, kind: doc.kind, vault: where.vault, runId: doc.runId, file }
    if (doc.node !== undefined) stored.node = doc.node
    if (doc.step !== undefined) stored.step = doc.step
    if (doc.shown !== undefined) stored.shown = doc.shown.slice(0, 2_000)
    index.engine.add(stored)
    state.docs.push(id)
  })
}

function discard(index: RunIndex, file: string): void {
  for (const id of index.files[file]?.docs ?? []) if (index.engine.has(id)) index.engine.discard(id)
}

const SAVED_INDEX = z.object({
  vaultplan: z.literal('search-index'),
  format: z.literal(INDEX_FORMAT),
  engine: z.literal(ENGINE),
  folders: z.record(z.string(), z.object({ m: z.number(), i: z.number(), dirs: z.array(z.string()), files: z.array(z.string()) })),
  files: z.record(z.string(), z.object({ m: z.number(), s: z.number(), i: z.number(), docs: z.array(z.string()), run: z.string().optional() })),
  // What is read of the engine's own JSON here: which file each document came from.
  index: z.object({ documentIds: z.record(z.string(), z.string()), storedFields: z.record(z.string(), z.object({ file: z.string() })) }),
})

/**
 * Whether a saved index names only what a refresh could have written: every
 * path passes the path gate, every file is a run file listed in its folder,
 * and every document belongs to the file it names. A document planted
 * outside that would never be dropped, and its `file` read at each search.
 */
function pathsHold(saved: z.infer<typeof SAVED_INDEX>): boolean {
  const gated = (path: string) => {
    try {
      insideSegments(path, 'a path of the search index')
      return true
    } catch {
      return false
    }
  }
  for (const [folder, state] of Object.entries(saved.folders)) {
    if ((folder !== '' && !gated(folder)) || !state.dirs.every(gated) || !state.files.every(gated)) return false
  }
  for (const file of Object.keys(saved.files)) {
    const folder = file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : ''
    if (!gated(file) || runFileOf(file) === undefined || !saved.folders[folder]?.files.includes(file)) return false
  }
  for (const [short, id] of Object.entries(saved.index.documentIds)) {
    const file = saved.index.storedFields[short]?.file
    if (file === undefined || !saved.files[file]?.docs.includes(id)) return false
  }
  return true
}
