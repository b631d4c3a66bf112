import { readFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { dirname, join, sep } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { RunStateError, runPlan } from 'vaultplan'
import { isThisProcess, readHolderSync } from '../src/vault/lock-holder.js'
import { plantLock } from './helpers/locks.js'
import { until } from './helpers/until.js'
import { writeVault } from './helpers/vault.js'

/**
 * The second look at the lock's age is answered late, with what it found
 * when it asked: that runner saw the abandoned lock, and acts on it only
 * once the first runner took it over (its holder record names this
 * process: the worst interleavings of two processes started together).
 */
const race = vi.hoisted(() => ({ on: false, looks: 0, gone: false, works: 0, refusals: 0 }))

vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>()
  const stat = (async (...args: Parameters<typeof actual.stat>) => {
    const found = actual.stat(...args)
    if (!race.on || !String(args[0]).endsWith(`${sep}00_plan-trace${sep}.lock`)) return found
    const late = race.looks++ === 1
    const info = await found
    if (late) await until(() => isThisProcess(readHolderSync(dirname(String(args[0])))), 'the first runner to take the lock over')
    // `gone`: the late look came in the instant the first runner had moved the old lock aside and not yet made its own.
    if (late && race.gone) throw Object.assign(new Error(`ENOENT: no such file or directory, stat '${String(args[0])}'`), { code: 'ENOENT' })
    return info
  }) as typeof actual.stat
  // A live lock moved aside stays aside until the runner holding it has worked or been refused: what it sees of its lock meanwhile decides.
  const rename = (async (...args: Parameters<typeof actual.rename>) => {
    const live = race.on && String(args[0]).endsWith(`${sep}00_plan-trace${sep}.lock`) && isThisProcess(readHolderSync(dirname(String(args[0]))))
    await actual.rename(...args)
    if (live) await until(() => race.works + race.refusals > 0, 'the runner holding the lock to work or be refused')
  }) as typeof actual.rename
  return { ...actual, stat, rename, default: { ...actual, stat, rename } }
})

describe('two runners on an abandoned lock, the second acting on an old look at it', () => {
  it('exactly one takes it and works the hop once; the other is refused naming the vault', async () => {
    const { outcomes, works, trace } = await raceOnAbandonedLock(false)
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected'])
    const refused = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult
    expect(refused.reason).toBeInstanceOf(RunStateError)
    expect(refused.reason).toMatchObject({ code: 'vault-locked' })
    expect(works).toBe(1)
    expect(trace.match(/^## Step /gm)).toHaveLength(1)
  })

  it('the other, having found no lock at all, loses the race to make one: a RunStateError naming the vault, never a raw ELOCKED', async () => {
    const { outcomes, works } = await raceOnAbandonedLock(true)
    const refused = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult
    expect(refused.reason).toBeInstanceOf(RunStateError)
    expect(refused.reason).toMatchObject({ code: 'vault-locked', message: expect.stringContaining('is being run by') })
    expect(outcomes.filter((outcome) => outcome.status === 'fulfilled')).toHaveLength(1)
    expect(works).toBe(1)
  })
})

/** Two runs started together on a vault whose lock a killed runner left, the second one's look at the lock answered late. */
async function raceOnAbandonedLock(gone: boolean) {
  const vault = await writeVault({ 'a.md': '---\ntype: start\n---\n# Only step\n' })
  await plantLock(vault, { pid: 999_999_999, host: hostname(), since: 'yesterday' }, { ageMs: 60_000 })
  // The runner that took the lock holds it, working, until the other was refused.
  const slow = async () => {
    race.works += 1
    await until(() => race.refusals > 0, 'the other runner to be refused')
    return 'done'
  }
  Object.assign(race, { on: true, looks: 0, gone, works: 0, refusals: 0 })
  const run = () =>
    runPlan(vault, { query: 'q', work: slow, fsync: false }).catch((error: unknown) => {
      race.refusals += 1
      throw error
    })
  const outcomes = await Promise.allSettled([run(), run()])
  race.on = false
  expect(race.looks).toBeGreaterThanOrEqual(2)
  const trace = await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8').catch(() => '')
  return { outcomes, works: race.works, trace }
}
