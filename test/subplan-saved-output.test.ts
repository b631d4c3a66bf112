import { afterEach, describe, expect, it } from 'vitest'
import { completeStep, nextStep, observeRun, runPlan, type Step, type StepInput } from 'vaultplan'
import { crashSeam } from '../src/run/drive/events.js'
import { noJudge } from './helpers/scripted.js'
import { note, writeVault } from './helpers/vault.js'

/*
 * An output saved whole inside a subplan, its hop not recorded (a kill in
 * between), is judged from what was saved, never worked again: the saved
 * output has the whole run's step number, not the subplan's last plus one.
 */

const options = { query: 'q', fsync: false as const, llm: noJudge(), maxSteps: 30 }

afterEach(() => {
  crashSeam.afterEvent = undefined
})

const plan = {
  'a.md': note({ front: { type: 'start' }, title: 'A', body: 'a', next: ['[[p]]'] }),
  'p.md': note({ front: { plan: 'f1' }, title: 'P', body: 'p', next: ['[[z]]'] }),
  'f1/x.md': note({ front: { type: 'start' }, title: 'X', body: 'x', next: ['[[y]]'] }),
  'f1/y.md': note({ title: 'Y', body: 'y' }),
  'z.md': note({ title: 'Z', body: 'z' }),
}

const claimOf = (step: Step) =>
  step.kind === 'work' ? { node: step.plan ? `${step.plan}/${step.node.id}` : step.node.id, visit: step.visit, step: step.step } : step.kind

/** Kills the call right after a worked visit's output is saved (before its note says `done`). */
function killAfterSave(): void {
  crashSeam.afterEvent = (event) => {
    if (event.type === 'work') throw new Error('killed')
  }
}

describe('an output saved inside a subplan before a kill', () => {
  it('stepping: the next call judges the saved output of f1/x (step 2) and claims f1/y, not f1/x again', async () => {
    const dir = await writeVault(plan)
    const first = await nextStep(dir, options)
    const second = await completeStep(dir, (first as Extract<Step, { kind: 'work' }>).key, { output: 'a done' }, options)
    expect(claimOf(second)).toEqual({ node: 'f1/x', visit: 1, step: 2 })
    killAfterSave()
    await expect(completeStep(dir, (second as Extract<Step, { kind: 'work' }>).key, { output: 'x done' }, options)).rejects.toThrow('killed')
    crashSeam.afterEvent = undefined
    const snapshot = await observeRun(dir, { maxSteps: 30 })
    expect(snapshot.frontier[0]).toEqual({ kind: 'judge', node: 'f1/x', visit: 1, step: 2, plan: 'f1' })
    expect(claimOf(await nextStep(dir, options))).toEqual({ node: 'f1/y', visit: 1, step: 3 })
  })

  it('runPlan: the worker is not called again for a visit whose output was saved', async () => {
    const dir = await writeVault(plan)
    const calls: string[] = []
    const work = async (input: StepInput) => {
      calls.push(`${input.plan ? `${input.plan}/` : ''}${input.node.id} ${input.step}`)
      return `${input.node.id} done`
    }
    let works = 0
    crashSeam.afterEvent = (event) => {
      if (event.type === 'work' && ++works === 2) throw new Error('killed')
    }
    await expect(runPlan(dir, { ...options, work })).rejects.toThrow('killed')
    crashSeam.afterEvent = undefined
    expect(await runPlan(dir, { ...options, work })).toMatchObject({ status: 'completed', steps: 4 })
    expect(calls).toEqual(['a 1', 'f1/x 2', 'f1/y 3', 'z 4'])
  })
})
