import { mkdir, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'

/** A runner named by a lock: its process, machine and start. */
export interface PlantedHolder {
  pid: number
  host: string
  since: string
}

/**
 * Leaves in `vault` the lock a runner of another process would: the folder
 * `00_plan-trace/.lock`, naming `holder` inside it as this version does, or
 * beside it (`beside: true`) as an earlier version did; last refreshed
 * `ageMs` ago (now by default).
 *
 * @returns the lock folder's path
 */
export async function plantLock(vault: string, holder: PlantedHolder | undefined, options: { beside?: boolean; ageMs?: number } = {}): Promise<string> {
  const lock = join(vault, '00_plan-trace/.lock')
  await mkdir(lock, { recursive: true })
  if (holder) await writeFile(options.beside ? join(vault, '00_plan-trace/.lock-holder.json') : join(lock, 'holder.json'), JSON.stringify(holder))
  if (options.ageMs) {
    const refreshed = new Date(Date.now() - options.ageMs)
    await utimes(lock, refreshed, refreshed)
  }
  return lock
}
