import { symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { decide, runPlan, type StepInput, type TransitionContext } from 'vaultplan'
import { enqueueRun, readQueueStatus, resumeRun, type HopReport } from 'vaultplan/queue'
import { draftReview } from './helpers/plans.js'
import { freshQueueName, jobStates, openQueue, testWorker, waitForStatus } from './helpers/queue.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { until } from './helpers/until.js'
import { edit, note, readNotes, tempDir, traceHeadings, writeVault } from './helpers/vault.js'

/** How many looks the workers took at the runs waiting for a person. */
const watched = vi.hoisted(() => ({ looks: 0 }))
vi.mock('../src/queue/watch-waiting.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/queue/watch-waiting.js')>()
  const watchWaiting: typeof real.watchWaiting = async (queue) => {
    const resumed = await real.watchWaiting(queue)
    watched.looks += 1
    return resumed
  }
  return { ...real, watchWaiting }
})

const query = 'Announce the release'
/** Code decides the review: revise after the first draft, approve the second. */
const predicates = {
  approved: (context: TransitionContext) => context.visit >= 2,
  'needs revision': (context: TransitionContext) => context.visit < 2,
}
const stepping = { predicates, llm: noJudge() }

/** The same plan run by `runPlan` in one process: what every queued run must reproduce. */
async function sequential(files: Record<string, string>): Promise<{ headings: string[]; notes: Record<string, string> }> {
  const vault = await writeVault(files)
  await runPlan(vault, { query, work: scriptedWorker(), ...stepping, fsync: false })
  return { headings: await traceHeadings(vault), notes: await readNotes(vault) }
}

const approveNote =
  '---\njudge: human\nmax_visits: 3\n---\n# Approve the draft\n\nA person reads the draft.\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n'
const humanPlan = {
  'draft.md': note({ front: { type: 'start' }, title: 'Draft', body: 'Write the draft.', next: ['[[approve]]'] }),
  'approve.md': approveNote,
  'send.md': note({ title: 'Send', body: 'Send it.' }),
}

/** outline -> research (the subplan research/: find -> summarise) -> write. */
const subplanPlan = {
  'outline.md': note({ front: { type: 'start' }, title: 'Outline', body: 'Outline the report.', next: ['[[research]]'] }),
  'research.md': note({ front: { plan: 'research' }, title: 'Research', body: 'Find the figures.', next: ['[[write]]'] }),
  'write.md': note({ title: 'Write', body: 'Write the report.' }),
  'research/find.md': note({ front: { type: 'start' }, title: 'Find sources', body: 'Find them.', next: ['[[summarise]]'] }),
  'research/summarise.md': note({ title: 'Summarise', body: 'Summarise them.' }),
}

describe('runs through the queue', () => {
  it("workers started at once, on queues of their own, each open theirs (creating a queue's table is done one at a time, not deadlocked)", async () => {
    const names = Array.from({ length: 6 }, () => freshQueueName())
    const queues = await Promise.all(names.map((name) => openQueue(name)))
    expect(queues.map((queue) => queue.name)).toEqual(names)
  })

  it('a worker walks a queued run to its end, one job per hop, on the path runPlan takes', async () => {
    const reference = await sequential(draftReview())
    const vault = await writeVault(draftReview())
    const name = freshQueueName()
    const queue = await openQueue(name)
    const reports: HopReport[] = []
    const handed: unknown[] = []
    const work = scriptedWorker((step: StepInput) => void handed.push({ vault: step.vault, ledger: step.ledger }))
    await testWorker(name, { work, ...stepping, onHop: (report) => reports.push(report) })

    expect(await enqueueRun(queue, { vault, query })).toEqual({ vault, jobId: expect.any(String), alreadyQueued: false })
    await waitForStatus(queue, (status) => status.completed === 1)

    expect(await traceHeadings(vault)).toEqual(reference.headings)
    expect(await readNotes(vault)).toEqual(reference.notes)
    expect(reports.map((report) => [report.worked?.node, report.worked?.visit, report.outcome, report.node])).toEqual([
      ['draft', 1, 'queued', 'review'],
      ['review', 1, 'queued', 'draft'],
      ['draft', 2, 'queued', 'review'],
      ['review', 2, 'queued', 'send'],
      ['send', 1, 'completed', 'send'],
    ])
    expect(await jobStates(queue)).toEqual({ completed: 5 })
    // As runPlan hands them: the vault (the ledger tools record there) and its ledger.
    expect(handed[0]).toEqual({ vault, ledger: { facts: [], assumptions: [], decisions: [] } })
  })

  it('a hop inside a subplan gets the worker input runPlan gives, and a failure there names the nested note by its path', async () => {
    const inputOf = (step: StepInput) => ({ node: step.node.id, plan: step.plan, visit: step.visit, step: step.step, query: step.query, vault: step.vault })
    const reference = await writeVault(subplanPlan)
    const direct: unknown[] = []
    await runPlan(reference, { query, work: scriptedWorker((step) => void direct.push(inputOf(step))), ...stepping, fsync: false })

    const vault = await writeVault(subplanPlan)
    const name = freshQueueName()
    const queue = await openQueue(name, { retryLimit: 0 })
    const queued: unknown[] = []
    const work = scriptedWorker((step) => {
      queued.push(inputOf(step))
      if (step.node.id === 'summarise') throw new Error('the sources are gone')
    })
    const reports: HopReport[] = []
    await testWorker(name, { work, ...stepping, onHop: (report) => reports.push(report) })
    await enqueueRun(queue, { vault, query })
    const failed = await waitForStatus(queue, (status) => status.failed === 1)

    expect(queued).toEqual(direct.slice(0, 3).map((input) => ({ ...(input as object), vault })))
    expect(queued[1]).toMatchObject({ node: 'find', plan: 'research' })
    // The hop reports name a nested note by its path, as the failure does.
    expect(reports.map((report) => [report.worked?.node, report.outcome, report.node])).toEqual([
      ['outline', 'queued', 'research/find'],
      ['research/find', 'queued', 'research/summarise'],
      ['research/summarise', 'failed', undefined],
    ])
    expect(failed.failures).toEqual([{ vault, error: expect.stringContaining('The worker failed at `research/summarise`, visit 1') }])
  })

  it('many runs, two workers: every run ends on the sequential path, and no run ever has two jobs', async () => {
    const reference = await sequential(draftReview())
    const vaults = await Promise.all(Array.from({ length: 6 }, () => writeVault(draftReview())))
    const name = freshQueueName()
    const queue = await openQueue(name)
    // A worker that takes its time, so that hops of different runs overlap.
    const slow = () => scriptedWorker(() => new Promise((resolve) => setTimeout(resolve, 20)))
    await testWorker(name, { work: slow(), ...stepping, concurrency: 2 })
    await testWorker(name, { work: slow(), ...stepping, concurrency: 2 })
    for (const vault of vaults) await enqueueRun(queue, { vault, query })

    // While the runs go, look again and again for a vault with two live jobs.
    let doubled = 0
    let looks = 0
    let running = true
    const looking = (async () => {
      while (running) {
        const { rows } = await queue.query(
          `SELECT data->>'vault' AS vault FROM ${queue.schema}.job WHERE name = $1 AND state IN ('created', 'retry', 'active') GROUP BY 1 HAVING count(*) > 1`,
          [name],
        )
        doubled += rows.length
        looks += 1
        await new Promise((resolve) => setTimeout(resolve, 5))
      }
    })()
    await waitForStatus(queue, (status) => status.completed === vaults.length, 30_000).finally(() => (running = false))
    await looking
    expect(looks).toBeGreaterThan(5)
    for (const vault of vaults) expect(await traceHeadings(vault)).toEqual(reference.headings)
    expect(doubled).toBe(0)
    expect(await jobStates(queue)).toEqual({ completed: 5 * vaults.length })
  })

  it('queueing a run that has a job sends no second one', async () => {
    const vault = await writeVault(draftReview())
    const queue = await openQueue(freshQueueName())
    const first = await enqueueRun(queue, { vault, query })
    const second = await enqueueRun(queue, { vault, query })
    expect(second).toEqual({ vault, jobId: first.jobId, alreadyQueued: true })
    expect(await jobStates(queue)).toEqual({ created: 1 })
    expect(await readQueueStatus(queue)).toEqual({ queue: queue.name, queued: 1, inFlight: 0, waiting: 0, completed: 0, stopped: 0, failed: 0, failures: [] })
  })

  it('one vault queued by a symlinked path and by its real path is one run: one job chain, each visit worked once', async () => {
    const reference = await sequential(draftReview())
    const vault = await writeVault(draftReview())
    const alias = join(await tempDir(), 'alias')
    await symlink(vault, alias)
    const name = freshQueueName()
    const queue = await openQueue(name)
    const first = await enqueueRun(queue, { vault, query })
    expect(await enqueueRun(queue, { vault: alias, query })).toEqual({ vault, jobId: first.jobId, alreadyQueued: true })
    expect(await jobStates(queue)).toEqual({ created: 1 })
    const work = scriptedWorker()
    await testWorker(name, { work, ...stepping })
    await waitForStatus(queue, (status) => status.completed === 1 && status.queued === 0 && status.inFlight === 0)
    expect(work.calls.map((call) => `${call.node} ${call.visit}`)).toEqual(['draft 1', 'review 1', 'draft 2', 'review 2', 'send 1'])
    expect(await traceHeadings(vault)).toEqual(reference.headings)
    // Asked by either path, it is the run that completed.
    expect(await resumeRun(queue, alias)).toBe(false)
    expect(await readQueueStatus(queue)).toMatchObject({ queued: 0, completed: 1 })
  })

  it('an open queue serves one pg-boss queue: naming another one with it is refused', async () => {
    const queue = await openQueue(freshQueueName())
    const vault = await writeVault(draftReview())
    await expect(enqueueRun(queue, { vault, query, queue: 'elsewhere' })).rejects.toThrow(TypeError)
    expect(await jobStates(queue)).toEqual({})
  })

  it('a run waiting for a person holds no worker and no job; decide, then resumeRun, and it goes on', async () => {
    const vault = await writeVault(humanPlan)
    const name = freshQueueName()
    const queue = await openQueue(name)
    // No watcher within the test's time: the run goes on only because resumeRun says so.
    await testWorker(name, { work: scriptedWorker(), ...stepping, watchIntervalMs: 600_000 })
    await enqueueRun(queue, { vault, query })

    const waiting = await waitForStatus(queue, (status) => status.waiting === 1)
    expect(waiting).toMatchObject({ queued: 0, inFlight: 0, waiting: 1 })
    expect(await jobStates(queue)).toEqual({ completed: 2 })

    await decide(vault, 'approve', { edge: 'approved' })
    expect(await resumeRun(queue, vault)).toBe(true)
    // The run has its job now: a second call sends none.
    expect(await resumeRun(queue, vault)).toBe(false)
    await waitForStatus(queue, (status) => status.completed === 1)
    expect(await traceHeadings(vault)).toEqual(await sequentialWithDecision())
  })

  it('a worker notices a box ticked in the waiting note and queues the run again', async () => {
    const vault = await writeVault(humanPlan)
    const name = freshQueueName()
    const queue = await openQueue(name)
    await testWorker(name, { work: scriptedWorker(), ...stepping })
    await enqueueRun(queue, { vault, query })
    await waitForStatus(queue, (status) => status.waiting === 1)
    // Watching costs no jobs while nothing changes in the note: three looks at it, and no job.
    const looks = watched.looks
    await until(() => watched.looks >= looks + 3, 'the worker to look at the waiting run three times')
    expect(await jobStates(queue)).toEqual({ completed: 2 })

    await edit(vault, 'approve.md', (text) => text.replace('- [ ] approved ->', '- [x] approved ->'))
    await waitForStatus(queue, (status) => status.completed === 1)
    expect(await traceHeadings(vault)).toEqual(await sequentialWithDecision())
  })

  it('a hop that outlives its expiry is taken over: the same visit with the same key, and the late result counts for nothing', async () => {
    const reference = await sequential(draftReview())
    const vault = await writeVault(draftReview())
    const name = freshQueueName()
    const queue = await openQueue(name, { hopTimeoutSeconds: 1, retryDelaySeconds: 0 })
    let release!: () => void
    let started!: () => void
    const hanging = new Promise<void>((resolve) => (started = resolve))
    const stuck = scriptedWorker((step: StepInput) => {
      started()
      return step.node.id === 'draft' ? new Promise<void>((resolve) => (release = resolve)) : undefined
    })
    const late: HopReport[] = []
    await testWorker(name, { work: stuck, ...stepping, onHop: (report) => late.push(report) })
    await enqueueRun(queue, { vault, query })
    await hanging
    expect(await readQueueStatus(queue)).toMatchObject({ inFlight: 1, queued: 0 })

    const takeover = scriptedWorker()
    await testWorker(name, { work: takeover, ...stepping })
    await waitForStatus(queue, (status) => status.completed === 1)
    release()
    await until(() => late.length === 1, 'the late worker to report')

    expect(takeover.calls[0]).toMatchObject({ node: 'draft', visit: 1, key: stuck.calls[0]!.key })
    expect(late[0]).toMatchObject({ worked: { node: 'draft', visit: 1 }, outcome: 'superseded' })
    expect(await traceHeadings(vault)).toEqual(reference.headings)
    expect(await jobStates(queue)).toEqual({ completed: 5 })
  })

  it('when the late worker finishes while the one that took over still works the visit, one of the two goes on and the other changes nothing', async () => {
    const reference = await sequential(draftReview())
    const vault = await writeVault(draftReview())
    const name = freshQueueName()
    const queue = await openQueue(name, { hopTimeoutSeconds: 1, retryDelaySeconds: 0 })
    let release!: () => void
    let started!: () => void
    const hanging = new Promise<void>((resolve) => (started = resolve))
    const lateReports: HopReport[] = []
    const takeoverReports: HopReport[] = []
    const stuck = scriptedWorker((step: StepInput, call: number) => {
      if (call > 0) return undefined
      started()
      return new Promise<void>((resolve) => (release = resolve))
    })
    await testWorker(name, { work: stuck, ...stepping, onHop: (report) => lateReports.push(report) })
    await enqueueRun(queue, { vault, query })
    await hanging
    // The worker that takes the expired hop over lets the late one finish first, then finishes too.
    const takeover = scriptedWorker(async (_step: StepInput, call: number) => {
      if (call > 0) return
      release()
      await until(() => lateReports.length > 0, 'the late worker to report')
    })
    await testWorker(name, { work: takeover, ...stepping, onHop: (report) => takeoverReports.push(report) })
    await waitForStatus(queue, (status) => status.completed === 1)

    expect(takeover.calls[0]).toMatchObject({ node: 'draft', visit: 1, key: stuck.calls[0]!.key })
    const draftHops = () => [...lateReports, ...takeoverReports].filter((report) => report.worked?.node === 'draft' && report.worked.visit === 1)
    // The run can end before the losing attempt has reported.
    await until(() => draftHops().length === 2, 'both attempts at the draft to report')
    expect(
      draftHops()
        .map((report) => report.outcome)
        .sort(),
    ).toEqual(['queued', 'superseded'])
    expect(await traceHeadings(vault)).toEqual(reference.headings)
    expect(await jobStates(queue)).toEqual({ completed: 5 })
  })

  it('a worker that throws is retried; when the retries are spent the run is failed, saying why, and resumeRun goes on after the fix', async () => {
    const vault = await writeVault(draftReview())
    const name = freshQueueName()
    const queue = await openQueue(name, { retryLimit: 1, retryDelaySeconds: 0 })
    let broken = true
    const work = scriptedWorker(() => {
      if (broken) throw new Error('the model is down')
    })
    await testWorker(name, { work, ...stepping })
    await enqueueRun(queue, { vault, query })

    const failed = await waitForStatus(queue, (status) => status.failed === 1)
    expect(failed.failures).toEqual([{ vault, error: expect.stringContaining('the model is down') }])
    expect(work.calls.map((call) => `${call.node} ${call.visit} ${call.key}`)).toEqual([`draft 1 ${work.calls[0]!.key}`, `draft 1 ${work.calls[0]!.key}`])

    broken = false
    expect(await resumeRun(queue, vault)).toBe(true)
    await waitForStatus(queue, (status) => status.completed === 1)
    expect(await traceHeadings(vault)).toEqual((await sequential(draftReview())).headings)
  })

  it('a plan with errors fails its run at once, with the diagnostics, and is not retried', async () => {
    const files = { ...draftReview(), 'review.md': note({ title: 'Review', next: ['approved -> [[sned]]', 'needs revision -> [[draft]]'] }) }
    const vault = await writeVault(files)
    const name = freshQueueName()
    const queue = await openQueue(name)
    const work = scriptedWorker()
    await testWorker(name, { work, ...stepping })
    await enqueueRun(queue, { vault, query })

    const failed = await waitForStatus(queue, (status) => status.failed === 1)
    expect(failed.failures).toEqual([{ vault, error: expect.stringContaining('dangling-edge') }])
    expect(work.calls).toEqual([])
    expect(await jobStates(queue)).toEqual({ completed: 1 })
  })

  it('a judge with no model configured fails the run at once, naming the variables to set', async () => {
    const saved = Object.entries(process.env).filter(([key]) => /^(LLM_|OPENAI_)/.test(key))
    for (const [key] of saved) delete process.env[key]
    try {
      const vault = await writeVault(draftReview())
      const name = freshQueueName()
      const queue = await openQueue(name)
      // No predicates and no `llm`: the review's conditions need the env-configured judge, and there is none.
      const work = scriptedWorker()
      await testWorker(name, { work })
      await enqueueRun(queue, { vault, query })
      const failed = await waitForStatus(queue, (status) => status.failed === 1)
      expect(failed.failures).toEqual([{ vault, error: expect.stringContaining('LLM_MODEL') }])
      expect(work.calls.map((call) => `${call.node} ${call.visit}`)).toEqual(['draft 1', 'review 1'])
    } finally {
      for (const [key, value] of saved) process.env[key] = value
    }
  })
})

/** The headings of the human plan run in one process: draft, approve waits, approved, send. */
async function sequentialWithDecision(): Promise<string[]> {
  const vault = await writeVault(humanPlan)
  const options = { query, work: scriptedWorker(), ...stepping, fsync: false }
  await runPlan(vault, options)
  await decide(vault, 'approve', { edge: 'approved' })
  await runPlan(vault, options)
  return traceHeadings(vault)
}
