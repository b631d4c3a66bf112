import { describe, expect, it } from 'vitest'
import { nextStep, observeRun, readRunStatus, runPlan } from 'vaultplan'
import { vaultplan } from './helpers/cli.js'
import { noJudge } from './helpers/scripted.js'
import { nestedPlan } from './helpers/subplans.js'
import { edit, note, writeVault } from './helpers/vault.js'

/*
 * Every surface reads one value of where a run stands (SPEC section 15):
 * `observeRun`, `readRunStatus`, `vaultplan status` and `vaultplan graph`
 * agree with what `runPlan` and `nextStep` do.
 */

const options = { query: 'Write a report on solar power', fsync: false, llm: noJudge() } as const
const work = async (step: { node: { id: string } }) => step.node.id

describe('observeRun and the surfaces that read it', () => {
  it('after a subplan, status and the snapshot count the run’s works as runPlan does, and stop where it stops', async () => {
    const dir = await writeVault(nestedPlan())
    // outline, research/find, research/summarise: three works, and `write` is refused.
    const result = await runPlan(dir, { ...options, work, maxSteps: 3 })
    expect(result).toMatchObject({ status: 'stopped', steps: 3, stop: { budget: 'maxSteps', node: 'write', visit: 1 } })

    const status = await readRunStatus(dir, { maxSteps: 3 })
    expect({ phase: status.phase, steps: status.steps, next: status.next }).toEqual({
      phase: 'stopped',
      steps: 3,
      next: { kind: 'stopped', node: 'write', visit: 1 },
    })
    const snapshot = await observeRun(dir, { maxSteps: 3 })
    expect({ phase: snapshot.phase, steps: snapshot.steps, frontier: snapshot.frontier, stop: snapshot.stop?.node }).toEqual({
      phase: 'stopped',
      steps: 3,
      frontier: [],
      stop: 'write',
    })
    const cli = await vaultplan(['status', '.'], { cwd: dir })
    expect(cli.stdout).toContain(`run ${result.runId}, 3 steps of 3,`)

    // With room for one more, the frontier's first item is what the next `nextStep` claims.
    const ready = await observeRun(dir, { maxSteps: 4 })
    expect(ready.phase).toBe('ready')
    const step = await nextStep(dir, { maxSteps: 4, fsync: false })
    expect(step.kind).toBe('work')
    if (step.kind === 'work') expect(ready.frontier[0]).toEqual({ kind: 'work', node: step.node.id, visit: step.visit, step: step.step })
  })

  it('while a subplan runs, the frontier holds its next visit and the status names it', async () => {
    const dir = await writeVault(nestedPlan())
    const first = await nextStep(dir, { query: options.query, fsync: false })
    expect(first).toMatchObject({ kind: 'work', node: { id: 'outline' } })
    const snapshot = await observeRun(dir)
    expect(snapshot.frontier).toEqual([{ kind: 'work', node: 'outline', visit: 1, step: 1 }])
  })

  it('vaultplan graph shows the visits of the notes inside a subplan of a completed run', async () => {
    const dir = await writeVault(nestedPlan())
    await runPlan(dir, { ...options, work })
    const snapshot = await observeRun(dir)
    expect(snapshot.phase).toBe('completed')
    const visits = snapshot.nodes.flatMap((each) => [
      [each.id, each.visits],
      ...(each.subplans ?? []).flatMap((sub) => sub.nodes.map((inner) => [inner.id, inner.visits])),
    ])
    expect(visits).toEqual([
      ['outline', 1],
      ['research', 1],
      ['research/find', 1],
      ['research/summarise', 1],
      ['write', 1],
    ])
    const graph = await vaultplan(['graph', '.'], { cwd: dir })
    expect(graph.stdout).toContain('find (1/3)')
    expect(graph.stdout).toContain('summarise (1/3)')
  })

  it('vaultplan status lists the notes in plan order, with one marker where the run is', async () => {
    // File order (alpha, mid, zeta) is not plan order (zeta, alpha, mid).
    const dir = await writeVault({
      'zeta.md': note({ front: { type: 'start' }, title: 'Zeta', body: 'First.', next: ['[[alpha]]'] }),
      'alpha.md': note({ title: 'Alpha', body: 'Second.', next: ['[[mid]]'] }),
      'mid.md': note({ title: 'Mid', body: 'Last.' }),
    })
    await nextStep(dir, { query: 'q', fsync: false })
    const status = await readRunStatus(dir)
    expect(status.nodes.map((each) => each.id)).toEqual(['zeta', 'alpha', 'mid'])
    expect((await observeRun(dir)).nodes.map((each) => each.id)).toEqual(['zeta', 'alpha', 'mid'])
    const cli = await vaultplan(['status', '.'], { cwd: dir })
    expect(cli.stdout.match(/^>.*$/gm)).toEqual([expect.stringMatching(/^> +zeta +active/)])
  })
})

describe('the budget a snapshot decides for when not told one', () => {
  it('is the one the run last ran with, not the one it started with', async () => {
    const dir = await writeVault({
      'ask.md': note({ front: { type: 'start', judge: 'human' }, title: 'Ask', body: 'Ask a person.', next: ['[ ] go -> [[b]]'] }),
      'b.md': note({ title: 'B', body: 'Do b.', next: ['[[c]]'] }),
      'c.md': note({ title: 'C', body: 'Do c.' }),
    })
    expect(await runPlan(dir, { ...options, work, maxSteps: 5 })).toMatchObject({ status: 'waiting' })
    await edit(dir, 'ask.md', (text) => text.replace('- [ ] go', '- [x] go'))
    // The person's decision is recorded; `b` is refused by this call's budget of 1.
    expect(await runPlan(dir, { ...options, work, maxSteps: 1 })).toMatchObject({ status: 'stopped', stop: { node: 'b' } })
    const snapshot = await observeRun(dir)
    expect({ phase: snapshot.phase, maxSteps: snapshot.maxSteps }).toEqual({ phase: 'stopped', maxSteps: 1 })
    expect((await readRunStatus(dir)).phase).toBe('stopped')
    expect((await observeRun(dir, { maxSteps: 5 })).phase).toBe('ready')
  })
})
