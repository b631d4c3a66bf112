import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, lstatSync, openSync, readFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { setFrontmatterStatus } from './frontmatter.js'
import { readRegularFileSync, syncFolderSync, writeAllSync, writeFileAtomicSync } from './fs-atomic.js'
import { TRACE_FOLDER } from './markdown-io.js'

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
    const path = join(root, TRACE_FOLDER, JOURNAL)
    const read = readRegularFileSync(path, MAX_READ)
    const { notes, files, boot, valid } = parse(read?.text ?? '')
    const journal = new NoteJournal(root, path, Buffer.byteLength(valid))
    // Same boot as the entries': the page cache held every write, so no power cut can have torn one.
    journal.booted = boot !== undefined && boot === BOOT_ID
    if (!journal.booted) {
      for (const [file, image] of notes) journal.restoreNote(file, image)
        if (files.size > 0) journal.restoreFiles(files)
    }
    for (const [file, image] of notes) journal.images.set(file, { image })
    if (read && Buffer.byteLength(read.text) !== journal.size) journal.openFd((fd) => ftruncateSync(fd, journal.size))
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
    }
    this.seen.set(file, text)
  }

  /** Queues the bytes of a run file (an output note, vault-relative) written unflushed right after. */
  file(file: string, text: string): void {
    this.queue.push(`${JSON.stringify({ k: 'file', f: file, t: text })}\n`)
  }

  /** Appends what is queued and flushes it: one flush, or none when nothing is queued. */
  commit(): void {
    if (this.queue.length === 0) return
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

  /** Closes the journal file. */
  close(): void {
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
  }

  private openFd(use: (fd: number) => void): void {
    if (this.fd === undefined) {
      let created = false
      try {
        if (!lstatSync(this.path).isFile()) throw new Error(`\`${this.path}\` is not a regular file; move it away`)
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
        created = true
      }
      const fd = openSync(this.path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600)
      if (!fstatSync(fd).isFile()) {
        closeSync(fd)
        throw new Error(`\`${this.path}\` is not a regular file; move it away`)
      }
      this.fd = fd
      // A new journal's name must be on the disk before anything relies on it.
      if (created) syncFolderSync(dirname(this.path))
    }
    use(this.fd)
  }

  private restoreNote(file: string, image: string): void {
    const path = join(this.root, file)
    const current = readRegularFileSync(path, MAX_READ)
    // A missing note was removed by a person (a rename never removes one): not ours to bring back.
    if (current && torn(current.text)) writeFileAtomicSync(path, image, { fsync: true, mode: current.stamp.mode })
  }

  private restoreFiles(files: Map<string, string>): void {
    const trace = readRegularFileSync(join(this.root, TRACE_FOLDER, 'trace.md'), MAX_READ)?.text ?? ''
    for (const [file, text] of files) {
      const current = readRegularFileSync(join(this.root, file), MAX_READ)?.text
      if (current === text) continue
      // Only an output the trace records (its hop was committed): another is from an unfinished hop, or an archived run.
      const name = file.slice(TRACE_FOLDER.length + 1).replace(/\.md$/, '')
      if (current === undefined ? trace.includes(`[[${TRACE_FOLDER}/${name}|`) : torn(current)) {
        writeFileAtomicSync(join(this.root, file), text, { fsync: true, mode: 0o644 })
      }
    }
  }

  /** Flushes every file the journal covers, then empties it: what it held is on the disk by then. */
  private compact(files: string[]): void {
    const folders = new Set<string>()
    for (const file of files) {
      const path = join(this.root, file)
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
    this.openFd((fd) => {
      ftruncateSync(fd, 0)
      fsyncSync(fd)
    })
    this.size = 0
  }
}

const JOURNAL = '.journal'
/** Past this size the journal is emptied when a run opens the vault. */
const COMPACT_BYTES = 2 * 1024 * 1024
const MAX_READ = 256 * 1024 * 1024

/** The journal's complete entries, the last per file; a torn or garbled line ends it. */
function parse(text: string): { notes: Map<string, string>; files: Map<string, string>; boot: string | undefined; valid: string } {
  const notes = new Map<string, string>()
  const files = new Map<string, string>()
  let boot: string | undefined
  let end = 0
  for (let next = text.indexOf('\n'); next !== -1; next = text.indexOf('\n', end)) {
    let entry: { k?: unknown; f?: unknown; t?: unknown; id?: unknown }
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
    if (typeof entry.f !== 'string' || typeof entry.t !== 'string' || (entry.k !== 'note' && entry.k !== 'file')) break
    ;(entry.k === 'note' ? notes : files).set(entry.f, entry.t)
    end = next + 1
  }
  return { notes, files, boot, valid: text.slice(0, end) }
}

/** A note's text with its status set to one value: two texts that differ only there are the same version. */
function normalised(text: string): string {
  try {
    return setFrontmatterStatus(text, 'pending')
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
