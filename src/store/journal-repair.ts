import { closeSync, constants, fsyncSync, ftruncateSync, openSync, readFileSync, writeSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setFrontmatterStatus } from '../vault/frontmatter.js'
import { readRegularFileSync, writeFileAtomicSync } from '../vault/fs-atomic.js'
import { TRACE_FILE, TRACE_FOLDER } from '../vault/run-folder.js'
import { MAX_READ, runOf, type JournalEntries } from './journal-format.js'
import { statOrNothingSync } from '../vault/stat-or-nothing.js'

/*
 * What `NoteJournal.open` brings up to a run's journal when a vault is
 * opened: the notes a power cut tore, the trace's entries it lacks, the
 * output notes not written yet. Each is a no-op on files that hold what the
 * journal says, so a repair cut short is done again the same way.
 */

/**
 * After a new boot, gives a journaled note its bytes back: one that is empty,
 * holds NUL bytes or is cut short gets its image (its status then the last
 * one journaled); one showing the image with another status than the last
 * journaled (a rename the power cut undid) gets that status. Any other
 * content, a person's later edit included, is left alone.
 */
export function restoreNote(root: string, file: string, image: string, status: string | undefined): void {
  const path = join(root, file)
  const current = readRegularFileSync(path, MAX_READ)
  // A missing note was removed by a person (a rename never removes one): not ours to bring back.
  if (!current) return
  const text = torn(current.text) ? image : current.text
  // A version we wrote (the image with some status) showing another status than the last one flushed: an undone rename.
  const restored = status !== undefined && normalised(text) === normalised(image) ? tryStatus(text, status) : text
  if (restored !== current.text) writeFileAtomicSync(path, restored, { fsync: true, mode: current.stamp.mode })
}

/**
 * Brings the trace up to the journal's entries of its run: the first
 * entry the trace does not hold where the journal says (a crash before
 * its append, a power cut's torn tail) cuts the trace there, and it and
 * every later entry are appended. Entries of another run (archived by a
 * `fresh` start) are left out.
 */
export function repairTrace(root: string, parsed: JournalEntries, fsync: boolean): void {
  const path = join(root, TRACE_FOLDER, TRACE_FILE)
  if (parsed.traces.length === 0 || !isFile(path)) return
  const bytes = readFileSync(path)
  const run = runOf(bytes.subarray(0, HEADER_BYTES).toString('utf8'))
  const entries = parsed.traces.filter((entry) => entry.r === run)
  const missing = entries.findIndex((entry) => !bytes.subarray(entry.o, entry.o + Buffer.byteLength(entry.t)).equals(Buffer.from(entry.t, 'utf8')))
  if (missing === -1) return
  const from = entries[missing]!.o
  // An entry past the trace's end with a gap before it: bytes the journal does not hold are missing, nothing to repair from.
  if (from > bytes.length) return
  const tail = Buffer.from(
    entries
      .slice(missing)
      .map((entry) => entry.t)
      .join(''),
    'utf8',
  )
  // Cut and appended in place, as the trace is written: a crash part way is repaired the same way next time.
  const fd = openSync(path, constants.O_WRONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
  try {
    ftruncateSync(fd, from)
    for (let written = 0; written < tail.length;) written += writeSync(fd, tail, written, tail.length - written, from + written)
    if (fsync) fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

/**
 * Writes the output notes the files lack: after a new boot (`booted`
 * false), a torn one or a lost one the trace records; any time, one
 * journaled after the last `applied` mark (a hop's, not applied when its
 * run was killed).
 */
export function restoreFiles(root: string, parsed: JournalEntries, options: { booted: boolean; fsync: boolean }): void {
  // Read only for a file that may need writing: an open in the same boot with everything applied needs none.
  let trace: string | undefined
  const traceText = () => (trace ??= readRegularFileSync(join(root, TRACE_FOLDER, TRACE_FILE), MAX_READ)?.text ?? '')
  for (const [file, text] of parsed.files) {
    const unapplied = parsed.unappliedFiles.has(file)
    if (options.booted && !unapplied) continue
    const current = readRegularFileSync(join(root, file), MAX_READ)?.text
    if (current === text) continue
    // No outputs folder: a `fresh` start moved it into the archive (the trace follows it there next), or a person deleted it.
    if (!isFolder(dirname(join(root, file)))) continue
    // Only an output of the run the trace is of: another is an archived run's.
    const run = runOf(traceText())
    if (run === undefined || !text.includes(`\nrun: ${run}\n`)) continue
    const name = file.slice(TRACE_FOLDER.length + 1).replace(/\.md$/, '')
    const recorded = traceText().includes(`[[${TRACE_FOLDER}/${name}|`)
    if (unapplied || (current === undefined && recorded) || (current !== undefined && torn(current))) {
      writeFileAtomicSync(join(root, file), text, { fsync: options.fsync, mode: 0o644 })
    }
  }
}

/** A note's text with its status set to one value: two texts that differ only there are the same version. */
export function normalised(text: string): string {
  return tryStatus(text, 'pending')
}

/**
 * What a power cut leaves of a file whose data was not flushed: nothing, or
 * NUL bytes where data was (ext4, XFS and APFS hand out a file's blocks
 * zeroed, never another file's data). A note a person shortened is not
 * torn; only bytes nobody writes in a note count.
 */
export function torn(current: string): boolean {
  return current.length === 0 || current.includes('\0')
}

function tryStatus(text: string, status: string): string {
  try {
    return setFrontmatterStatus(text, status)
  } catch {
    return text
  }
}

/** Whether `path` is a regular file (symlinks not followed). */
export function isFile(path: string): boolean {
  return statOrNothingSync(path, { link: true })?.isFile() === true
}

function isFolder(path: string): boolean {
  return statOrNothingSync(path, { link: true })?.isDirectory() === true
}

/** How much of the trace's start holds its header (its run id). */
const HEADER_BYTES = 4096
