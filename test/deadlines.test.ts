import { setTimeout as sleep } from 'node:timers/promises'
import { describe, expect, it } from 'vitest'
import { decide, observeRun, runPlan } from 'vaultplan'
import { deadlinePlan } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { statuses, traceEntries, writeVault } from './helpers/vault.js'
import { vaultplan } from './helpers/cli.js'

const query = 'Announce the release'
const options = { query, fsync: false, llm: noJudge() } as const

function plan(next = ['approved -> [[send]]', 'timeout -> [[escalate]]'], wait = '1s'): Record<string, string> {
  return deadlinePlan(wait, next)
}

/** Sleeps until a moment has passed (an ISO time), with a little to spare. */
async function until(iso: string): Promise<void> {
  await sleep(Math.max(0, Date.parse(iso) - Date.now()) + 50)
}

describe('wait: deadlines on people', () => {
  it('a waiting note shows when it began waiting and its deadline; after it, runPlan takes the `timeout` edge', async () => {
    const dir = await writeVault(plan())
    const first = await runPlan(dir, { ...options, work: scriptedWorker() })
    expect(first.status).toBe('waiting')
    const [waiting] = first.waiting!
    expect(Date.parse(waiting!.deadline!) - Date.parse(waiting!.since!)).toBe(1000)
    expect(waiting).toEqual({
      kind: 'human',
      node: 'approve',
      file: 'approve.md',
      choices: ['approved', 'timeout'],
      since: waiting!.since,
      deadline: waiting!.deadline,
    })
    expect(first.reason).toContain(`Its deadline is ${waiting!.deadline}.`)
    await until(waiting!.deadline!)
    const second = await runPlan(dir, { ...options, work: scriptedWorker() })
    expect(second).toMatchObject({ status: 'completed', lastNode: 'escalate', visits: { draft: 1, approve: 1, escalate: 1 } })
    expect((await traceEntries(dir)).map((entry) => [entry.heading, entry.decidedBy])).toEqual([
      ['Step 1 · [[draft]] · visit 1', 'unconditional'],
      ['Waiting after step 2 · [[approve]] · visit 1', undefined],
      ['Step 2 · [[approve]] · visit 1', 'timeout'],
      ['Step 3 · [[escalate]] · visit 1', 'terminal'],
    ])
    expect(await statuses(dir)).toMatchObject({ approve: 'done', escalate: 'done', send: 'pending' })
  })

  it('before the deadline nothing is taken, and a person who decides in time wins', async () => {
    const dir = await writeVault(plan(undefined, '1h'))
    await runPlan(dir, { ...options, work: scriptedWorker() })
    expect((await runPlan(dir, { ...options, work: scriptedWorker() })).status).toBe('waiting')
    await decide(dir, 'approve', { edge: 'approved' })
    expect(await runPlan(dir, { ...options, work: scriptedWorker() })).toMatchObject({ status: 'completed', lastNode: 'send' })
  })

  it('without a `timeout` edge the note keeps waiting past its deadline, `overdue`, and the snapshot shows it', async () => {
    const dir = await writeVault(plan(['approved -> [[send]]', 'rejected -> [[escalate]]']))
    const first = await runPlan(dir, { ...options, work: scriptedWorker() })
    await until(first.waiting![0]!.deadline!)
    const second = await runPlan(dir, { ...options, work: scriptedWorker() })
    expect(second.status).toBe('waiting')
    expect(second.waiting).toEqual([{ ...first.waiting![0], overdue: true }])
    expect(second.reason).toContain(`It is overdue since ${first.waiting![0]!.deadline}.`)
    expect((await observeRun(dir)).waiting).toEqual(second.waiting)
    const status = await vaultplan(['status', dir])
    expect(status.stdout).toContain(`    deadline ${first.waiting![0]!.deadline} (overdue: the note has no \`timeout\` edge, it keeps waiting)`)
  })

  it('`vaultplan status` shows the deadline while the note waits, and once it passed, that the run is ready to go on along `timeout`', async () => {
    // A deadline an hour away, so that a loaded machine's slow start of the CLI is still before it.
    const later = await writeVault(plan(undefined, '1h'))
    const waiting = await runPlan(later, { ...options, work: scriptedWorker() })
    const before = await vaultplan(['status', later])
    // `timeout` is the deadline's to take, not a choice for the person.
    expect(before.stdout).toContain(`: choices approved\n    deadline ${waiting.waiting![0]!.deadline!} (then its \`timeout\` edge is taken)\n`)
    const dir = await writeVault(plan())
    const first = await runPlan(dir, { ...options, work: scriptedWorker() })
    const deadline = first.waiting![0]!.deadline!
    await until(deadline)
    const after = await vaultplan(['status', dir])
    expect(after.stdout).toContain(`: ready at escalate (visit 1, step 3)\n`)
    expect(after.stdout).toContain(`Next: Resume the run: \`vaultplan run ${dir}\` (it goes on at \`escalate\`, visit 1).`)
  })

  it('the snapshot of a run past its deadline shows where the `timeout` edge leads, as the next call will take it', async () => {
    const dir = await writeVault(plan())
    const first = await runPlan(dir, { ...options, work: scriptedWorker() })
    expect((await observeRun(dir)).waiting).toEqual(first.waiting)
    await until(first.waiting![0]!.deadline!)
    const snapshot = await observeRun(dir)
    expect({ phase: snapshot.phase, waiting: snapshot.waiting, frontier: snapshot.frontier.map((item) => item.node) }).toEqual({
      phase: 'ready',
      waiting: [],
      frontier: ['escalate'],
    })
  })
})
