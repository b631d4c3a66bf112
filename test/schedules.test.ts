import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runSchedules, type RunResult } from 'vaultplan'
import { schedulesOnClock } from '../src/run/schedules/run-schedules.js'
import { digestTemplate } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { until } from './helpers/until.js'
import { readTree, tempDir, writeVault } from './helpers/vault.js'

const template = digestTemplate

describe('runSchedules: schedules in one process', () => {
  it('a schedule that ticks every second starts a run in a new run vault at each tick, from an untouched template', async () => {
    const plan = await writeVault(template)
    const runs = join(await tempDir(), 'runs')
    const done: { schedule: string; vault: string; result: RunResult }[] = []
    const errors: unknown[] = []
    let twice!: () => void
    const ticked = new Promise<void>((resolve) => (twice = resolve))
    const running = runSchedules([{ name: 'digest', template: plan, cron: '* * * * * *', query: 'Todays digest', runs }], {
      work: scriptedWorker(),
      llm: noJudge(),
      fsync: false,
      onRun: (run) => {
        done.push(run)
        if (done.length === 2) twice()
      },
      onError: (error) => errors.push(error),
    })
    await ticked
    await running.stop()
    expect(errors).toEqual([])
    const vaults = (await readdir(runs)).sort()
    expect(vaults.length).toBeGreaterThanOrEqual(2)
    for (const name of vaults) expect(name).toMatch(/^digest-\d{8}-\d{6}$/)
    expect(done.slice(0, 2).map((run) => [run.schedule, run.result.status, run.result.lastNode])).toEqual([
      ['digest', 'completed', 'digest'],
      ['digest', 'completed', 'digest'],
    ])
    expect(done[0]!.vault).not.toBe(done[1]!.vault)
    // The template is never run in place.
    expect(await readTree(plan)).toEqual(template)
  })

  it('ticks missed while the process slept are one run, for the latest, not one run each', async () => {
    const plan = await writeVault(template)
    const runs = join(await tempDir(), 'runs')
    // The clock the schedules read: an hour passes at once, as for a laptop that slept.
    let offset = 0
    const clock = () => Date.now() + offset
    const ticks: number[] = []
    const errors: unknown[] = []
    let started = 0
    let slept = 0
    let woke = 0
    const running = schedulesOnClock(
      [{ name: 'digest', template: plan, cron: '* * * * * *', query: 'Todays digest', runs }],
      {
        // A cascade of catch-up runs is cut short, so a broken build fails fast rather than running thousands.
        work: scriptedWorker(() => {
          if (++started > 20) void running.stop()
        }),
        llm: noJudge(),
        fsync: false,
        onRun: ({ at }) => ticks.push(at.getTime()),
        onError: (error) => errors.push(error),
      },
      clock,
    )
    try {
      await until(() => ticks.length >= 1, 'a first run')
      slept = clock()
      offset += 3_600_000
      woke = clock()
      await until(() => ticks.some((at) => at >= woke + 1000) || started > 20, 'a run on the first tick after waking')
    } finally {
      await running.stop()
    }
    expect(errors).toEqual([])
    // The hour slept through has no run of its own; the first run after it is for a tick at the wake or after (when the
    // timer fired), and no tick is run twice. (The tick after the catch-up is a regular one, however close to the wake.)
    const missed = ticks.filter((at) => at > slept + 1000 && at < woke - 1000)
    const caughtUp = ticks.some((at) => at >= woke - 1000)
    expect({ missed: missed.length, caughtUp, twice: ticks.length - new Set(ticks).size }).toEqual({ missed: 0, caughtUp: true, twice: 0 })
  })

  it('refuses a bad schedule before any tick', () => {
    expect(() => runSchedules([{ name: 'a b', template: '.', cron: '* * * * *', query: 'q', runs: '.' }])).toThrow('Expected schedule `name` to be letters')
    expect(() => runSchedules([{ name: 'a', template: '.', cron: 'every minute', query: 'q', runs: '.' }])).toThrow('Expected schedule `cron`')
  })
})
