import { describe, expect, it } from 'vitest'
import type { StepInput } from 'vaultplan'
import { enqueueRun, resumeRun, type HopReport, type RunQueue } from 'vaultplan/queue'
import { freshQueueName, jobStates, openQueue, testWorker, waitForStatus } from './helpers/queue.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { until } from './helpers/until.js'
import { edit, note, read, statuses, traceEntries, writeVault } from './helpers/vault.js'

const query = 'Fetch the figures'

/** A note that may fail: `retries:` from `front`, a `failed` edge when `failed` is set. */
function fetchPlan(front: Record<string, number>, failed: boolean): Record<string, string> {
  return {
    'fetch.md': note({ front: { type: 'start', ...front }, title: 'Fetch', next: [...(failed ? ['failed -> [[report]]'] : []), '[[use]]'] }),
    'report.md': note({ title: 'Report' }),
    'use.md': note({ title: 'Use' }),
  }
}

/** The JSON of the trace's hop records. */
async function hops(vault: string): Promise<Record<string, unknown>[]> {
  const text = await read(vault, '00_plan-trace/trace.md')
  return [...text.matchAll(/<!-- vaultplan:hop (.*) -->/g)]
    .map((match) => JSON.parse(match[1]!) as Record<string, unknown>)
    .filter((record) => record.kind === 'hop')
}

/** The queue's hop jobs, oldest first: pg-boss's state and retry count of each. */
async function jobs(queue: RunQueue): Promise<{ state: string; retries: number }[]> {
  const { rows } = await queue.query<{ state: string; retries: number }>(
    `SELECT state, retry_count AS retries FROM ${queue.schema}.job WHERE name = $1 ORDER BY created_on, id`,
    [queue.name],
  )
  return rows
}

describe('retries: in the queue', () => {
  it("are pg-boss retries of the hop's job, with backoff, under the same key and visit; then the `failed` edge is taken, decided by failure", async () => {
    const vault = await writeVault(fetchPlan({ retries: 2 }, true))
    const name = freshQueueName()
    // The queue's own retries would come after 5 s: the note's come after 1 s, then 2 s.
    const queue = await openQueue(name)
    const at: number[] = []
    const work = scriptedWorker((step: StepInput) => {
      if (step.node.id !== 'fetch') return
      at.push(Date.now())
      throw new Error('503 from the server')
    })
    await testWorker(name, { work, llm: noJudge() })
    await enqueueRun(queue, { vault, query })
    await waitForStatus(queue, (status) => status.completed === 1)

    expect(work.calls.map((call) => [call.node, call.visit, call.key])).toEqual([
      ['fetch', 1, work.calls[0]!.key],
      ['fetch', 1, work.calls[0]!.key],
      ['fetch', 1, work.calls[0]!.key],
      ['report', 1, expect.any(String)],
    ])
    // The backoff: 1 s before the first retry, 2 s before the second.
    expect(at[1]! - at[0]!).toBeGreaterThanOrEqual(950)
    expect(at[2]! - at[1]!).toBeGreaterThanOrEqual(1950)
    expect((await traceEntries(vault)).map((entry) => [entry.heading, entry.decidedBy])).toEqual([
      ['Step 1 · [[fetch]] · visit 1', 'failure'],
      ['Step 2 · [[report]] · visit 1', 'terminal'],
    ])
    expect((await hops(vault))[0]).toMatchObject({ decidedBy: 'failure', next: 'report', error: '503 from the server' })
    expect(work.calls[3]!.outputs[0]!.output).toBe('The worker failed (tried 3 times): 503 from the server')
    // One job for the hop, tried three times; one for the next.
    expect(await jobs(queue)).toEqual([
      { state: 'completed', retries: 2 },
      { state: 'completed', retries: 0 },
    ])
  })

  it('with no `failed` edge, the run fails after the last retry, as StepError says, and the queue retries it no more', async () => {
    const vault = await writeVault(fetchPlan({ retries: 1 }, false))
    const name = freshQueueName()
    const queue = await openQueue(name, { retryLimit: 5, retryDelaySeconds: 0 })
    let broken = true
    const work = scriptedWorker((step: StepInput) => {
      if (broken && step.node.id === 'fetch') throw new Error('503 from the server')
    })
    const reports: HopReport[] = []
    await testWorker(name, { work, llm: noJudge(), onHop: (report) => reports.push(report) })
    await enqueueRun(queue, { vault, query })

    const failed = await waitForStatus(queue, (status) => status.failed === 1)
    expect(failed.failures).toEqual([{ vault, error: expect.stringContaining('The worker failed at `fetch`, visit 1: 503 from the server') }])
    expect(reports.map((report) => [report.worked?.node, report.outcome])).toEqual([
      ['fetch', 'retrying'],
      ['fetch', 'failed'],
    ])
    expect(work.calls).toHaveLength(2)
    expect(await jobs(queue)).toEqual([{ state: 'failed', retries: 1 }])
    expect(await statuses(vault)).toEqual({ fetch: 'active', report: 'pending', use: 'pending' })

    // After the fix, the same visit goes on.
    broken = false
    expect(await resumeRun(queue, vault)).toBe(true)
    await waitForStatus(queue, (status) => status.completed === 1)
    expect(work.calls.slice(2).map((call) => [call.node, call.visit, call.key])).toEqual([
      ['fetch', 1, work.calls[0]!.key],
      ['use', 1, expect.any(String)],
    ])
  })

  it("a note without `retries:` keeps the queue's own retries, and its `failed` edge stays an ordinary condition", async () => {
    const vault = await writeVault(fetchPlan({}, true))
    const name = freshQueueName()
    const queue = await openQueue(name, { retryLimit: 2, retryDelaySeconds: 0 })
    const work = scriptedWorker(() => {
      throw new Error('503 from the server')
    })
    await testWorker(name, { work, llm: noJudge() })
    await enqueueRun(queue, { vault, query })

    const failed = await waitForStatus(queue, (status) => status.failed === 1)
    expect(failed.failures).toEqual([{ vault, error: expect.stringContaining('The worker failed at `fetch`, visit 1: 503 from the server') }])
    expect(work.calls.map((call) => call.key)).toEqual([work.calls[0]!.key, work.calls[0]!.key, work.calls[0]!.key])
    expect(await jobs(queue)).toEqual([{ state: 'failed', retries: 2 }])
    expect(await statuses(vault)).toEqual({ fetch: 'active', report: 'pending', use: 'pending' })
  })

  it('a note with `check:` and a `failed` edge takes it when its worker throws, as runPlan does, with no retry', async () => {
    const vault = await writeVault(fetchPlan({}, true))
    await edit(vault, 'fetch.md', (text) => text.replace('type: start', 'type: start\ncheck: test'))
    const name = freshQueueName()
    const queue = await openQueue(name, { retryLimit: 2, retryDelaySeconds: 0 })
    const work = scriptedWorker((step: StepInput) => {
      if (step.node.id === 'fetch') throw new Error('503 from the server')
    })
    const checks = { test: { command: [process.execPath, '-e', ''] } }
    await testWorker(name, { work, llm: noJudge(), checks })
    await enqueueRun(queue, { vault, query })
    await waitForStatus(queue, (status) => status.completed === 1)

    expect(work.calls.map((call) => call.node)).toEqual(['fetch', 'report'])
    expect((await hops(vault))[0]).toMatchObject({ decidedBy: 'failure', next: 'report', error: '503 from the server' })
  })

  it("a worker that dies during a retry loses neither the retry nor the key: another worker takes it, the note's retries not spending the queue's", async () => {
    const vault = await writeVault(fetchPlan({ retries: 1 }, false))
    const name = freshQueueName()
    // One retry for a dead worker: the note's retry must not have used it.
    const queue = await openQueue(name, { hopTimeoutSeconds: 1, retryLimit: 1, retryDelaySeconds: 0 })
    let release!: () => void
    let hung!: () => void
    const hanging = new Promise<void>((resolve) => (hung = resolve))
    const dying = scriptedWorker((step: StepInput, call: number) => {
      if (call === 0) throw new Error('503 from the server')
      hung()
      // The retry never returns, as if the process died: its job expires. (Stopping the worker ends it too.)
      return new Promise<void>((resolve) => {
        release = resolve
        step.signal?.addEventListener('abort', () => resolve(), { once: true })
      })
    })
    const late: HopReport[] = []
    await testWorker(name, { work: dying, llm: noJudge(), onHop: (report) => late.push(report) })
    await enqueueRun(queue, { vault, query })
    await hanging

    const takeover = scriptedWorker()
    await testWorker(name, { work: takeover, llm: noJudge() })
    await waitForStatus(queue, (status) => status.completed === 1)
    release()
    await until(() => late.length === 2, 'the late worker to report both its hops')

    const key = dying.calls[0]!.key
    expect(dying.calls.map((call) => [call.node, call.visit, call.key])).toEqual([
      ['fetch', 1, key],
      ['fetch', 1, key],
    ])
    expect(takeover.calls.map((call) => [call.node, call.visit, call.key])).toEqual([
      ['fetch', 1, key],
      ['use', 1, expect.any(String)],
    ])
    expect(late.map((report) => report.outcome)).toEqual(['retrying', 'superseded'])
    expect(await traceEntries(vault)).toHaveLength(2)
    expect(await jobStates(queue)).toEqual({ completed: 2 })
  })
})
