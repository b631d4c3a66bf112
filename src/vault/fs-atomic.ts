import { closeSync, constants, fstatSync, fsyncSync, openSync, readSync, renameSync, rmSync, statSync, writeSync } from 'node:fs'
import { mkdir, open, readdir, rename, rm, stat, unlink } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import { VaultPathError } from '../core/errors.js'
import { statOrNothing, statOrNothingSync } from './stat-or-nothing.js'

/** Options of the durable writes. */
export interface WriteOptions {
  /**
   * Flush file and folder to the disk, so a write survives a power loss and not only a crash.
   *
   * @default true
   */
  fsync?: boolean
  /**
   * Flush the folder too (makes the rename itself durable). Without it the
   * file's data is still flushed before the rename, so a power loss leaves
   * the old bytes or the new ones, never an empty note.
   *
   * @default the value of `fsync`
   */
  syncFolder?: boolean
  /** Permissions of the file; when absent, those of the file being replaced (0o644 for a new one). */
  mode?: number
}

/** What identifies a version of a file: changes whenever its bytes may have. */
export interface FileStamp {
  mtimeMs: number
  size: number
  ino: number
  mode: number
}

const TEMP_PREFIX = '.vaultplan-tmp-'
/** Unique to this process even when a crashed one had the same pid and left its temp files. */
const PROCESS_TAG = `${process.pid}-${Date.now().toString(36)}`
let tempCounter = 0

/** A fresh temporary name in `folder`, unique in this process and tagged with it (see `removeStaleTempFiles`). */
function tempPath(folder: string): string {
  return join(folder, `${TEMP_PREFIX}${PROCESS_TAG}-${(tempCounter++).toString(36)}`)
}

/** The permissions a replaced file keeps: its own, or 0644 for a new one. */
function modeOf(info: { mode: number } | undefined): number {
  return info ? info.mode & 0o7777 : 0o644
}

/**
 * Replaces a file in one step: the data goes to a temporary file in the same
 * folder, is flushed, and is renamed over the target, then the folder is
 * flushed. A crash leaves the old bytes or the new ones, never a mix.
 *
 * @returns the stamp of the file written (a rename keeps it), taken before
 *   the rename, so an edit made right after is not mistaken for ours.
 */
export async function writeFileAtomic(path: string, data: string, options: WriteOptions = {}): Promise<FileStamp> {
  const fsync = options.fsync ?? true
  const folder = dirname(path)
  // O_EXCL below makes a clash with another process's name fail rather than share a file.
  const temp = tempPath(folder)
  const mode = options.mode ?? modeOf(await statOrNothing(path))
  const handle = await open(temp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, mode)
  let stamp: FileStamp
  try {
    await handle.writeFile(data, 'utf8')
    if (fsync) await handle.sync()
    stamp = toStamp(await handle.stat())
  } finally {
    await handle.close()
  }
  try {
    await rename(temp, path)
  } catch (error) {
    await rm(temp, { force: true })
    throw error
  }
  if (options.syncFolder ?? fsync) await syncFolder(folder)
  return stamp
}

/**
 * {@link writeFileAtomic} with the synchronous calls, for the few small
 * writes of a hop: each call costs a system call instead of a round trip
 * through the thread pool. The temporary file is created new (`O_EXCL`), so
 * nothing but a regular file is ever opened, and nothing here can block.
 *
 * @returns the stamp of the file written, taken before the rename.
 */
export function writeFileAtomicSync(path: string, data: string, options: WriteOptions = {}): FileStamp {
  const fsync = options.fsync ?? true
  const folder = dirname(path)
  const temp = tempPath(folder)
  const mode = options.mode ?? modeOf(statOrNothingSync(path))
  const fd = openSync(temp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, mode)
  let stamp: FileStamp
  try {
    writeAllSync(fd, Buffer.from(data, 'utf8'))
    if (fsync) fsyncSync(fd)
    stamp = toStamp(fstatSync(fd))
  } finally {
    closeSync(fd)
  }
  try {
    renameSync(temp, path)
  } catch (error) {
    rmSync(temp, { force: true })
    throw error
  }
  if (options.syncFolder ?? fsync) syncFolderSync(folder)
  return stamp
}

/** Unlinks still under way (see {@link removeLater}). */
const removing = new Set<Promise<void>>()

/**
 * Removes a file's name without the wait it may cost on the event loop: on
 * ext4 the unlink that drops a file's last name frees its blocks and waits
 * for its pending writes, which costs a hop more than all its other file
 * work. The name is first moved into `park` (a run folder; a rename that
 * replaces nothing costs no such wait), so it is gone from its own folder at
 * once, then unlinked in the thread pool after the synchronous work of the
 * moment. For the second name of a note's replaced version (see
 * `replaceNoteSync`). Where it cannot be moved (no `park`, another file
 * system) it is unlinked where it is, just as late. {@link replacedFilesFreed}
 * waits for these unlinks.
 */
export function removeLater(path: string, park?: string): void {
  let target = path
  if (park !== undefined) {
    try {
      const parked = tempPath(park)
      renameSync(path, parked)
      // A kill before the unlink leaves a temporary name in `park`, which the next call removes (removeStaleTempFiles).
      target = parked
    } catch {
      // unlinked where it is
    }
  }
  const done: Promise<void> = new Promise<void>((resolve) => setImmediate(resolve))
    .then(() => unlink(target))
    .catch(() => undefined)
    .finally(() => removing.delete(done))
  removing.add(done)
}

/** Waits until every {@link removeLater} is done, so no name it was given is left when a call returns. */
export async function replacedFilesFreed(): Promise<void> {
  while (removing.size > 0) await Promise.all([...removing])
}

/** Writes every byte of `buffer` at the file's current position (a write may be short). */
export function writeAllSync(fd: number, buffer: Uint8Array): void {
  for (let written = 0; written < buffer.length;) written += writeSync(fd, buffer, written, buffer.length - written)
}

/**
 * Reads a file with the synchronous calls only when it is a regular file of
 * at most `maxBytes`: it is looked at (`lstat`) before it is opened, opened
 * without blocking and without following a symlink, and looked at again
 * through its descriptor. A FIFO, a device, a symlink or a file too large is
 * never read here: the answer is `undefined` and the caller reads it the
 * slow way (or not at all). So a blocking read never stalls the event loop
 * (and the lock's refresh timer with it).
 *
 * @param listed - the caller has just listed the file as a regular one (the type `readdir` gives): the look
 *   before the open is skipped, a third of the cost of a small file's read. The open still never blocks nor
 *   follows a symlink, and the look through the descriptor still refuses anything but a regular file; what a
 *   swap after the listing could slip in is a device node, which only a privileged user can create.
 * @returns the text and the stamp of the version read (`complete` when all its bytes were), or `undefined`
 */
export function readRegularFileSync(path: string, maxBytes: number, listed = false): { text: string; stamp: FileStamp; complete: boolean } | undefined {
  const read = readRegularBytesSync(path, maxBytes, listed)
  return read && { text: utf8(read.bytes), stamp: read.stamp, complete: read.complete }
}

/** The text of UTF-8 `bytes` from byte `start` on (no copy of them is made). */
export function utf8(bytes: Uint8Array, start = 0): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset + start, bytes.byteLength - start).toString('utf8')
}

/**
 * {@link readRegularFileSync}, for a caller that compares the bytes before it decodes them.
 * (Typed as `Uint8Array`, which a `Buffer` is: the published types never name node's own.)
 */
export function readRegularBytesSync(path: string, maxBytes: number, listed = false): { bytes: Uint8Array; stamp: FileStamp; complete: boolean } | undefined {
  const info = listed ? undefined : statOrNothingSync(path, { link: true })
  if (!listed && (!info?.isFile() || info.size > maxBytes)) return undefined
  let fd: number
  try {
    fd = openSync(path, constants.O_RDONLY | constants.O_NONBLOCK | constants.O_NOFOLLOW)
  } catch {
    return undefined
  }
  try {
    // Replaced by something else between the look and the open: not ours to read here.
    const opened = fstatSync(fd)
    if (!opened.isFile() || (info && opened.ino !== info.ino) || opened.size > maxBytes) return undefined
    const buffer = Buffer.allocUnsafe(opened.size)
    let length = 0
    while (length < buffer.length) {
      const read = readSync(fd, buffer, length, buffer.length - length, length)
      if (read === 0) break
      length += read
    }
    // `complete`: every byte the stamp promised was read (not truncated meanwhile).
    return { bytes: buffer.subarray(0, length), stamp: toStamp(opened), complete: length === opened.size }
  } finally {
    closeSync(fd)
  }
}

/** The stamp of a file on disk (following symlinks), with the synchronous call (a stat never blocks on a FIFO). */
export function stampOfSync(path: string): FileStamp {
  return toStamp(statSync(path))
}

/** The stamp of the regular file at `path` (a symlink not followed), `undefined` for anything else or nothing there. */
export function regularStampSync(path: string): FileStamp | undefined {
  const info = statOrNothingSync(path, { link: true })
  return info?.isFile() ? toStamp(info) : undefined
}

/** {@link syncFolder} with the synchronous calls; `O_DIRECTORY` refuses anything but a folder. */
export function syncFolderSync(folder: string): void {
  const fd = openSync(folder, constants.O_RDONLY | constants.O_DIRECTORY)
  try {
    fsyncSync(fd)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EINVAL' && (error as NodeJS.ErrnoException).code !== 'EISDIR') throw error
  } finally {
    closeSync(fd)
  }
}

/** The stamp of a file on disk (following symlinks). */
export async function stampOf(path: string): Promise<FileStamp> {
  return toStamp(await stat(path))
}

/** Whether two stamps are of the same version of a file. */
export function sameStamp(a: FileStamp | undefined, b: FileStamp | undefined): boolean {
  return a !== undefined && b !== undefined && a.mtimeMs === b.mtimeMs && a.size === b.size && a.ino === b.ino
}

/** The stamp of a file from its stat. */
export function toStamp(info: { mtimeMs: number; size: number; ino: number; mode: number }): FileStamp {
  return { mtimeMs: info.mtimeMs, size: info.size, ino: info.ino, mode: info.mode & 0o7777 }
}

/** Flushes a folder's entries (a rename or a new file) to the disk. */
export async function syncFolder(folder: string): Promise<void> {
  const handle = await open(folder, 'r')
  try {
    await handle.sync()
  } catch (error) {
    // Some file systems cannot fsync a directory; the data itself is already flushed.
    if ((error as NodeJS.ErrnoException).code !== 'EINVAL' && (error as NodeJS.ErrnoException).code !== 'EISDIR') throw error
  } finally {
    await handle.close()
  }
}

/**
 * Makes a folder and the folders missing on the way (`mkdir -p`); with
 * `fsync` (default true), flushes the name of each new one in the folder
 * above it, so the files later flushed into it are not lost with it at a
 * power cut.
 *
 * @returns the first folder it made (the one nearest the root), `undefined` when all were there
 */
export async function makeFolder(folder: string, options: Pick<WriteOptions, 'fsync'> = {}): Promise<string | undefined> {
  const created = await mkdir(folder, { recursive: true })
  if (!(options.fsync ?? true) || created === undefined) return created
  for (let made = folder; made !== dirname(created); made = dirname(made)) await syncFolder(dirname(made))
  return created
}

/**
 * Flushes every file and folder under `folder`, and `folder` itself, to the
 * disk (symlinks are not followed): a tree written without flushes, such as
 * a copy, is whole on the disk before it is renamed into place.
 */
export async function syncTree(folder: string): Promise<void> {
  for (const entry of await readdir(folder, { withFileTypes: true })) {
    const path = join(folder, entry.name)
    if (entry.isDirectory()) await syncTree(path)
    else if (entry.isFile()) {
      const handle = await open(path, 'r')
      try {
        await handle.sync()
      } finally {
        await handle.close()
      }
    }
  }
  await syncFolder(folder)
}

/**
 * Removes temporary files left in a folder by a write that a crash interrupted.
 *
 * @param names - the folder's entries, when the caller has just listed it (it is not listed again)
 */
export async function removeStaleTempFiles(folder: string, names?: readonly string[]): Promise<void> {
  let entries: readonly string[]
  try {
    entries = names ?? (await readdir(folder))
  } catch {
    return
  }
  await Promise.all(entries.filter((name) => name.startsWith(TEMP_PREFIX)).map((name) => rm(join(folder, name), { force: true })))
}

/** Whether `path` is `root` or below it. */
export function isInside(root: string, path: string): boolean {
  const rel = relative(root, path)
  return rel === '' || (!rel.startsWith(`..${sep}`) && rel !== '..' && !rel.startsWith(sep) && !/^[a-zA-Z]:/.test(rel))
}

/**
 * Checks that `dir` is a folder that can be read.
 *
 * @throws {@link VaultPathError} naming `dir` and what is wrong with it
 */
export async function assertFolder(dir: string, shownAs = dir): Promise<void> {
  let info
  try {
    // Synchronous: a stat never blocks on what it looks at, and every call of the library looks first.
    info = statSync(dir)
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    if (code === 'ENOENT')
      throw new VaultPathError('vault-missing', `\`${shownAs}\` does not exist; pass the folder that holds the plan's notes`, { cause: error })
    throw new VaultPathError('vault-unreadable', `cannot read \`${shownAs}\`: ${(error as Error).message}`, { cause: error })
  }
  if (!info.isDirectory()) throw new VaultPathError('vault-not-folder', `\`${shownAs}\` is not a folder; pass the folder that holds the plan's notes`)
}
