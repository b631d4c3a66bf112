import { readFile } from 'node:fs/promises'
import { readRegularFileSync } from '../vault/fs-atomic.js'
import type { GateMemo } from '../vault/path-gate.js'
import { outputPath, parseOutput, type SavedOutput } from './output-note.js'
import { parseTrace, tracePaths, type ParsedTrace, type Trace } from './trace.js'

/**
 * A run's own files (its trace, its output notes) as a vault's session last
 * parsed them, so a call that reads them again parses only what changed.
 * The bytes are read every time and compared, never trusted by a stamp: an
 * output note with the same bytes is not parsed again, and a trace that
 * only grew (appended to, by this process or another) is parsed from where
 * the last parse ended.
 */
export class RunFiles {
  private trace: ParsedTrace | undefined
  private readonly outputs = new Map<string, { text: string; saved: SavedOutput | undefined }>()

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
    const path = outputPath(this.vault, file, seen)
    const text = path === undefined ? undefined : await readText(path)
    if (text === undefined) {
      this.outputs.delete(file)
      return undefined
    }
    let known = this.outputs.get(file)
    if (known?.text !== text) {
      known = { text, saved: parseOutput(text) }
      this.outputs.set(file, known)
    }
    return known.saved && { ...known.saved }
  }
}

/** A file's text: a regular file with the synchronous calls, anything else (a symlink) the usual way; `undefined` when it cannot be read. */
async function readText(path: string): Promise<string | undefined> {
  return readRegularFileSync(path, MAX_SYNC_READ)?.text ?? readFile(path, 'utf8').catch(() => undefined)
}

/** Run files up to this size are read with the synchronous calls. */
const MAX_SYNC_READ = 64 * 1024 * 1024
