import { mkdirSync, readdirSync, readFileSync, realpathSync, renameSync, rmdirSync, rmSync, statSync, unlinkSync, utimesSync, writeFileSync } from 'node:fs'
import { basename, dirname, join } from 'node:path'
import { HOLDER_FILE, holderRecord, isAlive, isThisProcess, parseHolder } from './lock-holder.js'
import { statOrNothingSync } from './stat-or-nothing.js'

type Done = (error: NodeJS.ErrnoException | null, value?: unknown) => void

/** Where a lock folder is made before it is renamed into place, with its holder record inside: `.lock.new-<pid>`. */
const NEW_LOCK = '.new-'

/**
 * The file calls proper-lockfile makes on a vault's lock folder (its `fs`
 * option), done with the synchronous calls and answered on the next tick,
 * as its callbacks expect. A stepping call takes and releases the lock
 * every time; a folder's `mkdir`, `stat`, `utimes` or `rmdir` never blocks
 * on what it looks at, while a turn of the thread pool for each cost more
 * than the call itself. One object for the process: the library keeps what
 * it learnt of the file system's time precision on it.
 *
 * The lock folder is born holding its holder record ({@link makeLock}), and
 * a release takes the record away with it ({@link removeLock}): there is no
 * moment at which the lock exists and does not name the runner holding it,
 * so a runner stopped right after it took the lock is never taken for a
 * dead one.
 */
export const lockFs = {
  mkdir: (path: string, done: Done) => answer(done, () => makeLock(path)),
  stat: (path: string, done: Done) => answer(done, () => statSync(path)),
  utimes: (path: string, atime: Date, mtime: Date, done: Done) => answer(done, () => utimesSync(path, atime, mtime)),
  rmdir: (path: string, done: Done) => answer(done, () => removeLock(path)),
  rmdirSync: (path: string) => removeLock(path),
  realpath: (path: string, done: Done) => answer(done, () => realpathSync(path)),
}

/**
 * Makes the lock folder `path` with this process's holder record inside, in
 * one step: the folder is made beside it under a name of this process's,
 * the record written into it, and the folder renamed into place. A rename
 * would replace an empty folder, so a lock already there (one of an earlier
 * version holds no record) is looked for first; a non-empty one refuses
 * the rename. Either way the answer is `EEXIST`, as `mkdir`'s.
 */
function makeLock(path: string): void {
  const made = `${path}${NEW_LOCK}${process.pid}`
  // A folder of this pid's is a killed process's (this one makes and renames its own in one synchronous go).
  rmSync(made, { recursive: true, force: true })
  try {
    mkdirSync(made)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    // The run folder went meanwhile (a refused call of another process removed the one it made): made again.
    mkdirSync(dirname(path))
    mkdirSync(made)
  }
  try {
    writeFileSync(join(made, HOLDER_FILE), holderRecord(), { flag: 'wx' })
    if (statOrNothingSync(path) !== undefined) throw exists(path)
    try {
      renameSync(made, path)
    } catch (error) {
      // Another runner's lock came first (ENOTEMPTY, EEXIST; EPERM on Windows, which renames no folder over another).
      throw statOrNothingSync(path) === undefined ? error : exists(path)
    }
  } catch (error) {
    rmSync(made, { recursive: true, force: true })
    throw error
  }
}

/**
 * Removes the lock folder `path` with its holder record, when the record
 * names this process; a lock another runner holds now (it took this one's
 * over) keeps its record, so the folder stays (`ENOTEMPTY`).
 */
function removeLock(path: string): void {
  const record = join(path, HOLDER_FILE)
  const text = readOrNothing(record)
  if (text !== undefined && isThisProcess(parseHolder(text))) unlinkSync(record)
  rmdirSync(path)
}

function readOrNothing(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * Removes the folders beside the lock `path` that runners killed while making
 * a lock left (`.lock.new-<pid>` of a process no longer alive here).
 */
export function removeUnbornLocks(path: string): void {
  const prefix = `${basename(path)}${NEW_LOCK}`
  let names: string[]
  try {
    names = readdirSync(dirname(path))
  } catch {
    return
  }
  for (const name of names) {
    if (!name.startsWith(prefix)) continue
    const pid = Number(name.slice(prefix.length))
    if (Number.isSafeInteger(pid) && pid !== process.pid && !isAlive(pid)) rmSync(join(dirname(path), name), { recursive: true, force: true })
  }
}

/** An `EEXIST` error for `path`, as `mkdir` gives. */
function exists(path: string): NodeJS.ErrnoException {
  return Object.assign(new Error(`EEXIST: file already exists, mkdir '${path}'`), { code: 'EEXIST', path, syscall: 'mkdir' })
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
