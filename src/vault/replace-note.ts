import { linkSync, renameSync, rmSync } from 'node:fs'
import { readdir, rm } from 'node:fs/promises'
import { sleep } from '../core/abort.js'
import { basename, dirname, join } from 'node:path'
import { RunStateError } from '../core/errors.js'
import { readRegularFileSync, removeLater, sameStamp, toStamp, writeFileAtomic, writeFileAtomicSync, type FileStamp, type WriteOptions } from './fs-atomic.js'
import { setFrontmatterStatus } from './frontmatter.js'
import { parseNote } from './parse-note.js'
import { MAX_SETTLE_MS, readSettled, SETTLE_CUT_MS, settleWindow } from './settled-read.js'
import { statOrNothing, statOrNothingSync } from './stat-or-nothing.js'

/**
 * The prefix of the second name a note's old version keeps while the run
 * replaces it (see {@link replaceNoteSync}); the name goes on with the old
 * version's stamp and the note's file name.
 */
export const OLD_VERSION_PREFIX = '.vaultplan-old-'
const NAME_MAX = 255
/** How often a caught save is put back over the run's version saved again by an editor that keeps saving it. */
const PUT_BACK_TRIES = 5
const MAX_NOTE_BYTES = 8 * 1024 * 1024

/** Options of {@link replaceNoteSync}: those of the write, and where the old version's second name goes to be removed. */
export interface ReplaceOptions extends WriteOptions {
  /** A run folder of the same vault (the trace folder) the old version is moved into once replaced, to be unlinked there off the event loop (see `removeLater`). */
  park?: string
  /** Keep the old version's second name when nothing was caught, for the caller to watch (`old` in the result); the caller removes it. */
  keepOld?: boolean
}

/** What {@link replaceNoteSync} did. */
export type NoteReplacement =
  /** The note had changed since `expected`: nothing was written. */
  | { kind: 'changed' }
  /** Replaced. `caught`: a save in place was under way into the old version, kept at this path (see {@link recoverCaughtSave}). */
  | { kind: 'replaced'; stamp: FileStamp; caught?: string; old?: string }

/** A stamp in a file name: inode, size and modification time in µs, base 36. */
function stampTag(stamp: FileStamp): string {
  return `${stamp.ino.toString(36)}-${stamp.size.toString(36)}-${Math.round(stamp.mtimeMs * 1000).toString(36)}`
}

/** The second name of a note's version `expected` while it is replaced; `undefined` when the name would be too long. */
export function oldVersionPath(path: string, expected: FileStamp): string | undefined {
  const name = `${OLD_VERSION_PREFIX}${stampTag(expected)}-${basename(path)}`
  return Buffer.byteLength(name) <= NAME_MAX ? join(dirname(path), name) : undefined
}

/**
 * Replaces a note by a rename, as {@link writeFileAtomicSync} does, only
 * when it still is the version `expected`, without losing a save in place
 * that an editor in another process makes meanwhile. An editor that saves
 * in place (Obsidian, VS Code, `cp`) truncates the note and writes it; one
 * that does so between the comparison and the rename would write its bytes
 * into the replaced file, gone with it. So the old version first gets a
 * second name (a hard link), the comparison is made on it, and after the
 * rename it is looked at again: unchanged, the second name is removed;
 * changed, a save went there: it is renamed back over ours and the answer
 * is `changed` (read it again), or, when the note changed meanwhile too,
 * `caught` names it for {@link recoverCaughtSave}. A kill in between leaves the second name for
 * the next run to settle ({@link recoverOldVersions}). On a file system
 * without hard links (or a name too long for a second one) the note is
 * compared just before the rename, and a save landing in the microseconds
 * between is not caught.
 */
export function replaceNoteSync(path: string, expected: FileStamp, data: string, options: ReplaceOptions = {}): NoteReplacement {
  const old = oldVersionPath(path, expected)
  let linked = false
  if (old !== undefined) {
    try {
      linked = linkTo(path, old)
    } catch {
      // No hard links here (FAT, some network file systems): the plain comparison below.
    }
  }
  const now = stampOrNothing(linked ? old! : path)
  if (now === undefined || !sameStamp(now, expected)) {
    if (linked) rmSync(old!, { force: true })
    return { kind: 'changed' }
  }
  const stamp = writeFileAtomicSync(path, data, { ...options, mode: options.mode ?? expected.mode })
  if (!linked) return { kind: 'replaced', stamp }
  const fate = oldVersionFate(path, old!, expected, stamp)
  if (fate === 'unchanged') {
    if (options.keepOld === true) return { kind: 'replaced', stamp, old: old! }
    // Its last name: removed without the wait on the event loop (the unlink waits for the old version's pending writes).
    removeLater(old!, options.park)
    return { kind: 'replaced', stamp }
  }
  return fate === 'put-back' ? { kind: 'changed' } : { kind: 'replaced', stamp, caught: old! }
}

/**
 * What became of the old version `expected` (under its second name `old`)
 * once `ours` replaced it: `unchanged` (or gone, or one file with the note:
 * a write into the note itself, not a new file), nothing caught; or a save
 * went into it, and it is `put-back` as the note by a rename while the note
 * is still ours (the editor's writes still under way land in the note, which
 * never lacks the person's save for a reader, their editor's next save
 * among them; the caller reads it again and redoes its edit); or `caught`,
 * the note changed since our write too, for {@link recoverCaughtSave}.
 */
function oldVersionFate(path: string, old: string, expected: FileStamp, ours: FileStamp): 'unchanged' | 'put-back' | 'caught' {
  const after = stampOrNothing(old)
  if (after === undefined || sameStamp(after, expected) || after.ino === ours.ino) return 'unchanged'
  if (!sameStamp(stampOrNothing(path), ours)) return 'caught'
  try {
    renameSync(old, path)
    return 'put-back'
  } catch {
    return 'caught'
  }
}

/**
 * Puts back a save in place that {@link replaceNoteSync} caught going into
 * the old version: once that save has settled, `redo` makes the note from
 * it (the same edit the run made, on the person's bytes) and it replaces
 * the run's version `ours` (whose text is `written`), the same careful way.
 * A note saved again since with exactly `written` (an editor that reloaded
 * the run's version and saved it as it showed it) holds nothing new: once
 * settled, it is replaced too, by {@link replaceNote} with its watch.
 *
 * @returns the note's stamp and text now, or `changed` when the note was
 *   saved again meanwhile with other bytes (a newer save: read it again)
 * @throws {@link RunStateError} `note-busy` when the save kept changing; its bytes stay under the second name for the next run
 */
export async function recoverCaughtSave(
  path: string,
  caught: string,
  ours: FileStamp,
  written: string,
  redo: (saved: string) => string,
  options: ReplaceOptions = {},
): Promise<{ kind: 'recovered'; stamp: FileStamp; text: string } | { kind: 'changed' }> {
  const saved = await readCaught(caught)
  if (saved === 'busy')
    throw new RunStateError(
      'note-busy',
      `\`${basename(path)}\` kept changing for ${MAX_SETTLE_MS / 1000} s while it was replaced (an editor saving it?); the save is kept in \`${basename(caught)}\` for the next run.`,
      { files: [basename(path)], kept: basename(caught) },
    )
  if (saved === undefined) return { kind: 'changed' }
  const text = redo(saved.text)
  const replaced = replaceNoteSync(path, ours, text, options)
  // Read again and edited, a note that is our version saved again would lose the person's save and get our edit twice:
  // the save goes back over it, as carefully as the first write (that save may have been paused too: its old version is
  // watched for its rest), for as long as the note is saved again with our bytes.
  for (let tries = 0; replaced.kind === 'changed' && tries < PUT_BACK_TRIES; tries++) {
    const now = await readChanged(path)
    if (now === undefined || now === 'busy' || now.text !== written) break
    const again = await replaceNote(path, now.stamp, text, redo, { ...options, watchUntil: now.stamp.mtimeMs + SETTLE_CUT_MS })
    if (again === 'changed') continue
    rmSync(caught, { force: true })
    return { kind: 'recovered', stamp: again.stamp, text: again.text ?? text }
  }
  rmSync(caught, { force: true })
  if (replaced.kind === 'changed') return replaced
  if (replaced.caught === undefined) return { kind: 'recovered', stamp: replaced.stamp, text }
  return recoverCaughtSave(path, replaced.caught, replaced.stamp, text, redo, options)
}

/**
 * {@link replaceNoteSync} and, when it caught a save in place, {@link recoverCaughtSave}:
 * the note replaced by `data`, or by `redo` of the person's save it caught.
 * `watchUntil` (a time in ms): the old version is watched until then, so a
 * save that was paused mid-way when the note was read (an editor
 * descheduled between two writes) and writes its rest into the old version
 * afterwards is caught too.
 *
 * @returns `changed` when the note was not (or no longer) the version `expected`: read it again; else the stamp, and the text when it is `redo`'s
 */
export async function replaceNote(
  path: string,
  expected: FileStamp,
  data: string,
  redo: (saved: string) => string,
  options: ReplaceOptions & { watchUntil?: number } = {},
): Promise<'changed' | { stamp: FileStamp; text?: string }> {
  const { watchUntil = 0, ...write } = options
  const replaced = replaceNoteSync(path, expected, data, { ...write, keepOld: watchUntil > Date.now() })
  if (replaced.kind === 'changed') return 'changed'
  let caught = replaced.caught
  if (replaced.old !== undefined) {
    await sleep(watchUntil - Date.now())
    const fate = oldVersionFate(path, replaced.old, expected, replaced.stamp)
    if (fate === 'put-back') return 'changed'
    if (fate === 'unchanged') removeLater(replaced.old, write.park)
    else caught = replaced.old
  }
  if (caught === undefined) return { stamp: replaced.stamp }
  const recovered = await recoverCaughtSave(path, caught, replaced.stamp, data, redo, write)
  return recovered.kind === 'changed' ? 'changed' : { stamp: recovered.stamp, text: recovered.text }
}

/**
 * Settles the old versions a killed run left in `folder` (see
 * {@link replaceNoteSync}): one that is still the version its name records
 * is removed, and so is one that is still the note's own file (the run was
 * killed before its rename); one an editor saved into, newer than its note,
 * goes back into the note with the note's status value now. A note saved
 * after it (by a person) stays as it is.
 *
 * @param listed - the folder's entries, when the caller has just listed it (it is not listed again)
 */
export async function recoverOldVersions(folder: string, listed?: readonly string[]): Promise<void> {
  let names: string[]
  try {
    names = (listed ?? (await readdir(folder))).filter((name) => name.startsWith(OLD_VERSION_PREFIX))
  } catch {
    return
  }
  for (const name of names) {
    const match = /^([0-9a-z]+)-([0-9a-z]+)-([0-9a-z]+)-(.+)$/.exec(name.slice(OLD_VERSION_PREFIX.length))
    const old = join(folder, name)
    const info = await statOrNothing(old)
    if (!match || !info) continue
    const [, ino, size, mtime, file] = match as unknown as [string, string, string, string, string]
    const unchanged = info.ino.toString(36) === ino && info.size.toString(36) === size && Math.round(info.mtimeMs * 1000).toString(36) === mtime
    const note = join(folder, file)
    const current = readRegularFileSync(note, MAX_NOTE_BYTES)
    // Still the note's own file (killed before its rename): a save going into it goes into the note, nothing to put back.
    const same = current !== undefined && current.stamp.ino === info.ino
    // The editor may still be writing into it (the run was killed, the editor not): read once its save has settled.
    const saved = unchanged || same || (current && current.stamp.mtimeMs > info.mtimeMs) ? undefined : await readCaught(old)
    // Still being written after 3 s: kept for the next run.
    if (saved === 'busy') continue
    if (saved !== undefined) {
      const status = current ? parseNote(file, current.text).status : undefined
      let text = saved.text
      try {
        if (status !== undefined && parseNote(file, text).status !== status) text = setFrontmatterStatus(text, status)
      } catch {
        // A frontmatter the patch cannot handle: the person's bytes as they saved them.
      }
      await writeFileAtomic(note, text, { mode: info.mode & 0o7777 })
    }
    await rm(old, { force: true })
  }
}

/** An old version a save went into, once that save has settled: an editor is writing it, so doubted for the longer window, whatever it looks like. */
function readCaught(path: string): Promise<{ text: string; stamp: FileStamp } | undefined | 'busy'> {
  return readSettled(
    () => {
      const read = readRegularFileSync(path, MAX_NOTE_BYTES)
      return read && { value: { text: read.text, stamp: read.stamp }, stamp: read.stamp, complete: read.complete }
    },
    () => SETTLE_CUT_MS,
  )
}

/** A note that changed since the caller's write, once it has settled as any read of a note seen changing (see `settleWindow`). */
function readChanged(path: string): Promise<{ text: string; stamp: FileStamp } | undefined | 'busy'> {
  return readSettled(
    () => {
      const read = readRegularFileSync(path, MAX_NOTE_BYTES)
      return read && { value: { text: read.text, stamp: read.stamp }, stamp: read.stamp, complete: read.complete }
    },
    (found) => settleWindow(path, found.value, true),
  )
}

/** A hard link `old` to `path`; a stale `old` (a killed run's) is replaced. */
function linkTo(path: string, old: string): true {
  try {
    linkSync(path, old)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error
    rmSync(old, { force: true })
    linkSync(path, old)
  }
  return true
}

function stampOrNothing(path: string): FileStamp | undefined {
  const info = statOrNothingSync(path)
  return info && toStamp(info)
}
