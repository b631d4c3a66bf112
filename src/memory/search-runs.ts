import { readFileSync, statSync } from 'node:fs'
import { statOrNothing } from '../vault/stat-or-nothing.js'
import { parseFrontmatter } from '../vault/frontmatter.js'
import { confinedOrNothing } from '../vault/path-gate.js'
import { refreshRunIndex, type StoredDocument } from './run-index.js'

/** One thing a past run produced that matches a search. */
export interface SearchHit {
  /** The vault of the run, relative to the root (`.` for the root itself). */
  vault: string
  runId: string
  /** What matched: an output, a final answer, a ledger entry or a judge's rationale. */
  kind: 'output' | 'final' | 'ledger' | 'rationale'
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
/** The longest query searched, in characters: a few sentences. */
export const MAX_QUERY_CHARS = 1_000
/** The most words a query may hold. */
export const MAX_QUERY_WORDS = 64
const LETTER_OR_DIGIT = /[\p{L}\p{N}]/u
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
 * @throws `TypeError` when `root` is not a folder, `query` not a string or `limit` not an integer from 1 up.
 * @throws `RangeError` when `query` is over 1,000 characters or 64 words (see `queryTooLong`).
 */
export async function searchRuns(root: string, query: string, options: SearchOptions = {}): Promise<SearchHit[]> {
  const { limit } = { ...DEFAULTS, ...options }
  if (
    typeof root !== 'string' ||
    // Any failure to look (no permission, a name no file can have) is no folder either.
    (await statOrNothing(root).catch(() => undefined))?.isDirectory() !== true
  ) {
    throw new TypeError(`Expected \`root\` to be a folder holding vaults, got \`${String(root)}\``)
  }
  if (typeof query !== 'string') throw new TypeError(`Expected \`query\` to be a string of words, got \`${String(query)}\``)
  if (!Number.isInteger(limit) || limit < 1) throw new TypeError(`Expected \`limit\` to be an integer from 1 up, got \`${String(limit)}\``)
  const tooLong = queryTooLong(query)
  if (tooLong !== undefined) throw new RangeError(tooLong)
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
 * Why `query` is too long to search, in words, or `undefined` when it is
 * not: over {@link MAX_QUERY_CHARS} characters or {@link MAX_QUERY_WORDS}
 * words. A search costs time with every word, and a pasted page finds no
 * more than its few words that matter.
 */
export function queryTooLong(query: string): string | undefined {
  const words = query.split(WORDS).filter(Boolean).length
  if (query.length <= MAX_QUERY_CHARS && words <= MAX_QUERY_WORDS) return undefined
  return `the query has ${words} words (${query.length} characters), over the ${MAX_QUERY_WORDS} words and ${MAX_QUERY_CHARS} characters a search takes; search with the few words that matter`
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
  const at = firstWordAt(flat.toLowerCase(), words)
  const start = Math.max(0, at - SNIPPET_CHARS / 4)
  const end = Math.min(flat.length, start + SNIPPET_CHARS)
  return `${start > 0 ? '…' : ''}${flat.slice(start, end).trim()}${end < flat.length ? '…' : ''}`
}

/**
 * Where the first word of `lower` that starts with one of `words` begins (at
 * the start, or after a character that is no letter or digit: the index of
 * that character), or -1. One pass over the text, trying at each word's start
 * only the query words that begin with its character: linear in the text
 * (a scan per query word made a long query against a long note slow).
 */
export function firstWordAt(lower: string, words: string[]): number {
  const byFirst = new Map<string, string[]>()
  for (const word of new Set(words)) {
    const first = String.fromCodePoint(word.codePointAt(0)!)
    byFirst.set(first, [...(byFirst.get(first) ?? []), word])
  }
  let previous = -1
  let boundary = true
  for (let at = 0; at < lower.length;) {
    const char = String.fromCodePoint(lower.codePointAt(at)!)
    if (boundary && byFirst.get(char)?.some((word) => lower.startsWith(word, at))) return Math.max(previous, 0)
    boundary = !LETTER_OR_DIGIT.test(char)
    previous = at
    at += char.length
  }
  return -1
}
