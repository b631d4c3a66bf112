import { mkdirSync, realpathSync, rmdirSync, statSync, utimesSync } from 'node:fs'

type Done = (error: NodeJS.ErrnoException | null, value?: unknown) => void

/**
 * The file calls proper-lockfile makes on a vault's lock folder (its `fs`
 * option), done with the synchronous calls and answered on the next tick,
 * as its callbacks expect. A stepping call takes and releases the lock
 * every time; a folder's `mkdir`, `stat`, `utimes` or `rmdir` never blocks
 * on what it looks at, while a turn of the thread pool for each cost more
 * than the call itself. One object for the process: the library keeps what
 * it learnt of the file system's time precision on it.
 */
export const lockFs = {
  mkdir: (path: string, done: Done) => answer(done, () => mkdirSync(path)),
  stat: (path: string, done: Done) => answer(done, () => statSync(path)),
  utimes: (path: string, atime: Date, mtime: Date, done: Done) => answer(done, () => utimesSync(path, atime, mtime)),
  rmdir: (path: string, done: Done) => answer(done, () => rmdirSync(path)),
  rmdirSync: (path: string) => rmdirSync(path),
  realpath: (path: string, done: Done) => answer(done, () => realpathSync(path)),
}

/** Calls `call` now and `done` on the next tick with its error or its value. */
function answer(done: Done, call: () => unknown): void {
  let value: unknown
  try {
    value = call()
  } catch (error) {
    process.nextTick(done, error as NodeJS.ErrnoException)
    return
  }
  process.nextTick(done, null, value)
}
