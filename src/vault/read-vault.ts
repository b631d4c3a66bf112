import { constants, readdirSync } from 'node:fs'
import { open, realpath, stat, type FileHandle } from 'node:fs/promises'
import { join, sep } from 'node:path'
import { assertFolder, isInside, readRegularFileSync, toStamp, type FileStamp } from './fs-atomic.js'
import { parseNote, type ParsedNote } from './parse-note.js'
import { busyNoteIssue, isSettled, readSettled, settleWindow, type FileRead } from './settled-read.js'
import { TRACE_FILE, TRACE_FOLDER } from './run-folder.js'
import { subplanFoldersOf } from './subplan-folders.js'
import type { PlanIssue } from '../core/types.js'
import { escapeControls, hasControls } from '../core/text.js'
import { statOrNothingSync } from './stat-or-nothing.js'

/** Notes larger than this are not read as plan steps. */
const MAX_NOTE_BYTES = 8 * 1024 * 1024
const READ_CONCURRENCY = 32

/** The notes of a vault and the problems met while reading them. */
export interface VaultNotes {
  notes: ParsedNote[]
  issues: PlanIssue[]
}

/** Reads and parses every note of a vault. */
export async function readNotes(dir: string): Promise<VaultNotes> {
  await assertFolder(dir)
  const root = await realpath(dir)
  const issues: PlanIssue[] = []
  const folders: NoteFolders = { claimed: new Set(), skipped: [] }
  const notes: ParsedNote[] = []
  for (let files = await listNotes(root, issues, folders); files.length > 0;) {
    notes.push(...(await readFiles(root, files, issues)))
    // A subplan folder holds a run of its own once it ran: its notes are still the subplan's, read with the parent.
    const wanted = claimedRunFolders(folders, notes)
    files = []
    for (const folder of wanted) files.push(...(await listNotes(root, issues, folders, folder)))
  }
  runFolderIssues(folders, issues)
  return { notes, issues }
}

/**
 * Says which folders were passed over because they hold a run of their own (and no `plan:` claims
 * them): their notes are not the plan's. Validation reports it only when an edge dangles, as its cause.
 */
function runFolderIssues(folders: NoteFolders, issues: PlanIssue[]): void {
  for (const folder of folders.skipped) {
    if (folders.claimed.has(folder)) continue
    issues.push({
      code: 'run-folder',
      severity: 'warning',
      message: `holds a run of its own (\`${folder}/${TRACE_FOLDER}/\`), so its notes are not part of this plan; to make them the plan's again, move \`${folder}/${TRACE_FOLDER}/\` out of the plan`,
      file: folder,
    })
  }
}

/** How long the loader reads notes at once before it lets the event loop run (timers such as the lock's refresh). */
const YIELD_EVERY_MS = 50

/**
 * Reads the notes `files` names: a regular note that reads as settled at
 * once, the usual case, in this loop with the synchronous calls; any other
 * (a symlink, a FIFO, one saved a moment ago) afterwards through
 * {@link readNote}, 32 at a time.
 */
async function readFiles(root: string, files: string[], issues: PlanIssue[]): Promise<ParsedNote[]> {
  const notes: (ParsedNote | undefined)[] = new Array(files.length)
  const careful: number[] = []
  let yielded = Date.now()
  for (let index = 0; index < files.length; index++) {
    const note = readNoteAtOnce(root, files[index]!, issues)
    if (note === 'careful') careful.push(index)
    else notes[index] = note
    if (Date.now() - yielded >= YIELD_EVERY_MS) {
      await new Promise(setImmediate)
      yielded = Date.now()
    }
  }
  let next = 0
  const worker = async () => {
    for (let at = next++; at < careful.length; at = next++) notes[careful[at]!] = await readNote(root, files[careful[at]!]!, issues)
  }
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, careful.length) }, worker))
  return notes.filter((note) => note !== undefined)
}

/**
 * Lists a vault as `readNotes` does, `visit`ing each file listed: a subplan
 * folder that ran holds a run of its own, and is listed once a `plan:` of a
 * note listed (and visited) before claims it; `notes` gives the notes known.
 */
export async function listVault(
  root: string,
  issues: PlanIssue[],
  notes: () => Iterable<Pick<ParsedNote, 'id' | 'file' | 'plan'>>,
  visit: (file: string) => Promise<void>,
): Promise<Set<string>> {
  const folders: NoteFolders = { claimed: new Set(), skipped: [] }
  const listed = new Set<string>()
  for (let batch = await listNotes(root, issues, folders); batch.length > 0;) {
    for (const file of batch) {
      listed.add(file)
      await visit(file)
    }
    const claiming = [...notes()].filter((note) => listed.has(note.file))
    batch = []
    for (const folder of claimedRunFolders(folders, claiming)) batch.push(...(await listNotes(root, issues, folders, folder)))
  }
  runFolderIssues(folders, issues)
  return listed
}

/** Folders the listing passed over because they hold a run, and those a `plan:` claims as subplans (listed all the same). */
export interface NoteFolders {
  claimed: Set<string>
  skipped: string[]
}

/** The passed-over run folders that a note's `plan:` names, marked claimed: they are to be listed now. */
export function claimedRunFolders(folders: NoteFolders, notes: Iterable<Pick<ParsedNote, 'id' | 'file' | 'plan'>>): string[] {
  const named = new Set<string>()
  for (const note of notes) for (const { folder } of subplanFoldersOf(note)) named.add(folder)
  const wanted = folders.skipped.filter((folder) => named.has(folder) && !folders.claimed.has(folder))
  for (const folder of wanted) folders.claimed.add(folder)
  return wanted
}

/**
 * Reads one note file; `undefined` (with a warning) when it is not a text
 * note. The file is checked to be a regular file of bounded size before it
 * is opened, and opened without blocking, so a FIFO, a socket or a device
 * named `*.md` (even one swapped in after the check) never stalls the read.
 * A note caught while an editor saves it in place (truncated, not yet
 * written) is read again once it has settled (see `readSettled`), never
 * parsed as it was (see `settleWindow`: `changed` when a running session
 * re-reads a note it saw change).
 */
export async function readNote(
  root: string,
  file: string,
  issues: PlanIssue[],
  options: { changed?: boolean | FileStamp } = {},
): Promise<ParsedNote | undefined> {
  const path = join(root, file)
  const found = await readSettled(
    () => readNoteOnce(root, file, issues),
    (read) => settleWindow(path, { text: read.value.text ?? '', stamp: read.stamp }, options.changed ?? false),
  )
  if (found === 'busy') {
    issues.push(busyNoteIssue(file))
    return undefined
  }
  return found
}

/**
 * A regular note read with the synchronous calls and parsed, when that read
 * is settled at once (see `isSettled`): `undefined` (with a warning) when it
 * is binary, `careful` when it is to be read the careful way (see `readNote`).
 */
function readNoteAtOnce(root: string, file: string, issues: PlanIssue[]): ParsedNote | undefined | 'careful' {
  // `root` is a real path and `file` a listed one (`/` between names): joined as `join` would, without its normalising.
  const path = sep === '/' && !root.endsWith('/') ? `${root}/${file}` : join(root, file)
  // Just listed as a regular file (a symlink is listed too, and the open refuses it: read the careful way).
  const quick = readRegularFileSync(path, MAX_NOTE_BYTES, true)
  if (!quick) return 'careful'
  if (isBinary(quick.text)) return void binary(file, issues)
  if (!isSettled(quick, settleWindow(path, quick, false), Date.now())) return 'careful'
  return withText(parseNote(file, quick.text), quick.text, quick.stamp)
}

/** Whether a note's text has a NUL byte in its first 8 KB: a binary file, not a note. */
function isBinary(text: string): boolean {
  const nul = text.indexOf('\0')
  return nul !== -1 && Buffer.byteLength(text.slice(0, nul)) < 8192
}

/** The note with the text it was parsed from and the stamp of that version. */
function withText(note: ParsedNote, text: string, stamp: FileStamp): ParsedNote {
  note.text = text
  note.stamp = stamp
  return note
}

async function readNoteOnce(root: string, file: string, issues: PlanIssue[]): Promise<FileRead<ParsedNote> | undefined> {
  // A regular note, the usual case, is read with synchronous system calls rather than round trips
  // through the thread pool; anything else (a symlink, a FIFO, a file too large, an error) is read
  // the careful way below, which says why it is not read.
  const quick = readRegularFileSync(join(root, file), MAX_NOTE_BYTES)
  if (quick) {
    if (isBinary(quick.text)) return void binary(file, issues)
    return { value: withText(parseNote(file, quick.text), quick.text, quick.stamp), stamp: quick.stamp, complete: quick.complete }
  }
  let buffer: Buffer
  let stamp: FileStamp
  let complete: boolean
  const notRegular = () =>
    issues.push({ code: 'not-a-note', severity: 'warning', message: 'is not a regular file (a FIFO, socket, device or folder); it is not read', file })
  const tooLarge = (size: number) =>
    issues.push({
      code: 'note-too-large',
      severity: 'warning',
      message: `is ${size} bytes, over the ${MAX_NOTE_BYTES}-byte limit of a plan note; it is not read`,
      file,
    })
  try {
    const path = join(root, file)
    const before = await stat(path)
    if (!before.isFile()) return void notRegular()
    if (before.size > MAX_NOTE_BYTES) return void tooLarge(before.size)
    // One handle for the stamp and the bytes, so they describe the same version of the note.
    const handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0))
    try {
      const info = await handle.stat()
      if (!info.isFile()) return void notRegular()
      stamp = toStamp(info)
      if (info.size > MAX_NOTE_BYTES) return void tooLarge(info.size)
      buffer = await readAll(handle, info.size)
      // Fewer bytes than the stamp said: truncated while it was read.
      complete = buffer.length === info.size
    } finally {
      await handle.close()
    }
  } catch (error) {
    issues.push({ code: 'unreadable-note', severity: 'warning', message: `cannot be read: ${(error as Error).message}`, file })
    return undefined
  }
  if (buffer.subarray(0, 8192).includes(0)) return void binary(file, issues)
  const text = buffer.toString('utf8')
  return { value: withText(parseNote(file, text), text, stamp), stamp, complete }
}

/** Says a file named `*.md` is binary (a NUL byte in its first 8 KB), so it is not read. */
function binary(file: string, issues: PlanIssue[]): void {
  issues.push({ code: 'not-a-note', severity: 'warning', message: 'is binary, not a markdown note; it is not read', file })
}

/**
 * Reads a file through its handle, `size` bytes as its stat said (`readFile`
 * would stat it again). A file that changed since has a new stamp, which
 * the next look at it notices.
 */
async function readAll(handle: FileHandle, size: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(size)
  let length = 0
  while (length < size) {
    const { bytesRead } = await handle.read(buffer, length, size - length, length)
    if (bytesRead === 0) break
    length += bytesRead
  }
  return buffer.subarray(0, length)
}

/**
 * Lists the notes of a vault (sorted paths relative to it), skipping
 * `00_plan-trace/` and dot-folders. A folder with a run of its own is passed
 * over (noted in `folders.skipped`) unless it is `claimed` as a subplan.
 *
 * @param from - list only this folder (relative to the vault)
 */
export async function listNotes(root: string, issues: PlanIssue[], folders?: NoteFolders, from = ''): Promise<string[]> {
  const files: string[] = []
  // Folders are listed and looked at with the synchronous calls: a listing never blocks, and a round
  // trip through the thread pool per folder cost a 10,000-note load more than the listing itself.
  const walk = async (folder: string) => {
    const entries = readdirSync(join(root, folder), { withFileTypes: true })
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue
      const path = folder ? `${folder}/${entry.name}` : entry.name
      if (hasControls(entry.name)) {
        // A line feed in a name would let every line that prints the note's id be forged.
        if (entry.isDirectory() || /\.md$/i.test(entry.name)) {
          const what = entry.isDirectory() ? 'folder' : 'note'
          issues.push({
            code: 'unprintable-name',
            severity: 'warning',
            message: `is a ${what} whose name has a line break, a control character or a direction override (shown escaped); it is not read: rename it`,
            file: escapeControls(path),
          })
        }
        continue
      }
      // A run's folder at any depth holds no notes of the plan; a subfolder with a run of its own
      // (a run vault kept inside the plan, a subplan's folder) is a vault of its own.
      if (entry.name === TRACE_FOLDER) continue
      if (entry.isDirectory()) {
        if (folders?.claimed.has(path) || !holdsRunSync(join(root, path))) await walk(path)
        else folders?.skipped.push(path)
      } else if (/\.md$/i.test(entry.name)) {
        if (entry.isFile()) files.push(path)
        else if (entry.isSymbolicLink()) {
          const real = await realpath(join(root, path)).catch(() => undefined)
          const info = real ? await stat(real) : undefined
          if (real && info?.isFile() && isInside(root, real)) files.push(path)
          else
            issues.push({
              code: 'outside-vault',
              severity: 'warning',
              message: 'is a symlink that leads outside the vault (or nowhere); it is not read',
              file: path,
            })
        }
      }
    }
  }
  await walk(from)
  return files
}

/** Whether a folder is a vault with a run of its own (it has a `00_plan-trace/trace.md`). */
export async function holdsRun(folder: string): Promise<boolean> {
  return holdsRunSync(folder)
}

function holdsRunSync(folder: string): boolean {
  return statOrNothingSync(join(folder, TRACE_FOLDER, TRACE_FILE))?.isFile() === true
}
