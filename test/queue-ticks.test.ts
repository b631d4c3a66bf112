import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { scheduleRun } from 'vaultplan/queue'
import { scheduleQueue, takeTicks } from '../src/queue/schedule-run.js'
import { freshQueueName, jobStates, openQueue } from './helpers/queue.js'
import { digestTemplate } from './helpers/plans.js'
import { tempDir, writeVault } from './helpers/vault.js'

const template = digestTemplate

describe("a schedule's ticks in the queue", () => {
  it('ticks that piled up while no worker took them are one run, for the latest, and all of them are done', async () => {
    const plan = await writeVault(template)
    const runs = join(await tempDir(), 'runs')
    const name = freshQueueName()
    const queue = await openQueue(name)
    // A cron that does not tick during the test: the ticks below are the ones pg-boss sent while every worker slept.
    const schedule = { name: 'digest', template: plan, cron: '0 0 1 1 *', query: 'Todays digest', runs }
    await scheduleRun(queue, schedule)
    const ticks = scheduleQueue(name, 'digest')
    for (let minute = 0; minute < 5; minute++) await queue.boss.send(ticks, schedule)
    expect(await takeTicks(queue, { fsync: false })).toHaveLength(1)
    expect(await readdir(runs)).toHaveLength(1)
    expect(await jobStates(queue)).toEqual({ created: 1 })
    const { rows } = await queue.query<{ state: string; count: string }>(
      `SELECT state, count(*) AS count FROM ${queue.schema}.job WHERE name = $1 GROUP BY state`,
      [ticks],
    )
    expect(rows.map((row) => [row.state, Number(row.count)])).toEqual([['completed', 5]])
    expect(await takeTicks(queue, { fsync: false })).toEqual([])
  })
})
