import { readFileSync, statSync } from 'node:fs'
import { stat } from 'node:fs/promises'
import { parseFrontmatter } from '../vault/frontmatter.js'
import { confinedOrNothing } from '../vault/path-gate.js'
import { refreshRunIndex, type StoredDocument } from './run-index.js'
import type { RunDocumentKind } from './run-documents.js'

/** One thing a past run produced that matches a search. */
export interface SearchHit {
  /** The vault of the run, relative to the root (`.` for the root itself). */
  vault: string
  runId: string
  /** What matched: an output, a final answer, a ledger entry or a judge's rationale. */
  kind: RunDocumentKind
  node?: string
  step?: number
  /** The file, relative to the root. */
  file: string
  /** The text around the first word of the query found, on one line. */
  snippet: string
  /** Higher is better (BM25); comparable within one search only. */
  score: number
}

/** Options of `searchRuns`. */
export interface SearchOptions {
  /**
   * Hits to return at most.
   *
   * @default 10
   */
  limit?: number
}

const DEFAULTS = { limit: 10 }
/** How minisearch splits text into words: a query is split the same way, so it is only ever words. */
const WORDS = /[\n\r\p{Z}\p{P}]+/u
const SNIPPET_CHARS = 200
/** The run index leaves out files over this size; no snippet is read from one either. */
const MAX_NOTE_BYTES = 8 * 1024 * 1024

/**
 * Searches what every run under `root` produced: output notes, final
 * answers, ledger entries and the judges' rationales, archived runs
 * included, best first. The query is words: quotes, dashes and operators
 * are matched as text, never read as query syntax; hits hold every word
 * when some do, else any of them (the last word may be the start of one).
 * The index is a cache in `<root>/.vaultplan/`, brought up to date from the
 * notes at each call (built the first time; see `refreshRunIndex`).
 *
 * @throws {TypeError} when `root` is not a folder, `query` not a string or `limit` not an integer from 1 up.
 */
export async function searchRuns(root: string, query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
  const { limit } = { ...DEFAULTS, ...options }
  if (
    typeof root !== 'string' ||
    !(await stat(root).then(
      (info) => info.isDirectory(),
      () => false,
    ))
  ) {
    throw new TypeError(`Expected \`root\` to be a folder holding vaults, got \`${String(root)}\``)
  }
  if (typeof query !== 'string') throw new TypeError(`Expected \`query\` to be a string of words, got \`${String(query)}\``)
  if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`Expected \`limit\` to be an integer from 1 up, got \`${String(limit)}\``)
  const words = query.toLowerCase().split(WORDS).filter(Boolean)
  const { index } = await refreshRunIndex(root)
  if (words.length === 0) return []
  const last = words.length - 1
  const ask = (combineWith: 'AND' | 'OR') => index.engine.search(words.join(' '), { combineWith, prefix: (_term, at) => at === last })
  let results = ask('AND')
  if (results.length === 0 && words.length > 1) results = ask('OR')
  const hits: SearchHit[] = []
  // Snippets come from the notes themselves; a file gone since it was indexed is no hit.
  let next = 0
  while (next < results.length && hits.length < limit) {
    const batch = results.slice(next, next + limit - hits.length) as unknown as (StoredDocument & { score: number })[]
    next += batch.length
    const texts = batch.map((stored) => (stored.shown !== undefined ? stored.shown : bodyOf(index.root, stored.file)))
    batch.forEach((stored, n) => {
      const text = texts[n]
      if (text === undefined) return
      const hit: SearchHit = {
        vault: stored.vault,
        runId: stored.runId,
        kind: stored.kind,
        file: stored.file,
        snippet: snippet(text, words),
        score: stored.score,
      }
      if (stored.node !== undefined) hit.node = stored.node
      if (stored.step !== undefined) hit.step = stored.step
      hits.push(hit)
    })
  }
  return hits
}

/**
 * The body of a hit's note, its path (from the index, a file) through the
 * path gate, then read synchronously: a few small notes per search, where
 * the thread pool's round trips would cost more than the reads.
 */
function bodyOf(root: string, file: string): string | undefined {
  try {
    const path = confinedOrNothing(root, file, 'a run file')
    if (path === undefined) return undefined
    if (statSync(path).size > MAX_NOTE_BYTES) return undefined
    const text = readFileSync(path, 'utf8')
    return text.slice(parseFrontmatter(text).split.contentStart)
  } catch {
    return undefined
  }
}

/** The text around the first of `words` it holds, white space collapsed, marked `…` where cut. */
function snippet(text: string, words: string[]): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  const lower = flat.toLowerCase()
  let at = -1
  for (const word of words) {
    const found = lower.search(new RegExp(`(^|[^\\p{L}\\p{N}])${escape(word)}`, 'u'))
    if (found !== -1 && (at === -1 || found < at)) at = found
  }
  const start = Math.max(0, at - SNIPPET_CHARS / 4)
  const end = Math.min(flat.length, start + SNIPPET_CHARS)
  return `${start > 0 ? '…' : ''}${flat.slice(start, end).trim()}${end < flat.length ? '…' : ''}`
}

function escape(text: string): string {
  return text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
}
