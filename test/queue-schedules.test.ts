import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { listScheduledRuns, scheduleRun, startWorker, unscheduleRun } from 'vaultplan/queue'
import { freshQueueName, openQueue, testConnection, waitForStatus } from './helpers/queue.js'
import { digestTemplate } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { readTree, tempDir, traceEntries, writeVault } from './helpers/vault.js'

const template = digestTemplate

// pg-boss's cron ticks by the minute: this file waits for the next minute to begin, so it is in the slow suite.
describe('schedules in the queue, on pg-boss cron', () => {
  it('a schedule ticks once a minute: the tick copies the template into a new run vault, and a worker runs it', async () => {
    const plan = await writeVault(template)
    const runs = join(await tempDir(), 'runs')
    const name = freshQueueName()
    const queue = await openQueue(name)
    const schedule = { name: 'digest', template: plan, cron: '* * * * *', query: 'Todays digest', runs }
    await scheduleRun(queue, schedule)
    expect(await listScheduledRuns(queue)).toEqual([schedule])
    // Without these, pg-boss looks at its crons every 30 s and the first tick may come a minute late.
    const worker = await startWorker(
      { ...testConnection(), cronMonitorIntervalSeconds: 1, cronWorkerIntervalSeconds: 1 },
      { queue: name, work: scriptedWorker(), llm: noJudge(), fsync: false, pollIntervalMs: 50, watchIntervalMs: 200 },
    )
    try {
      await waitForStatus(queue, (status) => status.completed === 1, 80_000)
      const [vault] = await readdir(runs)
      expect(vault).toMatch(/^digest-\d{8}-\d{6}$/)
      expect((await traceEntries(join(runs, vault!))).map((entry) => entry.decidedBy)).toEqual(['unconditional', 'terminal'])
      expect(await readTree(plan)).toEqual(template)
    } finally {
      await worker.stop({ timeoutMs: 2000 })
    }
    expect(await unscheduleRun(queue, 'digest')).toBe(true)
    expect(await listScheduledRuns(queue)).toEqual([])
    expect(await unscheduleRun(queue, 'digest')).toBe(false)
  }, 120_000)
})
