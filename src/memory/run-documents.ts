import { TRACE_FOLDER } from '../vault/run-folder.js'
import { parseFrontmatter } from '../vault/frontmatter.js'
import type { LedgerEntry, StandingChange } from './ledger.js'
import { replayLedger } from './ledger-format.js'

/** What a run file holds for the search: `output`, `final`, `ledger` entry or judge `rationale`. */
export type RunDocumentKind = 'output' | 'final' | 'ledger' | 'rationale'

/** One searchable piece of a run file. */
export interface RunDocument {
  kind: RunDocumentKind
  text: string
  runId: string
  node?: string
  step?: number
  /** A short text to show as the snippet when the file itself is too long to read again (entries, rationales). */
  shown?: string
}

/** Where a file sits in the trace folder of a vault, worked out from its path relative to the root. */
export interface RunFile {
  /** The vault, relative to the root (`.` for the root itself). */
  vault: string
  /** The run folder the file belongs to, relative to the root: `<vault>/00_plan-trace` or `.../archive/<run>`. */
  runFolder: string
  role: 'trace' | 'final' | 'ledger' | 'output'
  /** The archive folder's name, for an archived run. */
  archived?: string
}

const FOLDER = TRACE_FOLDER.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
const PATTERNS: [RegExp, RunFile['role']][] = [
  [new RegExp(`^(?:(.*)/)?(${FOLDER}(?:/archive/([^/]+))?)/trace\\.md$`), 'trace'],
  [new RegExp(`^(?:(.*)/)?(${FOLDER}(?:/archive/([^/]+))?)/final\\.md$`), 'final'],
  [new RegExp(`^(?:(.*)/)?(${FOLDER})/ledger\\.md$`), 'ledger'],
  [new RegExp(`^(?:(.*)/)?(${FOLDER}(?:/archive/([^/]+))?)/outputs/[^/]+\\.md$`), 'output'],
]

/** What a path (relative to the root, `/` between folders) is in a run, or `undefined` when the search does not read it. */
export function runFileOf(path: string): RunFile | undefined {
  for (const [pattern, role] of PATTERNS) {
    const match = pattern.exec(path)
    if (!match) continue
    const file: RunFile = { vault: match[1] ?? '.', runFolder: match[1] === undefined ? match[2]! : `${match[1]}/${match[2]}`, role }
    if (match[3] !== undefined) file.archived = match[3]
    return file
  }
  return undefined
}

/** The folders inside a trace folder the search goes into; every other one is left alone. */
export function tracePartEntered(pathInTrace: string): boolean {
  return /^(outputs|archive|archive\/[^/]+|archive\/[^/]+\/outputs)$/.test(pathInTrace)
}

/**
 * The searchable documents of a run file: an output or final note (its
 * body), each ledger entry, each hop's quoted judge rationale. `runOf`
 * gives the run id of a run folder (from its trace header) for files that
 * do not carry it. A file that cannot be read as what it should be gives none.
 */
export function documentsOf(file: RunFile, text: string, runOf: (runFolder: string) => string): RunDocument[] {
  if (file.role === 'output' || file.role === 'final') {
    const { data, split } = parseFrontmatter(text)
    if (data.vaultplan !== file.role) return []
    const doc: RunDocument = { kind: file.role, text: text.slice(split.contentStart), runId: typeof data.run === 'string' ? data.run : runOf(file.runFolder) }
    // An output names its note twice: `id` as the executor reads it, `node` as a wikilink for Obsidian's graph.
    const node = typeof data.id === 'string' ? data.id : data.node
    if (typeof node === 'string') doc.node = node
    if (typeof data.step === 'number') doc.step = data.step
    return [doc]
  }
  if (file.role === 'trace') return rationales(text)
  let view
  try {
    view = replayLedger(text, file.vault).view
  } catch {
    return [] // a ledger this version cannot read is still the truth; it is only left out of the search
  }
  const current = runOf(file.runFolder)
  const entries: (LedgerEntry & { changes?: StandingChange[] })[] = [...view.facts, ...view.assumptions, ...view.decisions]
  return entries.map((entry) => {
    const reasons = [entry.reason, ...(entry.changes ?? []).map((change) => change.reason)].filter((reason) => reason !== undefined)
    const body = [entry.text, ...reasons].join('\n')
    const doc: RunDocument = { kind: 'ledger', text: `${entry.id} ${body}`, runId: entry.run ?? current, shown: `${entry.id}: ${body}` }
    if (entry.node !== undefined) doc.node = entry.node
    if (entry.step !== undefined) doc.step = entry.step
    return doc
  })
}

/** The run id in a trace's header, or `''`. */
export function runIdOfTrace(text: string): string {
  const data = parseFrontmatter(text.slice(0, 4096)).data
  return data.vaultplan === 'trace' && typeof data.run === 'string' ? data.run : ''
}

/** The sentences vaultplan writes itself when no judge was asked: nothing to search. */
const OWN_RATIONALES = new Set(['the only unconditional edge', 'no condition held', 'terminal: the node has no edges'])

function fromAJudge(decidedBy: unknown, body: string): boolean {
  return decidedBy !== 'predicate' && decidedBy !== 'terminal' && !OWN_RATIONALES.has(body)
}

/** Each hop's judge rationale: the `> ` lines of its section, before its marker line. */
function rationales(text: string): RunDocument[] {
  const runId = runIdOfTrace(text)
  const docs: RunDocument[] = []
  let quoted: string[] = []
  for (const line of text.split('\n')) {
    if (line.startsWith('> ')) quoted.push(line.slice(2))
    else if (line.startsWith('## ')) quoted = []
    else if (line.startsWith('<!-- vaultplan:')) {
      const body = quoted.join('\n').trim()
      quoted = []
      if (body === '') continue
      const json = /^<!-- vaultplan:\w+ (\{.*\}) -->\s*$/.exec(line)?.[1]
      let record: { node?: unknown; step?: unknown; decidedBy?: unknown } = {}
      try {
        if (json !== undefined) record = JSON.parse(json) as typeof record
      } catch {
        continue // an entry torn by a crash
      }
      if (json === undefined || !fromAJudge(record.decidedBy, body)) continue
      const doc: RunDocument = { kind: 'rationale', text: body, runId, shown: body }
      if (typeof record.node === 'string') doc.node = record.node
      if (typeof record.step === 'number') doc.step = record.step
      docs.push(doc)
    }
  }
  return docs
}
