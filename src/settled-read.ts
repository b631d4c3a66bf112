import { setTimeout as sleep } from 'node:timers/promises'
import { sameStamp, type FileStamp } from './fs-atomic.js'

/**
 * How long a note must have been left alone before a read of it is trusted.
 * An editor that saves in place (Obsidian, VS Code, `cp`, `git checkout`)
 * truncates the file and then writes it: a read in between finds it empty
 * or half written, with a change time of a moment ago.
 */
export const SETTLE_MS = 100
/** How long a note may keep changing before the read gives up (`busy`). */
export const MAX_SETTLE_MS = 3_000

/** One read of a file: what it found, the stamp it was read under, and whether every byte the stamp promised came. */
export interface FileRead<T> {
  value: T
  stamp: FileStamp
  complete: boolean
}

/**
 * Reads a file until the read is of a settled version, so that nothing is
 * written from, or acted on, a note caught between an editor's truncate and
 * its write. A read is settled when it got every byte its stamp promised
 * and the file had not changed for {@link SETTLE_MS} (its modification time
 * is older, or two reads that far apart found the same stamp, which also
 * covers a clock that runs behind the file system's). A complete read that
 * `suspect` does not doubt is trusted at once: the loader doubts only an
 * empty note, a running session every note that changed since it last
 * looked (it was saved a moment ago, or it would not have been re-read).
 * So most reads cost nothing more, and a note saved a moment ago a wait of
 * the window.
 *
 * @param read - one read; `undefined` when there is nothing to read (no file, not a regular one)
 * @param suspect - whether a complete read may be a torn one (the default: any read may)
 * @returns the settled read's value, `undefined` as `read` said, or `busy` when the file kept changing for {@link MAX_SETTLE_MS}
 */
export async function readSettled<T>(
  read: () => Promise<FileRead<T> | undefined> | FileRead<T> | undefined,
  suspect: (found: FileRead<T>) => boolean = () => true,
): Promise<T | undefined | 'busy'> {
  const started = Date.now()
  let previous: FileStamp | undefined
  for (;;) {
    const found = await read()
    if (found === undefined) return undefined
    const now = Date.now()
    if (found.complete && (!suspect(found) || now - found.stamp.mtimeMs >= SETTLE_MS || sameStamp(previous, found.stamp))) return found.value
    if (now - started >= MAX_SETTLE_MS) return 'busy'
    previous = found.complete ? found.stamp : undefined
    await sleep(SETTLE_MS)
  }
}
