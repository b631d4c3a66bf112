import { readRegularFileSync, sameStamp, stampOfSync, type FileStamp } from './fs-atomic.js'

/** The version of a note file a session holds: its stamp and text, and when that stamp was last confirmed with the bytes. */
export interface HeldVersion {
  stamp: FileStamp | undefined
  text: string | undefined
  /** `Date.now()` taken before the stamp was last compared with the file; `undefined` for a version we wrote ourselves. */
  checkedAt: number | undefined
}

/**
 * A stamp confirmed less than this long after the file's last write cannot
 * tell a second write of equal size in the same clock tick (file times are
 * coarse: a few ms on Linux, 2 s on FAT; a shared file system's server
 * clock may differ a little from ours): such a file is compared by its bytes.
 */
export const RACY_MS = 2000

/**
 * Whether the file at `path` is still the version held: its stamp is the
 * same and was confirmed long enough after the file's last write, or,
 * while the stamp cannot tell yet, its bytes are the same (git's "racy"
 * rule). Never trusts a watcher, so it also sees edits made by another
 * process or machine.
 */
export function isHeldVersion(path: string, held: HeldVersion): boolean {
  let stamp: FileStamp
  try {
    stamp = stampOfSync(path)
  } catch {
    return false
  }
  if (!sameStamp(stamp, held.stamp)) return false
  if (held.checkedAt !== undefined && held.checkedAt - stamp.mtimeMs > RACY_MS) return true
  const read = readRegularFileSync(path, MAX_SYNC_READ)
  return read !== undefined && sameStamp(read.stamp, stamp) && read.text === held.text
}

/** Notes up to this size are compared with the synchronous calls (the loader's limit of a note). */
const MAX_SYNC_READ = 8 * 1024 * 1024
