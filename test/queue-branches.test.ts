import { randomUUID } from 'node:crypto'
import { describe, expect, it, vi } from 'vitest'
import type { StepInput } from 'vaultplan'
import { enqueueRun, readQueueStatus, resumeRun, RunQueue, type HopReport } from 'vaultplan/queue'
import { freshQueueName, openQueue, testConnection, testWorker, waitForStatus } from './helpers/queue.js'
import { decide } from 'vaultplan'
import { lockVault } from '../src/vault/lock.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { until } from './helpers/until.js'
import { branchedPlan } from './helpers/subplans.js'
import { note, read, writeVault } from './helpers/vault.js'

const query = 'Survey the field'

/** How many stepping calls of the workers met the vault locked by another process (they are tried again). */
const locked = vi.hoisted(() => ({ met: 0 }))
vi.mock('../src/queue/hop-claims.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/queue/hop-claims.js')>()
  const stepping: typeof real.stepping = (call, signal) =>
    real.stepping(async () => {
      try {
        return await call()
      } catch (error) {
        if ((error as { code?: unknown }).code === 'vault-locked') locked.met += 1
        throw error
      }
    }, signal)
  return { ...real, stepping }
})

/** Every (note, visit) the run recorded a hop for, in the traces of the top vault and both branches. */
async function hops(vault: string): Promise<string[]> {
  const recorded: string[] = []
  for (const plan of ['', 'web/', 'papers/']) {
    const text = await read(vault, `${plan}00_plan-trace/trace.md`)
    for (const match of text.matchAll(/<!-- vaultplan:hop (.*) -->/g)) {
      const record = JSON.parse(match[1]!) as { kind: string; node: string; visit: number }
      if (record.kind === 'hop') recorded.push(`${plan}${record.node} ${record.visit}`)
    }
  }
  return recorded.sort()
}

const everyHopOnce = ['papers/find 1', 'report 1', 'research 1', 'start 1', 'web/read 1', 'web/search 1']
const everyVisitOnce = ['find 1', 'read 1', 'report 1', 'search 1', 'start 1']

/** A run's row in the runs table: its state, how many jobs it lists, its notes. */
function runRow(queue: RunQueue, vault: string) {
  return queue.query(`SELECT state, cardinality(jobs) AS jobs, node FROM ${queue.runs} WHERE queue = $1 AND vault = $2`, [queue.name, vault])
}

describe('several workers on the branches of one run', () => {
  it('two workers work the two branches at once, and the run completes with each visit worked once', async () => {
    const vault = await writeVault(branchedPlan())
    const name = freshQueueName()
    const queue = await openQueue(name)
    // Each branch's first note waits until the other branch's has started too: only two workers at once get past it.
    const started = new Set<string>()
    let looked = false
    const work = scriptedWorker(async (step: StepInput) => {
      if (step.node.id !== 'search' && step.node.id !== 'find') return
      started.add(step.node.id)
      await until(() => started.size === 2 && looked, 'both branches to be worked and looked at')
    })
    const reports: HopReport[] = []
    for (const _worker of [1, 2]) await testWorker(name, { work, llm: noJudge(), onHop: (report) => reports.push(report) })
    await enqueueRun(queue, { vault, query })

    // While both work: one run in flight, its row listing both jobs and both notes.
    await until(() => started.size === 2, 'both branches to be worked at once')
    expect(await readQueueStatus(queue)).toMatchObject({ queued: 0, inFlight: 1 })
    expect((await runRow(queue, vault)).rows).toEqual([{ state: 'queued', jobs: 2, node: 'web/search, papers/find' }])
    looked = true
    await waitForStatus(queue, (status) => status.completed === 1 && status.inFlight === 0 && status.queued === 0)

    expect(work.calls.map((call) => `${call.node} ${call.visit}`).sort()).toEqual(everyVisitOnce)
    expect(await hops(vault)).toEqual(everyHopOnce)
    // The first hop queued a job for the other branch beside its own.
    expect(reports.find((report) => report.worked?.node === 'start')).toMatchObject({
      outcome: 'queued',
      fannedOut: [expect.stringMatching(/^(web\/search|papers\/find)$/)],
    })
    expect(reports.every((report) => report.outcome !== 'failed' && report.outcome !== 'retrying')).toBe(true)
    expect(await readQueueStatus(queue)).toMatchObject({ completed: 1, failed: 0 })
  })

  it('one worker works the same plan one branch after the other', async () => {
    const vault = await writeVault(branchedPlan())
    const name = freshQueueName()
    const queue = await openQueue(name)
    let working = 0
    let most = 0
    const work = scriptedWorker(async () => {
      most = Math.max(most, ++working)
      await new Promise((resolve) => setTimeout(resolve, 20))
      working -= 1
    })
    await testWorker(name, { work, llm: noJudge() })
    await enqueueRun(queue, { vault, query })
    await waitForStatus(queue, (status) => status.completed === 1 && status.inFlight === 0 && status.queued === 0)

    expect(most).toBe(1)
    expect(work.calls.map((call) => `${call.node} ${call.visit}`).sort()).toEqual(everyVisitOnce)
    expect(await hops(vault)).toEqual(everyHopOnce)
  })

  it("a branch's failure fails the run; resumeRun's job takes back the claim the failed job held, same key, and the run completes", async () => {
    const vault = await writeVault(branchedPlan())
    const name = freshQueueName()
    const queue = await openQueue(name, { retryLimit: 0 })
    let broken = true
    const work = scriptedWorker((step: StepInput) => {
      if (broken && step.node.id === 'search') throw new Error('the search engine is down')
    })
    await testWorker(name, { work, llm: noJudge() })
    await enqueueRun(queue, { vault, query })
    const failed = await waitForStatus(queue, (status) => status.failed === 1 && status.inFlight === 0 && status.queued === 0)
    expect(failed.failures).toEqual([{ vault, error: expect.stringContaining('the search engine is down') }])
    const searches = () => work.calls.filter((call) => call.node === 'search')
    expect(searches()).toHaveLength(1)

    // The failed job's claim lasts its lease (twice the hop timeout, 30 minutes): the resumed run takes it back at once.
    broken = false
    expect(await resumeRun(queue, vault)).toBe(true)
    await waitForStatus(queue, (status) => status.completed === 1 && status.inFlight === 0 && status.queued === 0)
    expect(searches().map((call) => [call.visit, call.key])).toEqual([
      [1, searches()[0]!.key],
      [1, searches()[0]!.key],
    ])
    expect(work.calls.map((call) => `${call.node} ${call.visit}`).sort()).toEqual([...everyVisitOnce, 'search 1'].sort())
    expect(await hops(vault)).toEqual(everyHopOnce)
  })

  it("a worker killed in a branch: its job dies, and the run's next job takes the visit over with the same key", async () => {
    const vault = await writeVault(branchedPlan())
    const name = freshQueueName()
    // No retry of a dead worker's job: the run is left to resumeRun.
    const queue = await openQueue(name, { hopTimeoutSeconds: 1, retryLimit: 0 })
    let hung: string | undefined
    // The first branch visit never returns, as if its process died (stopping the worker ends it).
    const dying = scriptedWorker((step: StepInput) => {
      if (step.node.id === 'start') return undefined
      hung = step.node.id
      return new Promise<void>((resolve) => step.signal?.addEventListener('abort', () => resolve(), { once: true }))
    })
    await testWorker(name, { work: dying, llm: noJudge() })
    await enqueueRun(queue, { vault, query })
    await until(() => hung !== undefined, 'a branch visit to hang')

    const work = scriptedWorker()
    await testWorker(name, { work, llm: noJudge() })
    // The other branch is done; the dead job's visit stays claimed until its job is found dead.
    const stuck = await waitForStatus(queue, (status) => (status.failed === 1 || status.completed === 1) && status.inFlight === 0 && status.queued === 0)
    if (stuck.failed === 1) {
      expect(stuck.failures).toEqual([{ vault, error: 'its hop failed on every retry (the worker died or timed out)' }])
      // The dead job was found dead in a second; the jobs from here get the usual time (a loaded machine took over a second for a hop once).
      await queue.boss.updateQueue(name, { name, expireInSeconds: 60 })
      expect(await resumeRun(queue, vault)).toBe(true)
      await waitForStatus(queue, (status) => status.completed === 1 && status.inFlight === 0 && status.queued === 0)
    }
    const first = dying.calls.find((call) => call.node === hung)!
    expect(work.calls.filter((call) => call.node === hung).map((call) => [call.visit, call.key])).toEqual([[1, first.key]])
    expect(work.calls.map((call) => `${call.node} ${call.visit}`).sort()).toEqual(everyVisitOnce.filter((visit) => visit !== 'start 1'))
    expect(await hops(vault)).toEqual(everyHopOnce)
  })

  it('a branch that waits for a person leaves the run queued while the other branch is worked; then the run waits with no job, and goes on after the decision', async () => {
    const files = branchedPlan()
    files['web/read.md'] = note({ front: { judge: 'human' }, title: 'Read', body: 'A person reads the hits.', next: ['[ ] enough -> [[summary]]'] })
    files['web/summary.md'] = note({ title: 'Summary', body: 'Sum up.' })
    const vault = await writeVault(files)
    const name = freshQueueName()
    const queue = await openQueue(name)
    // Papers take a while: the web branch waits for its person meanwhile.
    let waited = false
    const work = scriptedWorker(async (step: StepInput) => {
      if (step.node.id === 'find') await until(() => waited, 'the web branch to wait for its person')
    })
    const reports: HopReport[] = []
    for (const _worker of [1, 2]) await testWorker(name, { work, llm: noJudge(), onHop: (report) => reports.push(report), watchIntervalMs: 600_000 })
    await enqueueRun(queue, { vault, query })

    await until(() => reports.some((report) => report.worked?.node === 'web/read'), 'the web branch to reach its person')
    // Its job ends: the job of the papers goes on.
    expect(reports.find((report) => report.worked?.node === 'web/read')).toMatchObject({ outcome: 'busy', node: 'papers/find' })
    // A job that a hop sent for the papers before their job had claimed them (it was fetched, not yet stepping) ends `busy`: then one job is left.
    const left = JSON.stringify([{ state: 'queued', jobs: 1, node: 'papers/find' }])
    let row = ''
    await until(
      async () => (row = JSON.stringify((await runRow(queue, vault)).rows)) === left,
      () => `one job left for the papers; the run's row: ${row}`,
    )
    waited = true
    const waiting = await waitForStatus(queue, (status) => status.waiting === 1)
    expect(waiting).toMatchObject({ queued: 0, inFlight: 0 })
    expect(reports.find((report) => report.worked?.node === 'papers/find')).toMatchObject({ outcome: 'waiting', node: 'web/read' })

    await decide(vault, 'web/read', { edge: 'enough' })
    expect(await resumeRun(queue, vault)).toBe(true)
    await waitForStatus(queue, (status) => status.completed === 1 && status.inFlight === 0 && status.queued === 0)
    expect(work.calls.map((call) => `${call.node} ${call.visit}`).sort()).toEqual([...everyVisitOnce, 'summary 1'].sort())
  })

  it('a stepping call that meets the vault locked for a moment by another process tries again, rather than failing the hop', async () => {
    const vault = await writeVault(branchedPlan())
    const name = freshQueueName()
    // No retry by the queue: a hop that failed on the lock would fail the run.
    const queue = await openQueue(name, { retryLimit: 0 })
    // Held as another runner holds it (the jobs of one run on two machines meet it so, for milliseconds).
    const lock = await lockVault(vault)
    const reports: HopReport[] = []
    await testWorker(name, { work: scriptedWorker(), llm: noJudge(), onHop: (report) => reports.push(report) })
    const met = locked.met
    await enqueueRun(queue, { vault, query })
    await until(() => locked.met > met, 'a stepping call to meet the vault locked')
    await lock.release()
    const status = await waitForStatus(queue, (each) => (each.completed === 1 || each.failed === 1) && each.inFlight === 0 && each.queued === 0)
    expect(status).toMatchObject({ completed: 1, failed: 0 })
    expect(reports[0]).toMatchObject({ worked: { node: 'start' }, outcome: 'queued' })
  })

  it('a runs table of an earlier version gets its list of jobs, a queued run keeping the job it had', async () => {
    const schema = `old_${randomUUID().slice(0, 8)}`
    const queue = await openQueue(freshQueueName())
    await queue.query(`CREATE SCHEMA ${schema}`)
    // The table as vaultplan 0.2 created it, with one job a run.
    await queue.query(`CREATE TABLE ${schema}.vaultplan_runs (
      queue text NOT NULL, vault text NOT NULL, state text NOT NULL, job_id uuid, query text, run_id text, node text,
      hops integer NOT NULL DEFAULT 0, waiting jsonb, error text,
      created_on timestamptz NOT NULL DEFAULT now(), updated_on timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (queue, vault))`)
    const [queued, done] = [randomUUID(), randomUUID()]
    await queue.query(`INSERT INTO ${schema}.vaultplan_runs (queue, vault, state, job_id) VALUES ('q', '/a', 'queued', $1), ('q', '/b', 'completed', $2)`, [
      queued,
      done,
    ])
    const upgraded = await RunQueue.open({ ...testConnection(), schema }, { queue: freshQueueName() })
    try {
      const { rows } = await upgraded.query(`SELECT vault, jobs::text[] AS jobs FROM ${upgraded.runs} ORDER BY vault`)
      expect(rows).toEqual([
        { vault: '/a', jobs: [queued] },
        { vault: '/b', jobs: [] },
      ])
    } finally {
      await upgraded.close()
      await queue.query(`DROP SCHEMA ${schema} CASCADE`)
    }
  })
})
