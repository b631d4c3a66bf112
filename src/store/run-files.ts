import { readFile } from 'node:fs/promises'
import { readRegularBytesSync, readRegularFileSync, regularStampSync, sameStamp, utf8, type FileStamp } from '../vault/fs-atomic.js'
import { stampTells } from '../vault/note-version.js'
import { runFileToRead, type GateMemo } from '../vault/path-gate.js'
import { outputTarget, parseOutput, type SavedOutput } from './output-note.js'
import { parseAppended, parseTrace, TRACE_PATH, tracePaths, type ParsedTrace, type Trace } from './trace.js'

/**
 * A run's own files (its trace, its output notes) as a vault's session last
 * parsed them, so a call that reads them again reads and parses only what
 * changed. A file is read again unless its stamp is the one it was last
 * read with and that read came long enough after its last write to tell a
 * second write (`stampTells`: git's "racy" rule, as for notes); one read
 * again with the same bytes is not parsed again, and its stamp counts as
 * confirmed from then on, so a file stops being read soon after its last
 * write. A trace that only grew (appended to, by this process or another)
 * has only its added bytes decoded and parsed.
 */
export class RunFiles {
  private trace: KnownTrace | undefined
  private readonly outputs = new Map<string, KnownOutput>()
  private readonly paths: ReturnType<typeof tracePaths>

  /** @param vault - the vault's real path */
  constructor(readonly vault: string) {
    this.paths = tracePaths(vault)
  }

  /**
   * The trace as `readTrace` reads it.
   *
   * @param shownAs - the vault as the caller named it, for the messages
   * @throws {@link RunStateError} as `readTrace` (`trace-outside-vault` for a symlink on the way)
   */
  async readTrace(shownAs = this.vault): Promise<Trace | undefined> {
    // Taken before the look: a write after it is one the next look may have to tell by the bytes.
    const at = Date.now()
    // Never through a symlink, as a run never writes through one: a link to another run's folder shows nothing of it.
    runFileToRead(this.vault, TRACE_PATH)
    const stamp = regularStampSync(this.paths.trace)
    const known = this.trace
    if (known && sameStamp(stamp, known.stamp) && stampTells(stamp!, known.checkedAt)) return copyOf(known.parsed.trace)
    // Just looked at as a regular file, so not looked at again; anything else (a symlink) read the usual way, with no stamp kept.
    const read = stamp === undefined ? undefined : readRegularBytesSync(this.paths.trace, MAX_SYNC_READ, true)
    const bytes = read?.bytes ?? (await readFile(this.paths.trace).catch(() => undefined))
    if (bytes === undefined) {
      this.trace = undefined
      return undefined
    }
    // Forgotten first: a trace that fails to parse is parsed again next time, not taken as read.
    this.trace = undefined
    const parsed = parseGrown(shownAs, bytes, known)
    this.trace = { parsed, bytes, stamp: read?.complete && sameStamp(read.stamp, stamp) ? read.stamp : undefined, checkedAt: at }
    return copyOf(parsed.trace)
  }

  /**
   * An output note (relative to the trace folder) as `readOutput` reads it.
   *
   * @param seen - the gate's findings of the same pass over a trace's outputs
   */
  async readOutput(file: string, seen?: GateMemo): Promise<SavedOutput | undefined> {
    const known = this.outputs.get(file)
    // Taken before the look: a write after it is one the next look may have to tell by the bytes.
    const at = Date.now()
    // The gate's own look at the note gives its stamp.
    const { path, stamp } = outputTarget(this.vault, file, seen) ?? {}
    if (known && sameStamp(stamp, known.stamp) && stampTells(stamp!, known.checkedAt)) return known.saved && { ...known.saved }
    // Just looked at as a regular file, so not looked at again; anything else (a symlink) read the usual way, with no stamp kept.
    const read = stamp === undefined ? undefined : readRegularFileSync(path!, MAX_SYNC_READ, true)
    const text = read?.text ?? (path === undefined ? undefined : await readFile(path, 'utf8').catch(() => undefined))
    if (text === undefined) {
      this.outputs.delete(file)
      return undefined
    }
    const saved = known?.text === text ? known.saved : parseOutput(text)
    // A stamp stands for the bytes only when nothing changed between the look and the read.
    this.outputs.set(file, { text, saved, stamp: read?.complete && sameStamp(read.stamp, stamp) ? read.stamp : undefined, checkedAt: at })
    return saved && { ...saved }
  }
}

/** When a file's stamp was last confirmed with its bytes (`Date.now()` taken before the look), and that stamp. */
interface Confirmed {
  stamp: FileStamp | undefined
  checkedAt: number
}

/** The trace as last read: its bytes, and their text parsed. */
interface KnownTrace extends Confirmed {
  bytes: Uint8Array
  parsed: ParsedTrace
}

/** An output note as last read: its text parsed, and the stamp it was read with. */
interface KnownOutput extends Confirmed {
  text: string
  saved: SavedOutput | undefined
}

/**
 * The trace of `bytes` parsed; with the trace as `known` last, when its
 * bytes are still the first ones, only what was appended to it since is
 * decoded and parsed.
 */
function parseGrown(shownAs: string, bytes: Uint8Array, known: KnownTrace | undefined): ParsedTrace {
  const before = known?.bytes
  if (!known || !before || bytes.length < before.length || Buffer.compare(before, bytes.subarray(0, before.length)) !== 0)
    return parseTrace(shownAs, utf8(bytes))
  if (bytes.length === before.length) return known.parsed
  // Added after a line break, the end of a character: the earlier text and the added one decode apart as they do
  // together. After a line cut short, that line may go on: parsed whole.
  if (before.at(-1) !== LINE_BREAK) return parseTrace(shownAs, utf8(bytes))
  return parseAppended(shownAs, known.parsed, utf8(bytes, before.length))
}

/** A copy of a trace's lists: the caller may add to its own. */
function copyOf(trace: Trace): Trace {
  return { header: trace.header, records: trace.records.slice(), claims: (trace.claims ?? []).slice() }
}

/** `\n`, in bytes. */
const LINE_BREAK = 0x0a

/** Run files up to this size are read with the synchronous calls. */
const MAX_SYNC_READ = 64 * 1024 * 1024
