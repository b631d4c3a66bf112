import { RunStateError } from '../core/errors.js'
import { replacedFilesFreed, sameStamp, stampOfSync, type FileStamp } from './fs-atomic.js'
import { replaceNote, type ReplaceOptions } from './replace-note.js'
import { isOwnWrite, readSettledNote, rememberWrite, SETTLE_CUT_MS } from './settled-read.js'

/** How often {@link editNote} reads again when the note changed between its read and its write. */
const EDIT_ATTEMPTS = 3

/** Options of {@link editNote}: those of the replace, and what the caller already knows of the note. */
export interface EditOptions extends ReplaceOptions {
  /**
   * Whether the note may have changed since the caller last looked (see
   * `readSettledNote`): a read of a version saved a moment ago waits for it
   * to settle. The stamp of the version the caller saw, when known.
   *
   * @default true
   */
  doubt?: boolean | FileStamp
  /**
   * The version the caller holds (a vault session's last read or write).
   * While the note's stamp is still `held.stamp` its text is edited without
   * a read; once the note changed it is read (settled) like any other.
   * `doubted` (default `true`): it was read as a note that changed (a save
   * of it may have been under way), so it is watched like a doubted read.
   */
  held?: { stamp: FileStamp; text: string; doubted?: boolean }
  /**
   * Take `held` as the note's on the first try without even a stat: the
   * replace compares the stamp with the note's own before it writes, and
   * an edit that changes nothing looks at the note first (it would
   * otherwise answer for a version it never compared), unless `trust` is
   * `confirmed` (the caller compared the stamp with nothing awaited since).
   *
   * @default false
   */
  trust?: boolean | 'confirmed'
  /**
   * Called with the text an edit was made from and the text it made, right
   * before that text replaces the note (the redo on a save caught going
   * into the old version too); a session's journal flushes a copy there.
   */
  beforeWrite?: (from: string, to: string) => void
}

/** What {@link editNote} did: the note's text and stamp now, the text the edit was made from, and whether it wrote. */
export interface NoteEdit {
  text: string
  stamp: FileStamp
  /** The version the last edit was made from (a person's save the replace caught, when it redid the edit on one). */
  from: string
  written: boolean
  /** Whether the version edited was read doubted (see `doubt`): a caller holding it unwritten holds it so. */
  doubted: boolean
}

/**
 * The one way a person's note is rewritten (a run's status, emptied boxes,
 * `decide`, a proposal's box or status, `updateStatus`): a settled read (a
 * note caught between an editor's truncate and its write is read again,
 * never written from), `edit` of what was read, and `replaceNote` against
 * the stamp of that read, so a save made meanwhile is read again and edited
 * in turn. A version another process saved less than 1 s before its read
 * is watched until then after the replace: a save paused mid-way (an editor
 * descheduled between two writes, perhaps at a line break, which a read
 * passes for whole after 100 ms) that writes its rest into the old version
 * is put back as the note and edited in turn. The watch goes with the
 * doubt: a version this process wrote itself is not watched (nobody else's
 * save is under way in it), nor one read undoubted (`doubt: false`, a held
 * version read at first sight), so a run's hops pay for the watch only
 * right after a person saved a note it saw change. `edit` returns
 * the text unchanged when there is nothing to do, and `undefined` when the
 * note is no longer what the caller expected (nothing is written). Without
 * `park`, the old version's second name is gone when this returns.
 *
 * @param file - the note as messages name it
 * @param path - where the note is written (a symlink inside the vault resolved)
 * @returns the note's text and stamp now, the text edited, and whether it was written; `undefined` when `edit` said so
 * @throws {@link RunStateError} `note-busy` when the note kept changing; nothing was changed
 * @throws what `edit` throws on the note as read, and a system error of the read (`ENOENT` when the note is gone)
 */
export async function editNote(
  file: string,
  path: string,
  edit: (text: string) => string | undefined,
  options: EditOptions = {},
): Promise<NoteEdit | undefined> {
  const { doubt = true, held, trust = false, beforeWrite, ...write } = options
  let untrusted = !trust
  for (let attempt = 1; attempt <= EDIT_ATTEMPTS;) {
    const trusted = !untrusted && held !== undefined
    const { text, stamp, doubted } = trusted ? { ...held, doubted: held.doubted ?? true } : await versionOf(file, path, held, attempt > 1 || doubt)
    untrusted = true
    const updated = edit(text)
    if (updated === undefined) return undefined
    if (updated === text) {
      // A held version nobody compared with the note: look at the note, a try that costs no attempt.
      if (trusted && trust !== 'confirmed') continue
      return { text, stamp, from: text, written: false, doubted }
    }
    let from = text
    // A save caught going into the old version gets the same edit; one the edit refuses is kept as the person saved it.
    const redo = (saved: string) => {
      let redone: string
      try {
        redone = edit(saved) ?? saved
      } catch {
        redone = saved
      }
      if (redone !== saved) beforeWrite?.(saved, redone)
      from = saved
      return redone
    }
    beforeWrite?.(text, updated)
    // A doubted version another process saved less than SETTLE_CUT_MS before the read: a save paused mid-way may still write its rest.
    const watchUntil = doubted && !isOwnWrite(path, stamp) ? stamp.mtimeMs + SETTLE_CUT_MS : 0
    const replaced = await replaceNote(path, stamp, updated, redo, { ...write, watchUntil })
    if (replaced === 'changed') {
      // The held version, taken without a look, was stale: the note is read, a try that costs no attempt.
      if (!trusted) attempt++
      continue
    }
    rememberWrite(path, replaced.stamp)
    if (write.park === undefined) await replacedFilesFreed()
    return replaced.text === undefined
      ? { text: updated, stamp: replaced.stamp, from: text, written: true, doubted }
      : { text: replaced.text, stamp: replaced.stamp, from, written: true, doubted }
  }
  throw new RunStateError('note-busy', `\`${file}\` kept changing while it was written; nothing was changed. Try again.`, { files: [file] })
}

/** The note's version now: `held` when the note still has its stamp (a stat), else a settled read; and whether it is doubted. */
async function versionOf(
  file: string,
  path: string,
  held: EditOptions['held'],
  doubt: boolean | FileStamp,
): Promise<{ text: string; stamp: FileStamp; doubted: boolean }> {
  if (held !== undefined) {
    let now: FileStamp | undefined
    try {
      now = stampOfSync(path)
    } catch {
      // Gone or unreadable: the read says which.
    }
    if (sameStamp(now, held.stamp)) return { ...held, doubted: held.doubted ?? true }
  }
  return { ...(await readSettledNote(file, path, doubt)), doubted: doubt !== false }
}
