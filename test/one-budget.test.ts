import { describe, expect, it } from 'vitest'
import { completeStep, nextStep, observeRun, runPlan, type Step } from 'vaultplan'
import { humanReview } from './helpers/plans.js'
import { nestedPlan } from './helpers/subplans.js'
import { note, writeVault } from './helpers/vault.js'

/*
 * One budget (one rule for every surface): the `maxSteps` a call gives, else the budget recorded
 * with the run's latest claim, stop or wait in any vault of its tree, else the one it started
 * with, else 50.
 */

/** A note that loops on itself until told `done`, 100 visits allowed: a run longer than 50 steps. */
function longLoop(): Record<string, string> {
  return {
    'loop.md': note({ front: { type: 'start', max_visits: 100 }, title: 'Loop', body: 'Go round.', next: ['again -> [[loop]]', 'done -> [[end]]'] }),
    'end.md': note({ title: 'End', body: 'Stop.' }),
  }
}

function work(step: Step): Extract<Step, { kind: 'work' }> {
  if (step.kind !== 'work') throw new Error(`expected a step to work, got ${JSON.stringify(step)}`)
  return step
}

describe('one budget', () => {
  it('a maxSteps given to nextStep is recorded: completeStep without it goes on under it, past the default 50', async () => {
    const dir = await writeVault(longLoop())
    let step = work(await nextStep(dir, { query: 'q', maxSteps: 5000 }))
    for (let hop = 1; hop <= 55; hop++) step = work(await completeStep(dir, step.key, { output: `round ${hop}`, choice: 'again' }))
    expect({ node: step.node.id, visit: step.visit, step: step.step }).toEqual({ node: 'loop', visit: 56, step: 56 })
    expect((await observeRun(dir)).maxSteps).toBe(5000)
  })

  it('a maxSteps given to nextStep for a step already claimed is recorded too', async () => {
    const dir = await writeVault(longLoop())
    let step = work(await nextStep(dir, { query: 'q' }))
    step = work(await nextStep(dir, { maxSteps: 70 }))
    for (let hop = 1; hop <= 55; hop++) step = work(await completeStep(dir, step.key, { output: `round ${hop}`, choice: 'again' }))
    expect(step.step).toBe(56)
    expect((await observeRun(dir)).maxSteps).toBe(70)
  })

  it('a budget raised inside a subplan is honoured by the next call without one (the stop outside, the claim inside)', async () => {
    const dir = await writeVault(nestedPlan())
    let step = work(await nextStep(dir, { query: 'q', maxSteps: 2 }))
    step = work(await completeStep(dir, step.key, { output: 'outline' }))
    expect(step.node.id).toBe('find')
    const stopped = await completeStep(dir, step.key, { output: 'found' })
    expect(stopped.kind).toBe('stopped')
    // Raised inside the subplan: the call claims `research/summarise` and records 10 with its claim.
    const raised = work(await nextStep(dir, { maxSteps: 10 }))
    expect({ node: raised.node.id, plan: raised.plan }).toEqual({ node: 'summarise', plan: 'research' })
    // A call without a budget goes on under the one recorded in the subplan: the claimed step is completed, not refused.
    const after = work(await completeStep(dir, raised.key, { output: 'summary' }))
    expect(after.node.id).toBe('write')
    expect(work(await nextStep(dir)).key).toBe(after.key)
  })

  it('a budget given inside a subplan outlives it: the run waits for a person outside, and the next call keeps the budget', async () => {
    const files = {
      ...nestedPlan(),
      'write.md': note({ front: { judge: 'human' }, title: 'Write', body: 'Write the report.', next: ['ok -> [[send]]'] }),
      'send.md': note({ title: 'Send', body: 'Send it.' }),
    }
    const dir = await writeVault(files)
    let step = work(await nextStep(dir, { query: 'q', maxSteps: 2 }))
    step = work(await completeStep(dir, step.key, { output: 'outline' }))
    expect((await completeStep(dir, step.key, { output: 'found' })).kind).toBe('stopped')
    step = work(await nextStep(dir, { maxSteps: 9 }))
    step = work(await completeStep(dir, step.key, { output: 'summary' }))
    expect(step.node.id).toBe('write')
    expect((await completeStep(dir, step.key, { output: 'the report' })).kind).toBe('waiting')
    // Out of the subplan, waiting for a person: the budget the subplan's claim recorded is the run's now.
    expect((await observeRun(dir)).maxSteps).toBe(9)
  })

  it('runPlan without maxSteps resumes under the budget the run last ran with', async () => {
    const dir = await writeVault(humanReview())
    const worker = async () => 'text'
    expect((await runPlan(dir, { query: 'q', maxSteps: 1, work: worker })).status).toBe('stopped')
    // Stopped at 1 and given no budget: it stops again at once (not 50).
    expect((await runPlan(dir, { work: worker })).status).toBe('stopped')
    // Raised by a stepping call, recorded with its claim: the next runPlan with no budget goes on under it.
    expect(work(await nextStep(dir, { maxSteps: 7 })).node.id).toBe('review')
    const again = await runPlan(dir, { work: worker })
    expect({ status: again.status, waiting: again.waiting?.map((each) => each.node) }).toEqual({ status: 'waiting', waiting: ['review'] })
    expect((await observeRun(dir)).maxSteps).toBe(7)
  })
})
