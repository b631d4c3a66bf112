import { describe, expect, it } from 'vitest'
import { observeRun, runPlan, type StepInput } from 'vaultplan'
import { noJudge } from './helpers/scripted.js'
import { note, writeVault } from './helpers/vault.js'

/*
 * A visit a failed worker left claimed two levels down in one branch
 * (f2/h/u) holds its step when runPlan resumes, as the snapshot's frontier
 * says: the other branch's nested vault (f1/g) opens first and must not
 * take the last step with a new claim (SPEC section 15, "Agreement holds",
 * "Budgets compose"). Found by the agreement property with seed 99.
 */

const options = { query: 'q', fsync: false as const, llm: noJudge(), maxSteps: 2 }

describe('a visit claimed inside a nested subplan of the second branch', () => {
  it('is worked first on resume, within maxSteps, as frontier[0] says', async () => {
    const dir = await writeVault({
      'n0.md': note({ front: { type: 'start', plan: '[f1, f2]' }, title: 'N0', body: 'Do n0.' }),
      'f1/a.md': note({ front: { type: 'start', plan: 'g' }, title: 'A', body: 'a' }),
      'f1/g/x.md': note({ front: { type: 'start' }, title: 'X', body: 'x', next: ['[[y]]'] }),
      'f1/g/y.md': note({ title: 'Y', body: 'y' }),
      'f2/b.md': note({ front: { type: 'start', plan: 'h' }, title: 'B', body: 'b' }),
      'f2/h/u.md': note({ front: { type: 'start' }, title: 'U', body: 'u' }),
    })
    const calls: string[] = []
    let fail = true
    // x finishes only once u has been claimed: on a busy machine a timer let x finish first, and y then
    // took the last step before u could claim it (the run stopped instead of failing).
    let uClaimed!: () => void
    const uStarted = new Promise<void>((resolve) => (uClaimed = resolve))
    const work = async (input: StepInput) => {
      calls.push(`${input.plan}/${input.node.id} ${input.step}`)
      if (input.node.id === 'u') uClaimed()
      if (fail && input.node.id === 'u') throw new Error('worker down')
      if (input.node.id === 'x') await uStarted
      return `${input.node.id} done`
    }
    await expect(runPlan(dir, { ...options, work })).rejects.toThrow('worker down')
    expect(calls).toEqual(['f1/g/x 1', 'f2/h/u 2'])
    fail = false
    const snapshot = await observeRun(dir, { maxSteps: 2 })
    expect(snapshot.frontier).toEqual([{ kind: 'work', node: 'f2/h/u', visit: 1, step: 2, plan: 'f2/h' }])
    const result = await runPlan(dir, { ...options, work })
    // The claimed visit is worked again with its step; f1/g/y gets no step of the budget.
    expect(calls).toEqual(['f1/g/x 1', 'f2/h/u 2', 'f2/h/u 2'])
    expect(result).toMatchObject({ status: 'stopped', steps: 2, stop: { node: 'f1/g/y' } })
  })
})
