import { sleep } from '../core/abort.js'
import { readFile } from 'node:fs/promises'
import { PlanValidationError, RunStateError } from '../core/errors.js'
import type { PlanIssue } from '../core/types.js'
import { readRegularFileSync, sameStamp, stampOfSync, type FileStamp } from './fs-atomic.js'

/**
 * How long a note must have been left alone before a read of it is trusted.
 * An editor that saves in place (Obsidian, VS Code, `cp`, `git checkout`)
 * truncates the file and then writes it: a read in between finds it empty
 * or half written, with a change time of a moment ago.
 */
export const SETTLE_MS = 100
/** How long a note that looks cut short must have been left alone: an editor descheduled between its truncate and its write on a busy machine. */
export const SETTLE_CUT_MS = 1_000
/** How long a note may keep changing before the read gives up (`busy`). */
export const MAX_SETTLE_MS = 3_000

/** One read of a file: what it found, the stamp it was read under, and whether every byte the stamp promised came. */
export interface FileRead<T> {
  value: T
  stamp: FileStamp
  complete: boolean
}

/**
 * Reads a file until the read is of a settled version, so that nothing is
 * written from, or acted on, a note caught between an editor's truncate and
 * its write. A read is settled when it got every byte its stamp promised
 * and the file had not changed for the read's settle window (its
 * modification time is older, or two reads that far apart found the same
 * stamp, which also covers a clock that runs behind the file system's).
 * A complete read whose window is 0 is trusted at once, so most reads cost
 * nothing more, and a note saved a moment ago a wait of its window.
 *
 * @param read - one read; `undefined` when there is nothing to read (no file, not a regular one)
 * @param window - the settle window of a read, in ms (see {@link settleWindow})
 * @returns the settled read's value, `undefined` as `read` said, or `busy` when the file kept changing for {@link MAX_SETTLE_MS}
 */
export async function readSettled<T>(
  read: () => Promise<FileRead<T> | undefined> | FileRead<T> | undefined,
  window: (found: FileRead<T>) => number,
): Promise<T | undefined | 'busy'> {
  const started = Date.now()
  // The version first seen, and when: it counts as settled once it has stayed that long.
  let seen: { stamp: FileStamp; at: number } | undefined
  for (;;) {
    const found = await read()
    if (found === undefined) return undefined
    const now = Date.now()
    const wait = window(found)
    if (!found.complete || !sameStamp(seen?.stamp, found.stamp)) seen = found.complete ? { stamp: found.stamp, at: now } : undefined
    if (isSettled(found, wait, now, seen !== undefined && now - seen.at >= wait ? seen.stamp : undefined)) return found.value
    if (now - started >= MAX_SETTLE_MS) return 'busy'
    // Looked at again soon, however long the window: a save under way that ends meanwhile is read whole at once.
    await sleep(SETTLE_MS)
  }
}

/**
 * Whether one read is of a settled version (see {@link readSettled}): it got
 * every byte its stamp promised, and its settle window `wait` is 0, has
 * passed since the file changed, or `previous` (an earlier read that far
 * back) found the same stamp.
 */
export function isSettled(found: Pick<FileRead<unknown>, 'stamp' | 'complete'>, wait: number, now: number, previous?: FileStamp): boolean {
  return found.complete && (wait === 0 || now - found.stamp.mtimeMs >= wait || sameStamp(previous, found.stamp))
}

/** Empty, or with its frontmatter opened and not closed: what a save caught part way leaves, and a person rarely does. */
function looksCut(text: string): boolean {
  return text === '' || (/^---\r?\n/.test(text) && !/\n(?:---|\.\.\.)[ \t]*\r?\n/.test(text.slice(3)))
}

/** The stamps of the notes this process wrote last (any rewrite of `editNote`), by path: never doubted. */
const ownWrites = new Map<string, FileStamp>()
const OWN_WRITES_KEPT = 10_000

/** Remembers a note this process has just written, so that reading it back (the next stepping call) does not wait. */
export function rememberWrite(path: string, stamp: FileStamp): void {
  ownWrites.delete(path)
  ownWrites.set(path, stamp)
  if (ownWrites.size > OWN_WRITES_KEPT) ownWrites.delete(ownWrites.keys().next().value!)
}

/** Whether the note at `path` is, by its stamp, the version this process wrote there last (see {@link rememberWrite}). */
export function isOwnWrite(path: string, stamp: FileStamp): boolean {
  return sameStamp(ownWrites.get(path), stamp)
}

/**
 * The settle window of a note's read, in ms: 0 for a version this process
 * wrote itself; {@link SETTLE_CUT_MS} when it looks cut short (empty,
 * frontmatter unclosed) or does not end with a line break (a save may stop
 * anywhere); {@link SETTLE_MS} when it `changed` (a running session
 * re-reads only those); else 0. A save cut exactly at a line break, read
 * by a reader with no earlier version to compare with (the loader), passes
 * for whole.
 */
export function settleWindow(path: string, read: { text: string; stamp: FileStamp }, changed: boolean | FileStamp): number {
  if (isOwnWrite(path, read.stamp)) return 0
  if (looksCut(read.text)) return SETTLE_CUT_MS
  // Stopping inside a line: an editor's save caught part way, perhaps descheduled on a busy machine (the crash harness's editor
  // trials found pauses past 100 ms, and a resumed run's first read taking such a cut for the plan). A note that ends without a
  // line break (Obsidian writes them so) waits at most this once after a save.
  if (!read.text.endsWith('\n')) return SETTLE_CUT_MS
  return changed ? SETTLE_MS : 0
}

/** Notes up to this size are read with the synchronous calls (the loader's limit of a note). */
const MAX_SYNC_READ = 8 * 1024 * 1024

/**
 * A note's text read for a rewrite (a status, a cleared box), once it has
 * settled: a note caught between an editor's truncate and its write is
 * never patched and renamed over the person's note. `changed`: it changed
 * since the reader last looked (the stamp of the version it saw, when
 * known), so any read of it saved a moment ago is doubted. A small regular file is read with the synchronous calls.
 *
 * @param file - the note as the message names it
 * @throws {@link RunStateError} `note-busy` when it kept changing; nothing is written
 */
export async function readNoteForRewrite(file: string, path: string, changed: boolean | FileStamp): Promise<string> {
  return (await readSettledNote(file, path, changed)).text
}

/**
 * {@link readNoteForRewrite}, with the stamp of the version read: a write
 * compared against it replaces exactly that version.
 *
 * @throws {@link RunStateError} `note-busy` when it kept changing; nothing is written
 */
export async function readSettledNote(file: string, path: string, changed: boolean | FileStamp): Promise<{ text: string; stamp: FileStamp }> {
  const found = await readSettled(
    async () => {
      const read = readRegularFileSync(path, MAX_SYNC_READ)
      if (read) return { value: { text: read.text, stamp: read.stamp }, stamp: read.stamp, complete: read.complete }
      // Not a small regular file (a symlink inside the vault): read the slow way, the stamp taken after.
      const text = await readFile(path, 'utf8')
      const stamp = stampOfSync(path)
      return { value: { text, stamp }, stamp, complete: true }
    },
    (read) => settleWindow(path, { text: read.value.text, stamp: read.stamp }, changed),
  )
  if (found === 'busy' || found === undefined) {
    throw new RunStateError(
      'note-busy',
      `\`${file}\` kept changing for ${MAX_SETTLE_MS / 1000} s (an editor saving it?); nothing was written into it. Run again once it is saved.`,
      { files: [file] },
    )
  }
  return found
}

/** The loader's warning for a note it left out because it kept changing (see `readNote`). */
export function busyNoteIssue(file: string): PlanIssue {
  return { code: 'unreadable-note', severity: 'warning', message: BUSY_MESSAGE, file }
}

const BUSY_MESSAGE = `kept changing for ${MAX_SETTLE_MS / 1000} s (an editor saving it?); it is not read`

/**
 * Runs a plan's check; a plan found invalid when a note was left out because
 * it kept changing (its links dangle without it) is `note-busy` instead,
 * since the plan is not wrong, only caught mid-save.
 *
 * @throws {@link RunStateError} `note-busy` then; any other error as it is
 */
export function busyOr<T>(check: () => T): T {
  try {
    return check()
  } catch (error) {
    const busy = error instanceof PlanValidationError ? error.issues.filter((issue) => issue.code === 'unreadable-note' && issue.message === BUSY_MESSAGE) : []
    if (busy.length === 0) throw error
    throw new RunStateError(
      'note-busy',
      `${busy.map((issue) => `\`${issue.file}\``).join(', ')} kept changing for ${MAX_SETTLE_MS / 1000} s (an editor saving it?) and was not read, so the plan is not valid without it. Run again once it is saved.\n${(error as Error).message}`,
      { files: busy.flatMap((issue) => (issue.file === undefined ? [] : [issue.file])) },
    )
  }
}
