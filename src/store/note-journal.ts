import { closeSync, constants, fstatSync, fsyncSync, ftruncateSync, openSync, readFileSync, rmSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { readRegularFileSync, regularStampSync, sameStamp, syncFolderSync, writeAllSync, type FileStamp } from '../vault/fs-atomic.js'
import { TRACE_FILE, TRACE_FOLDER } from '../vault/run-folder.js'
import { RunStateError } from '../core/errors.js'
import { runFilePath } from '../vault/run-file-path.js'
import { flushFiles, flushFilesAtOnce } from './flush-files.js'
import { gated, JOURNAL, MAX_READ, parseJournal } from './journal-format.js'
import { isFile, normalised, repairTrace, restoreFiles, restoreNote } from './journal-repair.js'
import { statOrNothingSync } from '../vault/stat-or-nothing.js'

/**
 * A run's write-ahead journal (`00_plan-trace/.journal`, hidden from
 * Obsidian and from the loader): a hop is one append to it (the output, the
 * statuses it moves, the trace entry) and, with `fsync`, one flush; the
 * visible files are applied from it right after, off the hop's path.
 *
 * - The trace entries: each is appended to `trace.md` right after the
 *   journal, at the offset the journal names. A crash between the two, or a
 *   power cut that tore the trace's unflushed tail, is repaired when the
 *   vault is opened again: the trace is cut at the first entry it lacks and
 *   the journal's entries from there are appended, each exactly once.
 * - The output notes and statuses of a hop are applied later (see
 *   `VaultSession.apply`); the ones after the last `applied` mark are applied
 *   when the vault is opened again.
 * - With `fsync`, a note's status rewrite renames a temporary file over it
 *   without flushing its data. After a power cut that rename may be on the
 *   disk while the data is not (an empty or zero-filled note). So before a
 *   note is rewritten, the journal holds a flushed copy of its bytes (an
 *   image); our own rewrites change only the status value, so one image
 *   covers every later rewrite until a person edits the note. Recovery after
 *   a new boot: a journaled note that is empty, holds NUL bytes or is cut
 *   short is restored from its image (its status then the last one
 *   journaled); any other content, a person's later edit included, is left
 *   alone.
 */
export class NoteJournal {
  /** Per note (vault-relative), its last image; `key` (the status normalised) is worked out when first needed. */
  private readonly images = new Map<string, { image: string; key?: string }>()
  /** Per note, the last text found covered: most checks are this one string comparison. */
  private readonly seen = new Map<string, string>()
  private queue: string[] = []
  /** Whether the queue holds an entry that must be flushed before the caller goes on (an image, a trace record). */
  private needed = false
  /** The run files (output notes) journaled: flushed before the journal is emptied. */
  private readonly written = new Set<string>()
  /** Per note, the last status queued or read: a repeated one is not queued again. */
  private readonly statuses = new Map<string, string>()
  private fd: number | undefined
  /** Whether the journal's entries were written since this machine started (the last boot entry is this boot's). */
  private booted = false
  /** The statuses journaled after the last `applied` mark: a hop's, not applied to the notes when the run stopped. */
  readonly unapplied = new Map<string, string>()
  /** Everything journaled is applied (see {@link settled}) and nothing was appended since. */
  private clean = false
  /** The journal's and the trace's stamps when this process closed the journal clean: see {@link open}'s `kept`. */
  private left: { journal: FileStamp; trace: FileStamp | undefined } | undefined

  private constructor(
    private readonly root: string,
    private readonly path: string,
    private size: number,
    private readonly fsync: boolean,
  ) {}

  /**
   * Opens a vault's journal and brings the files up to it: a new boot's
   * repair of what a power cut tore (with `fsync`), the trace's entries it
   * lacks, the output notes not written yet; a torn tail is dropped. The
   * statuses not applied yet are left in {@link unapplied}, for the session
   * to write through its careful rewrite. Call it holding the vault's lock,
   * before the notes are read.
   *
   * @param kept - this vault's journal as an earlier call of this process
   *   closed it: taken as it is, nothing read, when it was closed with
   *   everything applied and neither the journal nor the trace changed
   *   since (see {@link reusable})
   */
  static open(root: string, options: { fsync: boolean }, kept?: NoteJournal): NoteJournal {
    if (kept?.reusable(root, options.fsync)) return kept
    const path = runFilePath(root, `${TRACE_FOLDER}/${JOURNAL}`)
    const read = readRegularFileSync(path, MAX_READ)
    const parsed = gated(root, parseJournal(read?.text ?? ''))
    const journal = new NoteJournal(root, path, Buffer.byteLength(parsed.valid), options.fsync)
    // A tail torn by a crash goes before anything is appended after it.
    if (read && read.stamp.size !== journal.size) journal.openFd((fd) => ftruncateSync(fd, journal.size))
    // Same boot as the entries': the page cache held every write, so no power cut can have torn one.
    journal.booted = parsed.boot !== undefined && parsed.boot === BOOT_ID
    if (!journal.booted) for (const [file, image] of parsed.notes) restoreNote(root, file, image, parsed.statuses.get(file))
    repairTrace(root, parsed, options.fsync)
    restoreFiles(root, parsed, { booted: journal.booted, fsync: options.fsync })
    for (const [file, status] of parsed.statuses) journal.statuses.set(file, status)
    for (const [file, status] of parsed.unappliedStatuses) journal.unapplied.set(file, status)
    // Repaired once: the entries are this boot's from now on, so the next open (a stepping call) does not repair again.
    for (const [file, image] of parsed.notes) journal.images.set(file, { image })
    for (const file of parsed.files.keys()) journal.written.add(file)
    if (read !== undefined) {
      // A new boot's entry, flushed: the next open (a stepping call) does not repair again.
      if (!journal.booted) journal.needed = true
      // Everything marked applied already, this boot: nothing is written (a call refused after the open leaves no byte).
      if (journal.booted && parsed.pending === 0) journal.clean = true
      else if (journal.unapplied.size === 0) journal.settled()
      else journal.commit()
    }
    return journal
  }

  /** Queues an image of a note about to be rewritten unless its journaled image already covers `text` (with `fsync` only). */
  cover(file: string, text: string): void {
    if (!this.fsync || this.seen.get(file) === text) return
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

  /** Queues the bytes of a run file (an output note, vault-relative), applied after the hop's append. */
  file(file: string, text: string): void {
    this.queue.push(`${JSON.stringify({ k: 'file', f: file, t: text })}\n`)
    this.written.add(file)
  }

  /** Queues the status a note is given, applied after the hop's append (and, after a power cut, given back to a note whose rename was undone). */
  status(file: string, status: string): void {
    if (this.statuses.get(file) === status) return
    this.statuses.set(file, status)
    this.queue.push(`${JSON.stringify({ k: 'status', f: file, s: status })}\n`)
  }

  /**
   * Queues a trace entry: `text` to be found at byte `offset` of the trace
   * of run `run`. `commit` (a hop's record) makes the next commit flush.
   */
  trace(offset: number, text: string, run: string, commit: boolean): void {
    this.queue.push(`${JSON.stringify({ k: 'trace', o: offset, r: run, t: text })}\n`)
    if (commit) this.needed = true
  }

  /** Queues the mark that every entry before it is applied to the files. */
  applied(): void {
    this.queue.push(APPLIED)
  }

  /** Appends what is queued, in one write; flushes it (with `fsync`) when an entry needs it: one flush, or none. */
  commit(): void {
    this.append(this.fsync && this.needed)
  }

  private append(flush: boolean): void {
    if (this.queue.length === 0) return
    this.needed = false
    this.clean = false
    if (!this.booted && BOOT_ID !== undefined) this.queue.unshift(`${JSON.stringify({ k: 'boot', id: BOOT_ID })}\n`)
    this.booted = true
    const data = Buffer.from(this.queue.join(''), 'utf8')
    this.queue = []
    this.openFd((fd) => {
      writeAllSync(fd, data)
      if (flush) fsyncSync(fd)
    })
    this.size += data.length
  }

  /**
   * Once everything journaled is applied: without `fsync`, empties the
   * journal (a kill keeps the page cache, which holds the files); with it,
   * marks the entries applied, and empties the journal once it is large,
   * after flushing every file it covers.
   */
  settled(): void {
    this.unapplied.clear()
    if (!this.fsync) {
      this.queue = []
      if (this.size > 0) this.openFd((fd) => ftruncateSync(fd, 0))
      this.size = 0
      this.statuses.clear()
      this.written.clear()
      this.clean = true
      return
    }
    this.applied()
    this.commit()
    if (this.size > COMPACT_BYTES) this.compact()
    this.clean = true
  }

  /** Writes what is still queued (without a flush) and closes the journal file. */
  close(): void {
    this.append(false)
    if (this.fd !== undefined) closeSync(this.fd)
    this.fd = undefined
    // Taken still holding the lock, after this process's last write to either file.
    const journal = this.clean ? regularStampSync(this.path) : undefined
    this.left = journal && { journal, trace: regularStampSync(join(this.root, TRACE_FOLDER, TRACE_FILE)) }
  }

  /**
   * Whether an open of this vault's journal can take this object as it is,
   * once: this process closed it clean (nothing unapplied, no entry the
   * files lack; a call that threw is not kept by its caller either) and the
   * journal and the trace have the stamps it left. Only a holder of the
   * lock writes either file, and another process's call changes a size or
   * an inode whatever the clock's resolution: with `fsync` its open appends
   * a mark, and emptying the journal takes hops, which grow the trace;
   * without, a clean journal is empty, and an empty one holds nothing to
   * read. An archive moves both; a person's edit changes the trace's stamp.
   * Then a full open would read what this object holds and find nothing to
   * repair: no entry is unapplied, the trace holds every entry, and no power
   * cut tore anything since this process (alive all along) wrote it.
   */
  private reusable(root: string, fsync: boolean): boolean {
    const left = this.left
    this.left = undefined
    if (left === undefined || root !== this.root || fsync !== this.fsync) return false
    const trace = regularStampSync(join(this.root, TRACE_FOLDER, TRACE_FILE))
    return sameStamp(left.journal, regularStampSync(this.path)) && (left.trace === undefined ? trace === undefined : sameStamp(left.trace, trace))
  }

  private openFd(use: (fd: number) => void): void {
    if (this.fd === undefined) {
      const info = statOrNothingSync(this.path, { link: true })
      if (info && !info.isFile()) throw new RunStateError('trace-unreadable', `\`${this.path}\` is not a regular file; move it away`, { file: this.path })
      const created = info === undefined
      const fd = openSync(this.path, constants.O_WRONLY | constants.O_APPEND | constants.O_CREAT | constants.O_NOFOLLOW | constants.O_NONBLOCK, 0o600)
      if (!fstatSync(fd).isFile()) {
        closeSync(fd)
        throw new RunStateError('trace-unreadable', `\`${this.path}\` is not a regular file; move it away`, { file: this.path })
      }
      this.fd = fd
      // A new journal's name must be on the disk before anything relies on it.
      if (created && this.fsync) syncFolderSync(dirname(this.path))
    }
    use(this.fd)
  }

  /**
   * Removes the journal of a vault whose run is finished. It is opened
   * first, as a run opens it, so what a crash or a power cut left is
   * repaired from it; then every file it covers is flushed, and only then
   * is it unlinked (without `fsync`, nothing is flushed): nothing it holds
   * is needed any more. A journal with
   * statuses not applied yet stays, for the next session to apply. Call it
   * holding the vault's lock, with no session of the vault open. Does
   * nothing when the vault has no journal.
   *
   * @returns whether a journal was removed
   */
  static async retire(root: string, options: { fsync: boolean } = { fsync: true }): Promise<boolean> {
    // Looked at, not made: a folder below a finished run (a person's `assets/`) gets no run folder from this look.
    const path = join(root, TRACE_FOLDER, JOURNAL)
    if (!isFile(path)) return false
    const journal = NoteJournal.open(root, options)
    journal.close()
    if (journal.unapplied.size > 0) return false
    if (options.fsync) await flushFilesAtOnce(root, [...journal.images.keys(), ...journal.written, `${TRACE_FOLDER}/${TRACE_FILE}`])
    rmSync(path, { force: true })
    if (options.fsync) syncFolderSync(dirname(path))
    return true
  }

  /** Flushes every file the journal covers, then empties it: what it held is on the disk by then. */
  private compact(): void {
    flushFiles(this.root, this.images.keys(), this.written, [`${TRACE_FOLDER}/${TRACE_FILE}`])
    this.written.clear()
    this.openFd((fd) => {
      ftruncateSync(fd, 0)
      fsyncSync(fd)
    })
    this.size = 0
    // The journal holds no image, status or boot now: the next rewrite of a note journals its image again (a power cut
    // could tear that rewrite), as after an open of the empty journal.
    this.images.clear()
    this.seen.clear()
    this.statuses.clear()
    this.booted = false
  }
}

const APPLIED = `${JSON.stringify({ k: 'applied' })}\n`
/** Past this size the journal is emptied once what it holds is applied. */
const COMPACT_BYTES = 2 * 1024 * 1024

/** This boot of the machine (Linux), or `undefined` where it cannot be told. */
const BOOT_ID = (() => {
  try {
    // A file of the kernel's, not a note: its stat says size 0, so it is read as a whole.
    return readFileSync('/proc/sys/kernel/random/boot_id', 'utf8').trim() || undefined
  } catch {
    return undefined
  }
})()
