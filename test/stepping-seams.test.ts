import { describe, expect, it } from 'vitest'
import { blockStep, completeStep, deferStep, nextStep, observeRun, RunStateError, type Step } from 'vaultplan'
import { branchedPlan, nestedPlan } from './helpers/subplans.js'
import { readTree, writeVault } from './helpers/vault.js'

/*
 * Seams of stepping through a tree of vaults: a subplan's last note does not end the run, a completion
 * repeated after its answer got lost is answered anywhere, a live claim is moved only by its own agent,
 * and a run is named by its top vault's run id in every branch.
 */

function work(step: Step): Extract<Step, { kind: 'work' }> {
  if (step.kind !== 'work') throw new Error(`expected a step to work, got ${JSON.stringify(step)}`)
  return step
}

describe("a subplan's last note", () => {
  it("is not the run's end: its step says terminal false; only the last note of the whole run says true", async () => {
    const dir = await writeVault(nestedPlan())
    const outline = work(await nextStep(dir, { query: 'q' }))
    const find = work(await completeStep(dir, outline.key, { output: 'outline' }))
    const summarise = work(await completeStep(dir, find.key, { output: 'found' }))
    const write = work(await completeStep(dir, summarise.key, { output: 'summary' }))
    expect([outline, find, summarise, write].map((step) => [step.plan ?? '', step.node.id, step.terminal])).toEqual([
      ['', 'outline', false],
      ['research', 'find', false],
      ['research', 'summarise', false],
      ['', 'write', true],
    ])
  })
})

describe('a completion repeated with the key and the output it saved', () => {
  it("answers the run's current step with saved: true, a subplan's last note included, and writes nothing again", async () => {
    const dir = await writeVault(nestedPlan())
    const outline = work(await nextStep(dir, { query: 'q' }))
    const find = work(await completeStep(dir, outline.key, { output: 'outline' }))
    const summarise = work(await completeStep(dir, find.key, { output: 'found' }))
    const write = work(await completeStep(dir, summarise.key, { output: 'summary' }))
    const before = await readTree(dir)
    for (const [key, output] of [
      [summarise.key, 'summary'],
      [find.key, 'found'],
      [outline.key, 'outline'],
    ] as const) {
      const again = await completeStep(dir, key, { output })
      expect({ saved: again.saved, kind: again.kind, key: again.kind === 'work' ? again.key : '' }).toEqual({ saved: true, kind: 'work', key: write.key })
    }
    expect(await readTree(dir)).toEqual(before)
  })

  it('stays stale-step for a key never completed with that output', async () => {
    const dir = await writeVault(nestedPlan())
    const outline = work(await nextStep(dir, { query: 'q' }))
    const find = work(await completeStep(dir, outline.key, { output: 'outline' }))
    work(await completeStep(dir, find.key, { output: 'found' }))
    await expect(completeStep(dir, find.key, { output: 'something else' })).rejects.toMatchObject({ code: 'stale-step' })
  })
})

describe('a live claim', () => {
  it('is completed, deferred or blocked only by its own agent: another gets `claimed`, and nothing is written', async () => {
    const dir = await writeVault(branchedPlan())
    const start = work(await nextStep(dir, { query: 'q', agent: 'ada' }))
    const search = work(await completeStep(dir, start.key, { output: 'framed' }, { agent: 'ada' }))
    expect(search.node.id).toBe('search')
    const held = (await observeRun(dir)).frontier.find((item) => item.node === 'web/search')?.claim
    expect(held).toMatchObject({ agent: 'ada', key: search.key })
    const before = await readTree(dir)
    for (const call of [
      () => completeStep(dir, search.key, { output: 'mine now' }, { agent: 'bob' }),
      () => deferStep(dir, search.key, { reason: 'later' }, { agent: 'bob' }),
      () => blockStep(dir, search.key, { reason: 'stuck' }, { agent: 'bob' }),
    ]) {
      const refused = await call().catch((error: unknown) => error)
      expect(refused).toBeInstanceOf(RunStateError)
      expect(refused).toMatchObject({ code: 'claimed', data: { claim: held } })
    }
    expect(await readTree(dir)).toEqual(before)
    // Ada's work is still hers to hand in.
    expect((await completeStep(dir, search.key, { output: 'hits' }, { agent: 'ada' })).kind).toBe('work')
  })
})

describe("a run's id", () => {
  it("is the top vault's in every branch and subplan: two agents on two branches see one run", async () => {
    const dir = await writeVault(branchedPlan())
    const start = work(await nextStep(dir, { query: 'q', agent: 'ada' }))
    const search = work(await completeStep(dir, start.key, { output: 'framed' }, { agent: 'ada' }))
    const find = work(await nextStep(dir, { agent: 'bob' }))
    expect([search.plan, find.plan]).toEqual(['web', 'papers'])
    expect(new Set([start.runId, search.runId, find.runId])).toEqual(new Set([start.runId]))
    expect((await observeRun(dir)).run?.id).toBe(start.runId)
    // A subplan's own run id stays in its keys.
    expect(search.key.startsWith(`${start.runId}:`)).toBe(false)
  })
})
