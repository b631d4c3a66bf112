import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runSchedules, type RunResult } from 'vaultplan'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { note, readTree, tempDir, writeVault } from './helpers/vault.js'

const template = {
  'collect.md': note({ front: { type: 'start' }, title: 'Collect the news', next: ['[[digest]]'] }),
  'digest.md': note({ title: 'Write the digest' }),
}

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

  it('refuses a bad schedule before any tick', () => {
    expect(() => runSchedules([{ name: 'a b', template: '.', cron: '* * * * *', query: 'q', runs: '.' }])).toThrow('Expected schedule `name` to be letters')
    expect(() => runSchedules([{ name: 'a', template: '.', cron: 'every minute', query: 'q', runs: '.' }])).toThrow('Expected schedule `cron`')
  })
})
