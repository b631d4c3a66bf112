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
 * tell a second write of equal size in the same clock tick, on a file system
 * that keeps whole seconds (2 s on FAT, 1 s on HFS+ and ext3): such a file is
 * compared by its bytes.
 */
export const RACY_MS = 2000

/**
 * {@link RACY_MS} for a file whose time has a part of a second: its file
 * system keeps fine times, and a write takes its time from a clock that
 * ticks at least every 16 ms (Linux's coarse clock: 10 ms at most; Windows:
 * 15.6 ms); the rest is margin, also for a shared file system's server clock
 * that differs a little from ours.
 */
export const FINE_RACY_MS = 50

/**
 * Whether a file's stamp, confirmed with its bytes at `checkedAt`
 * (`Date.now()` taken before the look), tells every later write: the look
 * came long enough after the file's last write that a second write gets
 * another time (git's "racy" rule). Decided by the stamp itself: a time with
 * a part of a second comes from a file system that keeps fine times (a
 * coarse one never stores one); a time in whole seconds may come from
 * either, and waits the long window.
 */
export function stampTells(stamp: FileStamp, checkedAt: number | undefined): boolean {
  if (checkedAt === undefined) return false
  return checkedAt - stamp.mtimeMs > (stamp.mtimeMs % 1000 === 0 ? RACY_MS : FINE_RACY_MS)
}

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
  if (stampTells(stamp, held.checkedAt)) return true
  const read = readRegularFileSync(path, MAX_SYNC_READ)
  return read !== undefined && sameStamp(read.stamp, stamp) && read.text === held.text
}

/** Notes up to this size are compared with the synchronous calls (the loader's limit of a note). */
const MAX_SYNC_READ = 8 * 1024 * 1024
