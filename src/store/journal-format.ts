import { join } from 'node:path'
import { readRegularFileSync } from '../vault/fs-atomic.js'
import { confinedOrNothing, type GateMemo } from '../vault/path-gate.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'

/** The journal's name in the run folder. */
export const JOURNAL = '.journal'
/** The most of a run file (the journal, a note it covers) read at once. */
export const MAX_READ = 256 * 1024 * 1024

/*
 * The lines of a run's write-ahead journal (`00_plan-trace/.journal`), one
 * JSON object each, read back: the entries `NoteJournal` writes, the last
 * per file, and which of them come after the last `applied` mark.
 */

/** A journal's complete entries; a torn or garbled line ends them. */
export interface JournalEntries {
  /** Per note (vault-relative), its last image. */
  notes: Map<string, string>
  /** Per run file (an output note), its last bytes. */
  files: Map<string, string>
  /** Per note, the last status journaled. */
  statuses: Map<string, string>
  /** Per note, the last status journaled after the last `applied` mark. */
  unappliedStatuses: Map<string, string>
  /** Per run file, its bytes journaled after the last `applied` mark. */
  unappliedFiles: Map<string, string>
  /** The trace entries, in order: `t` belongs at byte `o` of the trace of run `r`. */
  traces: { o: number; r: string; t: string }[]
  /** How many entries follow the last `applied` mark (boot entries aside): none when everything is marked applied. */
  pending: number
  /** The boot the entries were written in. */
  boot: string | undefined
  /** The text of the complete entries. */
  valid: string
}

/** Reads a journal's text: its complete entries, the last per file; a torn or garbled line ends it. */
export function parseJournal(text: string): JournalEntries {
  const parsed: JournalEntries = {
    notes: new Map(),
    files: new Map(),
    statuses: new Map(),
    unappliedStatuses: new Map(),
    unappliedFiles: new Map(),
    traces: [],
    pending: 0,
    boot: undefined,
    valid: '',
  }
  let end = 0
  for (let next = text.indexOf('\n'); next !== -1; next = text.indexOf('\n', end)) {
    let entry: { k?: unknown; f?: unknown; t?: unknown; s?: unknown; id?: unknown; o?: unknown; r?: unknown }
    try {
      entry = JSON.parse(text.slice(end, next)) as typeof entry
    } catch {
      break
    }
    if (!take(parsed, entry)) break
    end = next + 1
  }
  parsed.valid = text.slice(0, end)
  return parsed
}

/** Adds one entry; false for one this version does not know (the journal is read up to it). */
function take(parsed: JournalEntries, entry: { k?: unknown; f?: unknown; t?: unknown; s?: unknown; id?: unknown; o?: unknown; r?: unknown }): boolean {
  const { k, f, t, s } = entry
  if (k === 'boot' && typeof entry.id === 'string') {
    parsed.boot = entry.id
    return true
  }
  parsed.pending++
  if (k === 'applied') {
    parsed.unappliedStatuses.clear()
    parsed.unappliedFiles.clear()
    parsed.pending = 0
  } else if (k === 'status' && typeof f === 'string' && typeof s === 'string') {
    parsed.statuses.set(f, s)
    parsed.unappliedStatuses.set(f, s)
  } else if (k === 'trace' && typeof t === 'string' && typeof entry.r === 'string' && Number.isSafeInteger(entry.o) && (entry.o as number) >= 0)
    parsed.traces.push({ o: entry.o as number, r: entry.r, t })
  else if (k === 'note' && typeof f === 'string' && typeof t === 'string') parsed.notes.set(f, t)
  else if (k === 'file' && typeof f === 'string' && typeof t === 'string') {
    parsed.files.set(f, t)
    parsed.unappliedFiles.set(f, t)
  } else return false
  return true
}

/**
 * What a vault's journal holds that is not applied to its files yet: a
 * run's last hops, for a reader that looks at a live run's files (they are
 * applied within milliseconds). `statuses` by note, `files` (output notes)
 * by their path in the vault, both vault-relative. Read it before the files
 * it stands for: a write applied after it is in the files by then.
 */
export function journaledWrites(root: string): { statuses: Map<string, string>; files: Map<string, string> } {
  const read = readRegularFileSync(join(root, TRACE_FOLDER, JOURNAL), MAX_READ)
  if (!read) return { statuses: new Map(), files: new Map() }
  const parsed = gated(root, parseJournal(read.text))
  return { statuses: parsed.unappliedStatuses, files: parsed.unappliedFiles }
}

/** The run id in a trace's header, or `undefined` for a trace without one. */
export function runOf(trace: string): string | undefined {
  const front = /^---\n([\s\S]*?)\n---/.exec(trace)?.[1]
  const run = front === undefined ? undefined : /^run: ["']?([^"'\n]+)["']?$/m.exec(front)?.[1]
  return run?.trim()
}

/**
 * The journal's entries whose files the path gate finds inside the vault:
 * the journal is a file anyone may edit, and a replay writes what it names
 * (an entry naming an empty file outside the vault would fill it).
 */
export function gated(root: string, parsed: JournalEntries): JournalEntries {
  // One pass: the folders the files share are looked at once, and a file named in two lists once.
  const seen: GateMemo = new Map()
  const found = new Map<string, boolean>()
  const inside = (file: string) => {
    let known = found.get(file)
    if (known === undefined) found.set(file, (known = confinedOrNothing(root, file, 'a file of the journal', seen) !== undefined))
    return known
  }
  for (const entries of [parsed.notes, parsed.files, parsed.statuses, parsed.unappliedStatuses, parsed.unappliedFiles])
    for (const file of [...entries.keys()]) if (!inside(file)) entries.delete(file)
  return parsed
}
