import { readFile } from 'node:fs/promises'
import { readRegularFileSync, sameStamp, type FileStamp } from '../vault/fs-atomic.js'
import { RACY_MS } from '../vault/note-version.js'
import type { GateMemo } from '../vault/path-gate.js'
import { outputTarget, parseOutput, type SavedOutput } from './output-note.js'
import { parseTrace, tracePaths, type ParsedTrace, type Trace } from './trace.js'

/**
 * A run's own files (its trace, its output notes) as a vault's session last
 * parsed them, so a call that reads them again parses only what changed.
 * The trace is read every time and compared: a trace that only grew
 * (appended to, by this process or another) is parsed from where the last
 * parse ended. An output note is read again unless its stamp is the one it
 * was read with and that read came long enough after its last write to
 * tell a second write (git's "racy" rule, as for notes); one with the same
 * bytes is not parsed again.
 */
export class RunFiles {
  private trace: ParsedTrace | undefined
  private readonly outputs = new Map<string, KnownOutput>()

  /** @param vault - the vault's real path */
  constructor(readonly vault: string) {}

  /**
   * The trace as `readTrace` reads it.
   *
   * @param shownAs - the vault as the caller named it, for the messages
   * @throws {@link RunStateError} as `readTrace`
   */
  async readTrace(shownAs = this.vault): Promise<Trace | undefined> {
    const text = await readText(tracePaths(this.vault).trace)
    if (text === undefined) {
      this.trace = undefined
      return undefined
    }
    if (this.trace?.text !== text) {
      const earlier = this.trace
      // Forgotten first: a trace that fails to parse is parsed again next time, not taken as read.
      this.trace = undefined
      this.trace = parseTrace(shownAs, text, earlier)
    }
    // A copy of the list: the caller may add to its own.
    return { header: this.trace.trace.header, records: this.trace.trace.records.slice(), claims: (this.trace.trace.claims ?? []).slice() }
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
    if (known?.stamp && sameStamp(stamp, known.stamp) && known.checkedAt - known.stamp.mtimeMs > RACY_MS) return known.saved && { ...known.saved }
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

/** An output note as last read: its text parsed, and the stamp it was read with, at `checkedAt` (`Date.now()` before the look). */
interface KnownOutput {
  text: string
  saved: SavedOutput | undefined
  stamp: FileStamp | undefined
  checkedAt: number
}

/** A file's text: a regular file with the synchronous calls, anything else (a symlink) the usual way; `undefined` when it cannot be read. */
async function readText(path: string): Promise<string | undefined> {
  return readRegularFileSync(path, MAX_SYNC_READ)?.text ?? readFile(path, 'utf8').catch(() => undefined)
}

/** Run files up to this size are read with the synchronous calls. */
const MAX_SYNC_READ = 64 * 1024 * 1024
