import { hostname } from 'node:os'
import { readdirSync, readFileSync, realpathSync, rmdirSync, type Dirent, type Stats } from 'node:fs'
import { realpath, rename, rm } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import lockfile from 'proper-lockfile'
import { sleep } from '../core/abort.js'
import { RunStateError, type LockHolder } from '../core/errors.js'
import { KeyedMutex } from '../core/keyed-mutex.js'
import { isInside, sameStamp, toStamp, type FileStamp } from './fs-atomic.js'
import { lockFs, removeUnbornLocks } from './lock-fs.js'
import { HOLDER_FILE, isAlive, isThisProcess, parseHolder, readHolder, readHolderSync, removeOldHolder } from './lock-holder.js'
import { runFolder } from './run-file-path.js'
import { TRACE_FOLDER } from './run-folder.js'
import { statOrNothing, statOrNothingSync } from './stat-or-nothing.js'

/** A held vault lock. */
export interface VaultLock {
  /** Throws when the lock was lost (another process took it over): the run must stop writing. */
  check(): void
  release(): Promise<void>
}

/** A runner that holds a vault's lock. */
export type Holder = LockHolder

/** A lock of another machine counts as gone when it has not been refreshed for this long. */
const STALE_MS = 10_000
/** How often a runner refreshes its lock. */
const UPDATE_MS = 1_000
/** What proper-lockfile is told: its own takeover of old locks never happens; ours checks the holder first. */
const NEVER_STALE_MS = 24 * 60 * 60 * 1000
/** A lock on this machine with no live holder is abandoned once it has not been refreshed for this long. */
const ORPHAN_MS = 3_000

/** Options of {@link lockVault}. */
export interface LockOptions {
  /**
   * How long a lock of this machine whose holder is dead (or never named itself) must go unrefreshed
   * before it is taken over; more than the 1 s refresh. `VAULTPLAN_LOCK_ORPHAN_MS` sets it for a process.
   *
   * @default 3000
   */
  orphanMs?: number
}

/** The orphan time of `options`, else of the environment, else the default; checked. */
function orphanTime(options: LockOptions): number {
  const raw = options.orphanMs ?? process.env.VAULTPLAN_LOCK_ORPHAN_MS
  if (raw === undefined || raw === '') return ORPHAN_MS
  const value = Number(raw)
  if (!Number.isSafeInteger(value) || value <= UPDATE_MS) {
    throw new TypeError(
      `Expected the lock's orphan time (\`orphanMs\` or VAULTPLAN_LOCK_ORPHAN_MS) to be a whole number of milliseconds over ${UPDATE_MS}, the refresh interval, got \`${String(raw)}\``,
    )
  }
  return value
}

/** Real paths of the vaults whose lock this process holds now. */
const heldHere = new Set<string>()

/**
 * Whether this process holds the runner lock of `vault` (a `runPlan` or a
 * stepping call of this process is writing into it), so a write that
 * belongs to that run (a ledger entry from inside a worker) may go ahead
 * without taking the lock again.
 */
export async function heldByThisProcess(vault: string): Promise<boolean> {
  return heldHere.has(await realpath(vault).catch(() => vault))
}

/** Each vault's calls in this process, one after the other. */
const calls = new KeyedMutex()

/**
 * Runs `fn` holding the vault's runner lock. Calls in this process are
 * serialized per vault (an MCP server or a queue worker is never refused by
 * its own lock); a runner in another process makes it fail with
 * `RunStateError` `vault-locked`.
 */
export async function withVaultLock<T>(vault: string, fn: (lock: VaultLock) => Promise<T>): Promise<T> {
  return calls.run(realOrSame(vault), async () => {
    const lock = await lockVault(vault)
    try {
      return await fn(lock)
    } finally {
      await lock.release()
    }
  })
}

/**
 * Takes the vault's runner lock, so that one `runPlan` at a time writes into
 * it. A lock nobody refreshes any more (its runner was killed) is taken over
 * after 3 s on this machine, after 10 s from another one.
 *
 * @throws {@link RunStateError} (`vault-locked`) naming the holder when another runner is active.
 */
export async function lockVault(vault: string, options: LockOptions = {}): Promise<VaultLock> {
  const orphanMs = orphanTime(options)
  // A run folder made only for the lock goes with it when the call wrote nothing else (a refused call leaves no folder).
  const made = statOrNothingSync(join(vault, TRACE_FOLDER)) === undefined
  // A file or a symlink in the run folder's place is refused before anything is written through it.
  const folder = runFolder(vault, TRACE_FOLDER)
  const lockPath = join(folder, '.lock')
  // Born with the lock folder, inside it (see lockFs): the lock never exists without naming its holder.
  const holderPath = join(lockPath, HOLDER_FILE)
  let lost: Error | undefined
  /** Who took the lock over, when its holder file names them. */
  let lostTo: Holder | null = null
  const lockOptions = {
    lockfilePath: lockPath,
    realpath: false,
    // Never taken over by proper-lockfile's own age check: whether the holder is gone is decided below, holder first.
    stale: NEVER_STALE_MS,
    update: UPDATE_MS,
    fs: lockFs,
    onCompromised: (error: Error) => {
      lost = error
    },
  }
  let taken: () => Promise<void>
  try {
    taken = await lockfile.lock(vault, lockOptions)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'ELOCKED') throw error
    const holder = await readHolder(folder)
    const refused = (who: string) =>
      new RunStateError(
        'vault-locked',
        `The vault \`${vault}\` is being run by ${who}. Wait for it to finish, or stop it; a lock left by a killed process is taken over once it is ${orphanMs / 1000} s old.`,
        { vault, holder: holder ?? null },
        { cause: error },
      )
    const named = holder ? `process ${holder.pid} on ${holder.host}, since ${holder.since}` : 'another process'
    // A live holder on this machine keeps its lock however long it was paused (SIGSTOP, swapping, a blocked event loop).
    if (holder && holder.host === hostname() && isAlive(holder.pid)) throw refused(named)
    // Another machine's runner is gone once its lock has not been refreshed for STALE_MS; a runner of this machine
    // that died, or a lock naming nobody (an earlier version's, killed before it named itself), once the orphan time
    // passed without a refresh.
    const age = holder && holder.host !== hostname() ? STALE_MS : orphanMs
    taken = await takeOverAbandoned(
      lockPath,
      age,
      () => lockfile.lock(vault, lockOptions),
      () => refused(named),
    )
  }
  const release = async () => {
    await taken().catch(() => undefined)
    // Only an empty folder goes: a call that wrote its trace keeps it.
    if (made) rmdirIfEmpty(folder)
  }
  // The lock's own small files and folders are written and looked at with the synchronous calls: a stepping call takes the lock every time.
  let confirmed = stampOrNothing(holderPath)
  const ours = readHolderNow(holderPath) ?? ''
  removeUnbornLocks(lockPath)
  const real = realpathSync.native(vault)
  // Checked once this lock is held, so of two runners started together on nested folders neither misses the other.
  const nested = nestedRunner(real)
  if (nested) {
    await release()
    throw new RunStateError(
      'vault-locked',
      `The vault \`${vault}\` ${nested.above ? 'is inside' : 'holds'} \`${nested.vault}\`, which ` +
        `is being run by process ${nested.holder.pid} on ${nested.holder.host}, since ${nested.holder.since}; ` +
        `both would write the same notes. Wait for it to finish, or stop it.`,
      { vault: nested.vault, holder: nested.holder },
    )
  }
  heldHere.add(real)
  return {
    check() {
      if (lost) throw new RunStateError('vault-lock-lost', `Lost the lock of \`${vault}\`: ${lost.message}`, { vault, holder: lostTo }, { cause: lost })
      // Looked at each time, not only when the refresh timer runs: a runner paused past a takeover must not write on waking.
      // A takeover renames a new holder file into place (another inode), so the version we wrote needs a stat, not a read.
      const stamp = stampOrNothing(holderPath)
      if (sameStamp(stamp, confirmed)) return
      const now = readHolderNow(holderPath)
      if (now === ours) confirmed = stamp
      else {
        lost = new Error(now === undefined ? 'its holder file is gone' : `it is held by ${now.trim()} now`)
        lostTo = (now === undefined ? undefined : parseHolder(now)) ?? null
        throw new RunStateError(
          'vault-lock-lost',
          `Lost the lock of \`${vault}\`: ${lost.message}. Nothing more is written; run the vault again once the other run is done.`,
          { vault, holder: lostTo },
        )
      }
    },
    async release() {
      heldHere.delete(real)
      // The lock folder goes with its holder record; a runner that lost its lock leaves the new holder's in place (lockFs).
      await release()
    },
  }
}

/** Removes `folder` when it is empty; any other is left as it is. */
function rmdirIfEmpty(folder: string): void {
  try {
    rmdirSync(folder)
  } catch {
    // Not empty (the call wrote into it), or gone: left as it is.
  }
}

/**
 * Who runs in the vault now: the holder of a lock held by a live process on
 * this machine, or refreshed lately by one on another (a holder whose name
 * file is gone is told as pid 0).
 */
export async function vaultHolder(vault: string): Promise<Holder | undefined> {
  const folder = join(vault, TRACE_FOLDER)
  const locked = await lockfile.check(vault, { lockfilePath: join(folder, '.lock'), realpath: false, stale: STALE_MS }).catch(() => false)
  if (!locked) return undefined
  const holder = await readHolder(folder)
  if (!holder) return { pid: 0, host: '', since: '' }
  return holder.host !== hostname() || isAlive(holder.pid) ? holder : undefined
}

function stampOrNothing(path: string): FileStamp | undefined {
  const info = statOrNothingSync(path)
  return info && toStamp(info)
}

/** The holder file as it is on disk now: a small regular file of our own, read synchronously. */
function readHolderNow(path: string): string | undefined {
  try {
    return readFileSync(path, 'utf8')
  } catch {
    return undefined
  }
}

/**
 * Waits (a few seconds at most) for a lock nobody refreshes to age past
 * `age`, then takes it. The abandoned lock is moved aside by one rename,
 * which only one of several runners racing for it can do; the others find
 * the fresh lock of the winner and are refused.
 */
async function takeOverAbandoned(lockPath: string, age: number, lock: () => Promise<() => Promise<void>>, refused: () => Error): Promise<() => Promise<void>> {
  const deadline = Date.now() + age + 2 * UPDATE_MS
  for (;;) {
    const info = await statOrNothing(lockPath)
    if (!info || Date.now() - info.mtimeMs > age) {
      const aside = `${lockPath}.abandoned-${process.pid}-${Date.now()}`
      const moved = info ? await moveAsideUnchanged(lockPath, info, aside) : true
      if (!moved) throw refused()
      // A look at the lock that was old by the time of the rename may have moved the lock a faster runner just took: put that one back.
      if (await movedLive(aside, age)) {
        await rename(aside, lockPath).catch(() => rm(aside, { recursive: true, force: true }))
        throw refused()
      }
      await rm(aside, { recursive: true, force: true })
      // The name an earlier version's runner left beside its lock goes with it.
      await removeOldHolder(dirname(lockPath))
      try {
        return await lock()
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === 'ELOCKED') throw refused()
        throw error
      }
    }
    if (Date.now() > deadline) throw refused()
    await sleep(UPDATE_MS / 4)
  }
}

/**
 * Moves the lock at `lockPath` aside to `aside` when it is still the one
 * `looked` saw: looked at again just before the rename, so a look that was
 * answered late never moves the lock a live runner has taken since (its
 * next check would find its lock gone, and stop).
 *
 * @returns whether it was moved; `false` when the lock changed or went, or the rename failed
 */
async function moveAsideUnchanged(lockPath: string, looked: Stats, aside: string): Promise<boolean> {
  const now = statOrNothingSync(lockPath)
  if (!now || !sameStamp(toStamp(now), toStamp(looked))) return false
  return rename(lockPath, aside).then(
    () => true,
    () => false,
  )
}

/** Whether the lock moved aside to `aside` had been refreshed within `age`: a live runner's, not the abandoned one. */
async function movedLive(aside: string, age: number): Promise<boolean> {
  const info = await statOrNothing(aside)
  return info !== undefined && Date.now() - info.mtimeMs <= age
}

/**
 * Removes the lock a runner gone for good left in `folder` (a subplan's run
 * folder, below a vault whose run completed: a killed run leaves the lock
 * and holder file of each subplan it had open, and a run that completes
 * without entering them again never takes those over). A lock is removed
 * only when a takeover would take it: its holder is a process of this
 * machine that is gone, or of another machine and not refreshed for 10 s,
 * or unnamed and not refreshed for the orphan time; never one this process
 * holds, nor one refreshed meanwhile. Call it holding the lock of a vault
 * above `folder`, so no runner of another process can keep one there.
 *
 * @returns whether `folder` is free of any lock now
 */
export async function clearAbandonedLock(folder: string): Promise<boolean> {
  const trace = join(folder, TRACE_FOLDER)
  const lockPath = join(trace, '.lock')
  // What a runner killed while it made a lock there left (it never held it).
  removeUnbornLocks(lockPath)
  const info = await statOrNothing(lockPath)
  if (!info) return true
  if (heldHere.has(await realpath(folder).catch(() => folder))) return false
  const holder = await readHolder(trace)
  const age = Date.now() - info.mtimeMs
  const gone = holder ? (holder.host === hostname() ? !isAlive(holder.pid) && age > UPDATE_MS : age > STALE_MS) : age > orphanTime({})
  if (!gone) return false
  const aside = `${lockPath}.abandoned-${process.pid}-${Date.now()}`
  if (!(await moveAsideUnchanged(lockPath, info, aside))) return false
  // A runner that refreshed (or took over) the lock between the look and the rename keeps it.
  if (((await statOrNothing(aside))?.mtimeMs ?? 0) > info.mtimeMs) {
    await rename(aside, lockPath).catch(() => rm(aside, { recursive: true, force: true }))
    return false
  }
  await rm(aside, { recursive: true, force: true })
  await removeOldHolder(trace)
  return true
}

/**
 * A runner of another process in a vault that holds this one (a folder
 * above it) or that this one holds (a folder below it): both would write
 * the same notes. A folder above costs a look per level; a folder below, a
 * listing of the vault's folders (not its notes). This process's own
 * runners (a top runner running its subplans) are no conflict.
 */
function nestedRunner(real: string): { vault: string; holder: Holder; above: boolean } | undefined {
  const live = (folder: string) => {
    const lock = statOrNothingSync(join(folder, TRACE_FOLDER, '.lock'))
    if (!lock) return undefined
    const holder = readHolderSync(join(folder, TRACE_FOLDER))
    if (!holder || isThisProcess(holder)) return undefined
    const alive = holder.host === hostname() ? isAlive(holder.pid) : Date.now() - lock.mtimeMs <= STALE_MS
    return alive ? { vault: folder, holder, above: isInside(folder, real) } : undefined
  }
  for (let folder = dirname(real); folder !== dirname(folder); folder = dirname(folder)) {
    const found = live(folder)
    if (found) return found
  }
  const below = (folder: string): { vault: string; holder: Holder; above: boolean } | undefined => {
    const entries = listFolders(folder)
    for (const entry of entries) {
      // Dot-folders and run folders hold no notes of a plan; symlinked folders are not walked by the loader either.
      if (!entry.isDirectory() || entry.name.startsWith('.') || entry.name === TRACE_FOLDER) continue
      const path = join(folder, entry.name)
      const found = live(path) ?? below(path)
      if (found) return found
    }
    return undefined
  }
  return below(real)
}

/** A folder's entries with their types, none when it cannot be listed. */
function listFolders(folder: string): Dirent[] {
  try {
    return readdirSync(folder, { withFileTypes: true })
  } catch {
    return []
  }
}

/** The real path of `path`, or `path` itself when it has none (gone). */
function realOrSame(path: string): string {
  try {
    return realpathSync.native(path)
  } catch {
    return path
  }
}
