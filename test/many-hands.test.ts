import { readdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { blockStep, completeStep, decide, deferStep, nextStep, observeRun, readRunStatus, RunStateError, runPlan, type Step } from 'vaultplan'
import { vaultplan } from './helpers/cli.js'
import { noJudge } from './helpers/scripted.js'
import { branchedPlan } from './helpers/subplans.js'
import { edit, note, read, writeVault } from './helpers/vault.js'
import { work } from './helpers/plans.js'

const query = 'Survey the field'
const base = { fsync: false, llm: noJudge() } as const

function where(step: Step): string {
  const at = work(step)
  return at.plan ? `${at.plan}/${at.node.id}` : at.node.id
}

describe('several agents on one plan (section 16)', () => {
  it('two agents work the two branches at once, a third is told busy, and each finishes its own', async () => {
    const dir = await writeVault(branchedPlan())
    const start = work(await nextStep(dir, { ...base, query, agent: 'ada' }))
    const research = await completeStep(dir, start.key, { output: 'framed' }, { ...base, agent: 'ada' })
    expect(where(research)).toBe('web/search')

    // Bob gets the other branch, not Ada's claim; asking again returns the same claim.
    const papers = await nextStep(dir, { ...base, agent: 'bob' })
    expect(where(papers)).toBe('papers/find')
    expect(work(await nextStep(dir, { ...base, agent: 'bob' })).key).toBe(work(papers).key)
    expect(work(await nextStep(dir, { ...base, agent: 'ada' })).key).toBe(work(research).key)

    // Carol finds every ready note held.
    const busy = await nextStep(dir, { ...base, agent: 'carol' })
    expect(busy.kind).toBe('busy')
    if (busy.kind !== 'busy') throw new Error('unreachable')
    expect(busy.claims.map((item) => [item.node, item.claim?.agent])).toEqual([
      ['web/search', 'ada'],
      ['papers/find', 'bob'],
    ])

    // The snapshot's frontier shows who holds what.
    const snapshot = await observeRun(dir)
    expect(snapshot.frontier.map((item) => [item.node, item.claim?.agent])).toEqual([
      ['web/search', 'ada'],
      ['papers/find', 'bob'],
    ])

    // Bob finishes papers; Ada finishes search, then read; the note joins and the report comes next.
    const afterBob = await completeStep(dir, work(papers).key, { output: 'three papers' }, { ...base, agent: 'bob' })
    expect(afterBob.kind).toBe('busy')
    const read1 = await completeStep(dir, work(research).key, { output: 'ten hits' }, { ...base, agent: 'ada' })
    expect(where(read1)).toBe('web/read')
    const report = await completeStep(dir, work(read1).key, { output: 'read them' }, { ...base, agent: 'ada' })
    expect(where(report)).toBe('report')
    const done = await completeStep(dir, work(report).key, { output: 'the report' }, { ...base, agent: 'ada' })
    expect(done.kind).toBe('completed')
  })

  it('an expired claim is taken by another agent with the same key; the first to complete wins', async () => {
    const dir = await writeVault(branchedPlan())
    const start = work(await nextStep(dir, { ...base, query, agent: 'ada', leaseMs: 1 }))
    await new Promise((resolve) => setTimeout(resolve, 10))
    const taken = work(await nextStep(dir, { ...base, agent: 'bob' }))
    expect(taken.key).toBe(start.key)
    expect(taken.visit).toBe(1)
    expect((await observeRun(dir)).frontier[0]?.claim?.agent).toBe('bob')
    await completeStep(dir, taken.key, { output: 'bob framed it' }, { ...base, agent: 'bob' })
    const late = await completeStep(dir, start.key, { output: 'ada framed it' }, { ...base, agent: 'ada' }).catch((error: unknown) => error)
    expect(late).toBeInstanceOf(RunStateError)
    expect((late as RunStateError).code).toBe('stale-step')
  })

  it('runPlan leaves an agent’s live claim alone and rejects busy when only claimed work remains', async () => {
    const dir = await writeVault(branchedPlan())
    const start = work(await nextStep(dir, { ...base, query, agent: 'ada' }))
    await completeStep(dir, start.key, { output: 'framed' }, { ...base, agent: 'ada' })
    const worked: string[] = []
    const error = await runPlan(dir, {
      ...base,
      work: async (step) => {
        worked.push(`${step.plan}/${step.node.id}`)
        return 'done'
      },
    }).catch((caught: unknown) => caught)
    expect(worked).toEqual(['papers/find'])
    expect(error).toBeInstanceOf(RunStateError)
    expect((error as RunStateError).code).toBe('busy')
    expect((error as RunStateError<'busy'>).data.claims.map((item) => item.node)).toEqual(['web/search'])
  })
})

describe('deferStep and blockStep', () => {
  it('a deferred step comes after the other ready work, the same visit and step when it comes back', async () => {
    const dir = await writeVault(branchedPlan())
    const start = work(await nextStep(dir, { ...base, query }))
    const search = work(await completeStep(dir, start.key, { output: 'framed' }, base))
    expect(where(search)).toBe('web/search')
    const next = await deferStep(dir, search.key, { reason: 'the search engine is down' }, base)
    expect(where(next)).toBe('papers/find')
    expect((await observeRun(dir)).frontier.map((item) => item.node)).toEqual(['papers/find', 'web/search'])
    const back = work(await completeStep(dir, work(next).key, { output: 'papers' }, base))
    expect([where(back), back.key, back.visit, back.step]).toEqual(['web/search', search.key, 1, search.step])
    expect(await read(dir, 'web/00_plan-trace/trace.md')).toContain('"reason":"the search engine is down"')
  })

  it('a blocked step waits for a person; decide `unblock` hands their feedback to the same visit', async () => {
    const dir = await writeVault(branchedPlan())
    const start = work(await nextStep(dir, { ...base, query, agent: 'ada' }))
    const blocked = await blockStep(dir, start.key, { reason: 'which field?' }, { ...base, agent: 'ada' })
    expect(blocked.kind).toBe('waiting')
    if (blocked.kind !== 'waiting') throw new Error('unreachable')
    expect(blocked.waiting).toMatchObject([{ kind: 'blocked', node: 'start', choices: ['unblock'], reason: 'which field?' }])
    expect((await observeRun(dir)).waiting).toMatchObject([{ kind: 'blocked', node: 'start', reason: 'which field?' }])
    expect(await read(dir, 'start.md')).toContain('status: waiting')
    // Asking again changes nothing; a tick in a blocked note is ignored; another choice is refused.
    expect((await nextStep(dir, { ...base, agent: 'ada' })).kind).toBe('waiting')
    const refused = await decide(dir, 'start', { edge: 'research' }).catch((error: unknown) => error)
    expect((refused as RunStateError).code).toBe('bad-choice')

    await decide(dir, 'start', { edge: 'unblock', feedback: 'Solar power.' })
    expect(await read(dir, 'start.md')).toContain('status: pending')
    const again = work(await nextStep(dir, { ...base, agent: 'ada' }))
    expect([again.key, again.visit, again.step]).toEqual([start.key, start.visit, start.step])
    expect(again.outputs.at(-1)).toEqual({ node: 'start', visit: 1, output: 'Solar power.', feedback: true })
  })

  it('a blocked note in a folder of the top plan (not a subplan) is unblocked by decide too', async () => {
    const dir = await writeVault({
      'notes/first.md': note({ front: { type: 'start' }, title: 'First', body: 'Do it.', next: ['[[notes/last]]'] }),
      'notes/last.md': note({ title: 'Last', body: 'Finish.' }),
    })
    const first = work(await nextStep(dir, { ...base, query }))
    expect(first.node.id).toBe('notes/first')
    await blockStep(dir, first.key, { reason: 'stuck' }, base)
    await decide(dir, 'notes/first', { edge: 'unblock', feedback: 'Go on.' })
    expect(work(await nextStep(dir, base)).key).toBe(first.key)
  })

  it('setting `status: pending` in the note by hand unblocks it too', async () => {
    const dir = await writeVault(branchedPlan())
    const start = work(await nextStep(dir, { ...base, query }))
    await blockStep(dir, start.key, { reason: 'stuck' }, base)
    await edit(dir, 'start.md', (text) => text.replace('status: waiting', 'status: pending'))
    expect(work(await nextStep(dir, base)).key).toBe(start.key)
  })

  it('a key that is not pending is stale and writes nothing', async () => {
    const dir = await writeVault(branchedPlan())
    await nextStep(dir, { ...base, query })
    const before = await read(dir, '00_plan-trace/trace.md')
    const error = await deferStep(dir, 'nope:start:1', { reason: 'x' }, base).catch((caught: unknown) => caught)
    expect((error as RunStateError).code).toBe('stale-step')
    expect(await read(dir, '00_plan-trace/trace.md')).toBe(before)
  })
})

describe('a deadline on a blocked step (`wait:`)', () => {
  function waitingPlan(next: string[]): Record<string, string> {
    return {
      'ask.md': note({ front: { type: 'start', wait: '1s' }, title: 'Ask', body: 'Ask the client.', next }),
      'fallback.md': note({ title: 'Fallback', body: 'Go on without them.' }),
      'done.md': note({ title: 'Done', body: 'Wrap up.' }),
    }
  }

  it('takes the `timeout` edge once nobody unblocked it in time', async () => {
    const dir = await writeVault(waitingPlan(['timeout -> [[fallback]]', 'answered -> [[done]]']))
    const ask = work(await nextStep(dir, { ...base, query, agent: 'ada' }))
    const blocked = await blockStep(dir, ask.key, { reason: 'the client is away' }, { ...base, agent: 'ada' })
    if (blocked.kind !== 'waiting') throw new Error('expected waiting')
    expect(blocked.waiting[0]).toMatchObject({ kind: 'blocked', since: expect.any(String), deadline: expect.any(String) })
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const next = await nextStep(dir, { ...base, agent: 'ada' })
    expect(where(next)).toBe('fallback')
    expect(await read(dir, '00_plan-trace/trace.md')).toContain('"decidedBy":"timeout"')
  })

  it('without a `timeout` edge it keeps waiting, overdue', async () => {
    const dir = await writeVault(waitingPlan(['[[done]]']))
    const ask = work(await nextStep(dir, { ...base, query }))
    await blockStep(dir, ask.key, { reason: 'the client is away' }, base)
    await new Promise((resolve) => setTimeout(resolve, 1100))
    const still = await nextStep(dir, base)
    if (still.kind !== 'waiting') throw new Error('expected waiting')
    expect(still.waiting[0]).toMatchObject({ kind: 'blocked', node: 'ask', overdue: true })
    expect((await observeRun(dir)).waiting[0]).toMatchObject({ kind: 'blocked', overdue: true })
  })
})

describe('status shows who works on what', () => {
  it("readRunStatus shows an agent's live claim beside the phase, and vaultplan status names the agent", async () => {
    const dir = await writeVault(branchedPlan())
    const start = work(await nextStep(dir, { ...base, query, agent: 'ada' }))
    const status = await readRunStatus(dir)
    expect(status.phase).toBe('ready')
    expect(status.claims?.map((item) => [item.node, item.claim?.agent, item.claim?.key])).toEqual([['start', 'ada', start.key]])
    const printed = await vaultplan(['status', dir])
    expect(printed.stdout).toContain('Claimed by agents:')
    expect(printed.stdout).toMatch(/start \(visit 1\): ada, until \d{4}-/)
  })
})

describe('a finished run leaves no temporary file behind', () => {
  it('a write a crash cut short in a branch that finished before it is cleaned up when the run completes', async () => {
    const dir = await writeVault(branchedPlan())
    let step = await nextStep(dir, { ...base, query, agent: 'ada' })
    while (step.kind === 'work') {
      // Once `papers` finished, a power cut undid a rename there: its temporary name came back (as the crash harness saw).
      if (step.plan === undefined && step.node.id === 'report')
        await writeFile(join(dir, 'papers', '00_plan-trace', 'outputs', '.vaultplan-tmp-4242-old-1h'), 'half a note')
      step = await completeStep(dir, step.key, { output: `${step.node.id} done` }, { ...base, agent: 'ada' })
    }
    expect(step.kind).toBe('completed')
    expect(await readdir(join(dir, 'papers', '00_plan-trace', 'outputs'))).not.toContain('.vaultplan-tmp-4242-old-1h')
  })
})
