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
  if (k === 'boot' && typeof entry.id === 'string') parsed.boot = entry.id
  else if (k === 'applied') {
    parsed.unappliedStatuses.clear()
    parsed.unappliedFiles.clear()
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
