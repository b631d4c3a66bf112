import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, lstatSync, openSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setFrontmatterStatus } from '../vault/frontmatter.js'
import { readRegularFileSync, syncFolderSync, writeAllSync, writeFileAtomicSync } from '../vault/fs-atomic.js'
import { TRACE_FILE, TRACE_FOLDER } from '../vault/run-folder.js'
import { RunStateError } from '../core/errors.js'
import { runFilePath } from '../vault/run-file-path.js'
import { confinedOrNothing } from '../vault/path-gate.js'

/**
 * The journal that lets a hop flush twice instead of five times
 * (`00_plan-trace/.journal`, hidden from Obsidian and from the loader).
 *
 * A status rewrite renames a temporary file over the note without flushing
 * its data first. After a power cut that rename may be on the disk while the
 * data is not (an empty or zero-filled note). So before a note is rewritten,
 * the journal holds a flushed copy of its bytes (an image); our own rewrites
 * change only the status value, so one image covers every later rewrite
 * until a person edits the note. An output note is written unflushed too, its
 * bytes being in the journal. Each hop flushes the journal once (the output,
 * with the images of the notes the hop may rewrite next) and the trace once.
 *
 * Recovery, when a run opens the vault: a journaled note that is empty, holds
 * NUL bytes or is cut short of a journaled version is restored from its
 * image (its status then shows an earlier value, which resume does not
 * trust anyway); any other content, a person's later edit included, is
 * left alone. An output note the trace names that is missing or differs
 * from its journaled bytes is written again.
 */
export class NoteJournal {
  /** Per note (vault-relative), its last image; `key` (the status normalised) is worked out when first needed. */
  private readonly images = new Map<string, { image: string; key?: string }>()
  /** Per note, the last text found covered: most checks are this one string comparison. */
  private readonly seen = new Map<string, string>()
  private queue: string[] = []
  /** Whether the queue holds an entry a rename waits for (an image, an output), not only status lines. */
  private needed = false
  /** Per note, the last status queued or read: a repeated one is not queued again. */
  private readonly statuses = new Map<string, string>()
  private fd: number | undefined
  /** Whether the journal's entries were written since this machine started (the last boot entry is this boot's). */
  private booted = false

  private constructor(
    private readonly root: string,
    private readonly path: string,
    private size: number,
  ) {}

  /**
   * Opens a vault's journal: repairs from it what a power cut tore, drops a
   * torn tail, and starts afresh (after flushing what it covers) once it is
   * large. Call it holding the vault's lock, before the notes are read.
   */
  static open(root: string): NoteJournal {
    const path = runFilePath(root, `${TRACE_FOLDER}/${JOURNAL}`)
    const read = readRegularFileSync(path, MAX_READ)
    const { notes, files, statuses, boot, valid } = gated(root, parse(read?.text ?? ''))
    const journal = new NoteJournal(root, path, Buffer.byteLength(valid))
    // A tail torn by a crash goes before anything is appended after it.
    if (read && read.stamp.size !== journal.size) journal.openFd((fd) => ftruncateSync(fd, journal.size))
    // Same boot as the entries': the page cache held every write, so no power cut can have torn one.
    journal.booted = boot !== undefined && boot === BOOT_ID
    if (!journal.booted) {
      for (const [file, image] of notes) journal.restoreNote(file, image, statuses.get(file))
      if (files.size > 0) journal.restoreFiles(files)
    }
    for (const [file, status] of statuses) journal.statuses.set(file, status)
    // Repaired once: the entries are this boot's from now on, so the next open (a stepping call) does not repair again.
    if (!journal.booted && read !== undefined) {
      journal.needed = true
      journal.commit()
    }
    for (const [file, image] of notes) journal.images.set(file, { image })
    if (journal.size > COMPACT_BYTES) journal.compact([...notes.keys(), ...files.keys()])
    return journal
  }

  /** Queues an image of a note about to be rewritten unless its journaled image already covers `text`. */
  cover(file: string, text: string): void {
    if (this.seen.get(file) === text) return
    const known = this.images.get(file)
    const key = normalised(text)
    if (known) known.key ??= normalised(known.image)
    if (known?.key !== key) {
      this.images.set(file, { image: text, key })
      this.queue.push(`${JSON.stringify({ k: 'note', f: file, t: text })}\n`)
      this.needed = true
    }
    this.seen.set(file, text)
  }

  /** Queues the bytes of a run file (an output note, vault-relative) written unflushed right after. */
  file(file: string, text: string): void {
    this.queue.push(`${JSON.stringify({ k: 'file', f: file, t: text })}\n`)
    this.needed = true
  }

  /**
   * Queues the status a note is given. It rides along with the next flush
   * (it costs none of its own): after a power cut that undid a status
   * rename, recovery gives the note back the last status flushed here, so a
   * stale `active` is not taken for a person moving the run.
   */
  status(file: string, status: string): void {
    if (this.statuses.get(file) === status) return
    this.statuses.set(file, status)
    this.queue.push(`${JSON.stringify({ k: 'status', f: file, s: status })}\n`)
  }

  /** Appends what is queued and flushes it when a rename waits for it: one flush, or none. */
  commit(): void {
    if (!this.needed) return
    this.needed = false
    if (!this.booted && BOOT_ID !== undefined) this.queue.unshift(`${JSON.stringify({ k: 'boot', id: BOOT_ID })}\n`)
    this.booted = true
    const data = Buffer.from(this.queue.join(''), 'utf8')
    this.queue = []
    this.openFd((fd) => {
      writeAllSync(fd, data)
      fsyncSync(fd)
    })
    this.size += data.length
  }

  /** Writes the status lines still queued (without a flush: they only ride along) and closes the journal file. */
  close(): void {
    if (this.queue.length > 0) {
      const data = Buffer.from(this.queue.join(''), 'utf8')
      this.queue = []
      this.openFd((fd) => writeAllSync(fd, data))
      this.size += data.length
    }
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }

  private openFd(use: (fd: number) => void): void {
    if (this.fd === undefined) {
      let created = false
      try {
        if (!lstatSync(this.path).isFile())
          throw new RunStateError('trace-unreadable', `\`${this.path}\` is not a regular file; move it away`, { file: this.path })
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
        created = true
      }
      const fd = openSync(this.path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600)
      if (!fstatSync(fd).isFile()) {
        closeSync(fd)
        throw new RunStateError('trace-unreadable', `\`${this.path}\` is not a regular file; move it away`, { file: this.path })
      }
      this.fd = fd
      // A new journal's name must be on the disk before anything relies on it.
      if (created) syncFolderSync(dirname(this.path))
    }
    use(this.fd)
  }

  private restoreNote(file: string, image: string, status: string | undefined): void {
    const path = join(this.root, file)
    const current = readRegularFileSync(path, MAX_READ)
    // A missing note was removed by a person (a rename never removes one): not ours to bring back.
    if (!current) return
    const text = torn(current.text) ? image : current.text
    // A version we wrote (the image with some status) showing another status than the last one flushed: an undone rename.
    const restored = status !== undefined && normalised(text) === normalised(image) ? tryStatus(text, status) : text
    if (restored !== current.text) writeFileAtomicSync(path, restored, { fsync: true, mode: current.stamp.mode })
  }

  private restoreFiles(files: Map<string, string>): void {
    const trace = readRegularFileSync(join(this.root, TRACE_FOLDER, TRACE_FILE), MAX_READ)?.text ?? ''
    for (const [file, text] of files) {
      const current = readRegularFileSync(join(this.root, file), MAX_READ)?.text
      if (current === text) continue
      // Only an output the trace records (its hop was committed): another is from an unfinished hop, or an archived run.
      const name = file.slice(TRACE_FOLDER.length + 1).replace(/\.md$/, '')
      // No outputs folder: a `fresh` start moved it into the archive (the trace follows it there next), or a person deleted it.
      const missing = current === undefined && trace.includes(`[[${TRACE_FOLDER}/${name}|`) && isFolder(dirname(join(this.root, file)))
      if (missing || (current !== undefined && torn(current))) {
        writeFileAtomicSync(join(this.root, file), text, { fsync: true, mode: 0o644 })
      }
    }
  }

  /**
   * Removes the journal of a vault whose run is finished. It is opened
   * first, as a run opens it, so what a power cut tore is repaired from it;
   * then every file it covers is flushed, and only then is it unlinked:
   * nothing it holds is needed any more, and the next run that rewrites a
   * note journals it anew. Call it holding the vault's lock, with no session
   * of the vault open. Does nothing when the vault has no journal.
   *
   * @returns whether a journal was removed
   */
  static retire(root: string): boolean {
    const path = runFilePath(root, `${TRACE_FOLDER}/${JOURNAL}`)
    if (!isFile(path)) return false
    const journal = NoteJournal.open(root)
    // An entry a rename still waits for would be pending: not the case once the run closed, but never removed then.
    if (journal.needed) {
      journal.close()
      return false
    }
    journal.close()
    flushFiles(root, parse(readRegularFileSync(path, MAX_READ)?.text ?? '').files.keys(), journal.images.keys())
    rmSync(path, { force: true })
    syncFolderSync(dirname(path))
    return true
  }

  /** Flushes every file the journal covers, then empties it: what it held is on the disk by then. */
  private compact(files: string[]): void {
    flushFiles(this.root, files)
    this.openFd((fd) => {
      ftruncateSync(fd, 0)
      fsyncSync(fd)
    })
    this.size = 0
  }
}

/** Flushes files of a vault (vault-relative) and their folders; one gone or unreadable has nothing to keep. */
function flushFiles(root: string, ...lists: Iterable<string>[]): void {
  const folders = new Set<string>()
  for (const file of lists.flatMap((list) => [...list])) {
    const path = join(root, file)
    try {
      if (!lstatSync(path).isFile()) continue
      const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
      try {
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      folders.add(dirname(path))
    } catch {
      // gone or unreadable: nothing of it to keep
    }
  }
  for (const folder of folders) syncFolderSync(folder)
}

function isFile(path: string): boolean {
  try {
    return lstatSync(path).isFile()
  } catch {
    return false
  }
}

function isFolder(path: string): boolean {
  try {
    return lstatSync(path).isDirectory()
  } catch {
    return false
  }
}

const JOURNAL = '.journal'
/** Past this size the journal is emptied when a run opens the vault. */
const COMPACT_BYTES = 2 * 1024 * 1024
const MAX_READ = 256 * 1024 * 1024

/**
 * The journal's entries whose files the path gate finds inside the vault:
 * the journal is a file anyone may edit, and a replay writes what it names
 * (an entry naming an empty file outside the vault would fill it).
 */
function gated<Parsed extends { notes: Map<string, string>; files: Map<string, string>; statuses: Map<string, string> }>(root: string, parsed: Parsed): Parsed {
  const inside = (file: string) => confinedOrNothing(root, file, 'a file of the journal') !== undefined
  for (const entries of [parsed.notes, parsed.files, parsed.statuses]) for (const file of [...entries.keys()]) if (!inside(file)) entries.delete(file)
  return parsed
}

/** The journal's complete entries, the last per file; a torn or garbled line ends it. */
function parse(text: string): {
  notes: Map<string, string>
  files: Map<string, string>
  statuses: Map<string, string>
  boot: string | undefined
  valid: string
} {
  const notes = new Map<string, string>()
  const files = new Map<string, string>()
  const statuses = new Map<string, string>()
  let boot: string | undefined
  let end = 0
  for (let next = text.indexOf('\n'); next !== -1; next = text.indexOf('\n', end)) {
    let entry: { k?: unknown; f?: unknown; t?: unknown; s?: unknown; id?: unknown }
    try {
      entry = JSON.parse(text.slice(end, next)) as typeof entry
    } catch {
      break
    }
    if (entry.k === 'boot' && typeof entry.id === 'string') {
      boot = entry.id
      end = next + 1
      continue
    }
    if (entry.k === 'status' && typeof entry.f === 'string' && typeof entry.s === 'string') {
      statuses.set(entry.f, entry.s)
      end = next + 1
      continue
    }
    if (typeof entry.f !== 'string' || typeof entry.t !== 'string' || (entry.k !== 'note' && entry.k !== 'file')) break
    ;(entry.k === 'note' ? notes : files).set(entry.f, entry.t)
    end = next + 1
  }
  return { notes, files, statuses, boot, valid: text.slice(0, end) }
}

/** A note's text with its status set to one value: two texts that differ only there are the same version. */
function normalised(text: string): string {
  return tryStatus(text, 'pending')
}

function tryStatus(text: string, status: string): string {
  try {
    return setFrontmatterStatus(text, status)
  } catch {
    return text
  }
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

/** This boot of the machine (Linux), or `undefined` where it cannot be told. */
const BOOT_ID = (() => {
  try {
    // A file of the kernel's, not a note: its stat says size 0, so it is read as a whole.
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined
  } catch {
    return undefined
  }
})()
