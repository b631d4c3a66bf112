import { describe, expect, it } from 'vitest'
import { decide } from 'vaultplan'
import { enqueueRun, resumeRun, type HopReport } from 'vaultplan/queue'
import { freshQueueName, jobStates, openQueue, testWorker, waitForStatus } from './helpers/queue.js'
import { deadlinePlan as plan } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { traceEntries, writeVault } from './helpers/vault.js'

const query = 'Announce the release'

describe('wait: deadlines in the queue', () => {
  it('a waiting run gets a job that starts at its deadline, and the worker takes the `timeout` edge then', async () => {
    const vault = await writeVault(plan('2s'))
    const name = freshQueueName()
    const queue = await openQueue(name)
    const reports: HopReport[] = []
    // No watcher within the test's time: only the delayed job can move the run on.
    await testWorker(name, { work: scriptedWorker(), llm: noJudge(), watchIntervalMs: 600_000, onHop: (report) => reports.push(report) })
    await enqueueRun(queue, { vault, query })
    await waitForStatus(queue, (status) => status.waiting === 1)
    // The deadline's job is there, not yet due.
    expect(await jobStates(queue)).toEqual({ completed: 2, created: 1 })
    const done = await waitForStatus(queue, (status) => status.completed === 1)
    expect(done).toMatchObject({ waiting: 0, completed: 1 })
    expect((await traceEntries(vault)).map((entry) => entry.decidedBy).filter(Boolean)).toEqual(['unconditional', 'timeout', 'terminal'])
    expect(reports.map((report) => [report.outcome, report.node])).toEqual([
      ['queued', 'approve'],
      ['waiting', 'approve'],
      // The deadline's job follows the `timeout` edge and works where it leads.
      ['completed', 'escalate'],
    ])
  })

  it('a person who decides before the deadline cancels its job: the run goes on once, along the ticked box', async () => {
    const vault = await writeVault(plan('1h'))
    const name = freshQueueName()
    const queue = await openQueue(name)
    await testWorker(name, { work: scriptedWorker(), llm: noJudge(), watchIntervalMs: 600_000 })
    await enqueueRun(queue, { vault, query })
    await waitForStatus(queue, (status) => status.waiting === 1)
    await decide(vault, 'approve', { edge: 'approved' })
    expect(await resumeRun(queue, vault)).toBe(true)
    await waitForStatus(queue, (status) => status.completed === 1)
    expect(await jobStates(queue)).toEqual({ completed: 3, cancelled: 1 })
    expect((await traceEntries(vault)).map((entry) => entry.decidedBy).filter(Boolean)).toEqual(['unconditional', 'human', 'terminal'])
  })
})
