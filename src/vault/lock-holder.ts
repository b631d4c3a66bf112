import { hostname } from 'node:os'
import { readFile, rm } from 'node:fs/promises'
import { join } from 'node:path'
import type { LockHolder } from '../core/errors.js'
import { readRegularFileSync } from './fs-atomic.js'

/*
 * Who holds a vault's lock: the record a runner's lock folder is born with
 * (`00_plan-trace/.lock/holder.json`, one JSON line), read back by the
 * runners it keeps out, the snapshot and the lock's own checks.
 */

/** The holder record's name inside a lock folder. */
export const HOLDER_FILE = 'holder.json'
/** Where a runner of an earlier version named itself: beside its lock folder, written just after it. */
const OLD_HOLDER_FILE = '.lock-holder.json'
/** A holder record is one short line; anything longer is not one. */
const HOLDER_BYTES = 4096

/** The holder record of this process, as a lock folder it makes holds it. */
export function holderRecord(): string {
  return `${JSON.stringify({ pid: process.pid, host: hostname(), since: new Date().toISOString() })}\n`
}

/** The holder a record's text names (its three fields only: it is handed on in errors), or `undefined`. */
export function parseHolder(text: string): LockHolder | undefined {
  try {
    const { pid, host, since } = JSON.parse(text) as Partial<LockHolder>
    return typeof pid === 'number' ? { pid, host: String(host), since: String(since) } : undefined
  } catch {
    return undefined
  }
}

/** Whether `holder` is this process on this machine. */
export function isThisProcess(holder: LockHolder | undefined): boolean {
  return holder !== undefined && holder.pid === process.pid && holder.host === hostname()
}

/** Whether a process `pid` runs on this machine (EPERM: it does, as someone else's). */
export function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM'
  }
}

/**
 * The holder of the lock in the run folder `folder`: the record inside the
 * lock folder, else (a lock of an earlier version) the one beside it.
 */
export async function readHolder(folder: string): Promise<LockHolder | undefined> {
  const text = await readFile(join(folder, '.lock', HOLDER_FILE), 'utf8').catch(() => readFile(join(folder, OLD_HOLDER_FILE), 'utf8').catch(() => undefined))
  return text === undefined ? undefined : parseHolder(text)
}

/**
 * {@link readHolder} of another runner's lock, synchronously, reading each
 * record only if it is a small regular file (never blocks, whatever was put there).
 */
export function readHolderSync(folder: string): LockHolder | undefined {
  const read = readRegularFileSync(join(folder, '.lock', HOLDER_FILE), HOLDER_BYTES) ?? readRegularFileSync(join(folder, OLD_HOLDER_FILE), HOLDER_BYTES)
  return read === undefined ? undefined : parseHolder(read.text)
}

/** Removes the record an earlier version's runner left beside its lock in the run folder `folder` (its lock gone with it). */
export async function removeOldHolder(folder: string): Promise<void> {
  await rm(join(folder, OLD_HOLDER_FILE), { force: true })
}
