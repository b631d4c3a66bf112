import { describe, expect, it } from 'vitest'
import { completeStep, nextStep, observeRun, runPlan, StepError, type Step, type StepInput } from 'vaultplan'
import { noJudge, scriptedJudge } from './helpers/scripted.js'
import { until } from './helpers/until.js'
import { note, statuses, writeVault } from './helpers/vault.js'

const query = 'Compare the sources'

/** Notes `ids` of a branch folder, each leading to the next; the first is the start. */
function branch(folder: string, ids: string[], front: Record<string, Record<string, string>> = {}): Record<string, string> {
  return Object.fromEntries(
    ids.map((id, index) => [
      `${folder}/${id}.md`,
      note({
        front: { ...(index === 0 && { type: 'start' }), ...front[id] },
        title: id,
        body: `Do ${id}.`,
        ...(index < ids.length - 1 && { next: [`[[${ids[index + 1]}]]`] }),
      }),
    ]),
  )
}

/** `brief`, then `gather` runs `web/` and `library/` at once (three notes each), then `report`: eight works in all. */
function fanOut(): Record<string, string> {
  return {
    'brief.md': note({ front: { type: 'start' }, title: 'Brief', body: 'Say what to look for.', next: ['[[gather]]'] }),
    'gather.md': `---\nplan: [web, library]\n---\n# Gather\n\nGather the material.\n\n## Next\n- [[report]]\n`,
    'report.md': note({ title: 'Report', body: 'Write it up.' }),
    ...branch('web', ['search', 'skim', 'notes']),
    ...branch('library', ['borrow', 'read', 'excerpt']),
  }
}

const everyWork = ['/brief', 'library/borrow', 'library/excerpt', 'library/read', 'web/notes', 'web/search', 'web/skim', '/report'].sort()

/** The last note of each branch of {@link fanOut}. */
const LAST: Record<string, string> = { web: 'web/notes', library: 'library/excerpt' }

/**
 * A worker that answers `<plan/id> v<visit>`. With `overlap` (the budget of
 * a fresh run), each call of a branch waits until a call of the other branch
 * is in flight, unless the other branch has no call left in the run (its
 * last note was called, or the budget is spent): both branches are working
 * when the budget runs out, however busy the machine. `wait` waits as it
 * says instead.
 */
function slowWorker(options: { overlap?: number; wait?: (id: string) => Promise<unknown> } = {}) {
  const calls: string[] = []
  const inputs = new Map<string, StepInput['outputs']>()
  const working = new Map<string, number>()
  let inFlight = 0
  let most = 0
  const overlap = async (branch: string | undefined, budget: number) => {
    const other = branch === 'web' ? 'library' : branch === 'library' ? 'web' : undefined
    if (other === undefined) return
    const left = () => (working.get(other) ?? 0) > 0 || calls.includes(LAST[other]!) || calls.length >= budget
    await until(left, () => `a call of \`${other}/\` beside the one of \`${branch}/\`; calls so far: ${calls.join(', ')}`)
  }
  const work = async (step: StepInput) => {
    const id = `${step.plan ?? ''}/${step.node.id}`
    calls.push(id)
    inputs.set(id, step.outputs)
    inFlight++
    working.set(step.plan ?? '', (working.get(step.plan ?? '') ?? 0) + 1)
    most = Math.max(most, inFlight)
    if (options.wait) await options.wait(id)
    else if (options.overlap !== undefined) await overlap(step.plan, options.overlap)
    working.set(step.plan ?? '', working.get(step.plan ?? '')! - 1)
    inFlight--
    return `${id} v${step.visit}`
  }
  return Object.assign(work, { calls, most: () => most, seen: (id: string) => inputs.get(id) ?? [] })
}

function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms))
}

/** The outputs a worker saw, as `<id> v<visit>` without the folder. */
function outputsOf(outputs: StepInput['outputs']): string[] {
  return outputs.map((each) => each.output.replace(/^.*\//, ''))
}

describe('a budget that runs out while parallel branches work', () => {
  for (const maxSteps of [2, 3, 4, 6]) {
    it(`stops after exactly ${maxSteps} worker calls (maxSteps ${maxSteps}) and keeps every finished output`, async () => {
      const dir = await writeVault(fanOut())
      const first = slowWorker({ overlap: maxSteps })
      const stopped = await runPlan(dir, { query, fsync: false, llm: noJudge(), work: first, maxSteps })
      expect(stopped).toMatchObject({ status: 'stopped', steps: maxSteps, stop: { budget: 'maxSteps' } })
      expect(first.calls).toHaveLength(maxSteps)
      if (maxSteps > 2) expect(first.most()).toBe(2)
      // A claim the budget refused wrote nothing: only the note that runs the branches is `active`.
      expect(Object.entries(await statuses(dir)).filter(([, status]) => status === 'active')).toEqual([['gather', 'active']])

      // The same budget again: nothing more is worked.
      const again = slowWorker()
      expect(await runPlan(dir, { fsync: false, llm: noJudge(), work: again, maxSteps })).toMatchObject({ status: 'stopped', steps: maxSteps })
      expect(again.calls).toEqual([])

      // One step more: one worker call more, whichever branch is asked first.
      const one = slowWorker()
      expect(await runPlan(dir, { fsync: false, llm: noJudge(), work: one, maxSteps: maxSteps + 1 })).toMatchObject({
        status: 'stopped',
        steps: maxSteps + 1,
      })
      expect(one.calls).toHaveLength(1)

      // A larger budget goes on: every visit worked once, over the calls, and the finished outputs are the ones joined.
      const rest = slowWorker()
      const done = await runPlan(dir, { fsync: false, llm: noJudge(), work: rest, maxSteps: 50 })
      expect(done).toMatchObject({ status: 'completed', steps: 8, output: '/report v1' })
      expect([...first.calls, ...one.calls, ...rest.calls].sort()).toEqual(everyWork)
      expect(Object.values(done.visits).every((visits) => visits === 1)).toBe(true)
      expect(rest.seen('/report').find((each) => each.node === 'gather')?.output).toBe('## web\n\nweb/notes v1\n\n## library\n\nlibrary/excerpt v1\n')
      // Each branch's last note saw the outputs of its branch, those made before the stop included.
      expect(outputsOf([...first.seen('web/notes'), ...one.seen('web/notes'), ...rest.seen('web/notes')])).toEqual(['search v1', 'skim v1'])
      expect(outputsOf([...first.seen('library/excerpt'), ...one.seen('library/excerpt'), ...rest.seen('library/excerpt')])).toEqual(['borrow v1', 'read v1'])
    })
  }

  it('stops stepping at the same budget, one branch after the other, and goes on there', async () => {
    const dir = await writeVault(fanOut())
    const worked: string[] = []
    let step: Step = await nextStep(dir, { query, fsync: false, maxSteps: 4 })
    while (step.kind === 'work') {
      worked.push(`${step.plan ?? ''}/${step.node.id}`)
      step = await completeStep(dir, step.key, { output: 'ok' }, { fsync: false, maxSteps: 4 })
    }
    // `library/` has not begun: the stop names its first visit, as the snapshot does, and a larger budget goes on there.
    expect(step).toMatchObject({ kind: 'stopped', stop: { budget: 'maxSteps', node: 'library/borrow' } })
    expect((await observeRun(dir, { maxSteps: 4 })).stop).toEqual(step.kind === 'stopped' && { ...step.stop, reason: step.reason })
    expect(worked).toEqual(['/brief', 'web/search', 'web/skim', 'web/notes'])
    step = await nextStep(dir, { fsync: false, maxSteps: 50 })
    while (step.kind === 'work') {
      worked.push(`${step.plan ?? ''}/${step.node.id}`)
      step = await completeStep(dir, step.key, { output: 'ok' }, { fsync: false, maxSteps: 50 })
    }
    expect(step).toMatchObject({ kind: 'completed', node: 'report' })
    expect(worked.slice(4)).toEqual(['library/borrow', 'library/read', 'library/excerpt', '/report'])
  })

  it('holds with a subplan inside a branch: its works count while they pass into the note that ran it', async () => {
    const files = fanOut()
    Object.assign(files, branch('web', ['search', 'deep', 'notes'], { deep: { plan: 'deeper' } }), branch('web/deeper', ['dig', 'sift']))
    delete files['web/skim.md']
    files['web/deep.md'] = files['web/deep.md']!.replace('- [[notes]]', '- found -> [[notes]]')
    // While `deep` is judged, the works of `deeper/` are on their way into its record: `library/read` ends then, and the
    // judge waits for `library/excerpt` to be claimed (or 100 ms), so the claim is made while they are on their way.
    const timed = () => {
      let judging: () => void = () => {}
      let excerpt: () => void = () => {}
      const judged = new Promise<void>((resolve) => (judging = resolve))
      const excerpted = new Promise<void>((resolve) => (excerpt = resolve))
      const llm = scriptedJudge(async () => {
        judging()
        await Promise.race([excerpted, sleep(100)])
        return '1: YES'
      })
      const work = slowWorker({
        wait: (id) => {
          if (id === 'library/excerpt') excerpt()
          return id === 'library/read' ? Promise.race([judged, sleep(200)]) : sleep(5)
        },
      })
      return { llm, work }
    }
    // Nine works in all: brief, web/search, web/deeper/dig, web/deeper/sift, web/notes, the three of library, report.
    for (const maxSteps of [3, 4, 5, 6, 7, 8]) {
      const dir = await writeVault(files)
      const { llm, work: first } = timed()
      expect(await runPlan(dir, { query, fsync: false, llm, work: first, maxSteps })).toMatchObject({ status: 'stopped', steps: maxSteps })
      expect(first.calls).toHaveLength(maxSteps)
      const { llm: again, work: rest } = timed()
      expect(await runPlan(dir, { fsync: false, llm: again, work: rest, maxSteps: 50 })).toMatchObject({ status: 'completed', steps: 9 })
      expect([...first.calls, ...rest.calls]).toHaveLength(9)
      expect(new Set([...first.calls, ...rest.calls]).size).toBe(9)
    }
  })

  it('works only what the budget allows of visits both branches claimed before a crash', async () => {
    const dir = await writeVault(fanOut())
    // Both branches' first visits are claimed, then their worker fails: both notes stay `active`.
    const failing = async (step: StepInput) => {
      if (step.plan) throw new Error('worker down')
      return 'brief v1'
    }
    await expect(runPlan(dir, { query, fsync: false, llm: noJudge(), work: failing, maxSteps: 50 })).rejects.toBeInstanceOf(StepError)
    const again = slowWorker()
    expect(await runPlan(dir, { fsync: false, llm: noJudge(), work: again, maxSteps: 2 })).toMatchObject({ status: 'stopped', steps: 2 })
    expect(again.calls).toHaveLength(1)
    const rest = slowWorker()
    expect(await runPlan(dir, { fsync: false, llm: noJudge(), work: rest, maxSteps: 50 })).toMatchObject({ status: 'completed', steps: 8 })
    expect([...again.calls, ...rest.calls, '/brief'].sort()).toEqual(everyWork)
  })
})

describe('a budget resumed with a subplan under way inside a branch', () => {
  it.each([2, 3, 4])('counts what the nested subplan recorded before the call, so maxSteps %i holds', async (maxSteps) => {
    const dir = await writeVault({
      'p.md': `---\ntype: start\nplan: [s1, s2]\n---\n# P\n\nBoth branches.\n\n## Next\n- [[end]]\n`,
      'end.md': note({ title: 'End', body: 'End.' }),
      's1/n.md': `---\ntype: start\nplan: inner\n---\n# N\n\nThe inner plan.\n`,
      ...branch('s1/inner', ['i1', 'i2', 'i3']),
      ...branch('s2', ['a', 'b']),
    })
    // Two works recorded inside s1/inner by the stepping calls, the third handed out.
    let step = await nextStep(dir, { query, fsync: false })
    step = await completeStep(dir, (step as Extract<Step, { kind: 'work' }>).key, { output: 'ok' })
    step = await completeStep(dir, (step as Extract<Step, { kind: 'work' }>).key, { output: 'ok' })
    const worked: string[] = []
    const result = await runPlan(dir, {
      fsync: false,
      maxSteps,
      llm: noJudge(),
      work: async (input: StepInput) => (worked.push(`${input.plan}/${input.node.id}`), 'ok'),
    })
    expect({ status: result.status, steps: result.steps, calls: worked.length }).toEqual({ status: 'stopped', steps: maxSteps, calls: maxSteps - 2 })
  })
})

describe('a visit left claimed in one branch by a failed worker', () => {
  it('is worked again with its key before the other branch starts a new one: one step of maxSteps 1 is one worker call', async () => {
    const dir = await writeVault({
      'n0.md': `---\ntype: start\nplan: [f1, f2]\n---\n# N0\n\nDo n0.\n`,
      ...branch('f1', ['a']),
      ...branch('f2', ['b']),
    })
    const keys: string[] = []
    const failing = async (input: StepInput) => {
      keys.push(input.key)
      throw new Error('worker down')
    }
    await expect(runPlan(dir, { query, fsync: false, llm: noJudge(), work: failing, maxSteps: 1 })).rejects.toThrow('worker down')
    expect(keys).toHaveLength(1)
    const again: string[] = []
    const result = await runPlan(dir, { fsync: false, llm: noJudge(), maxSteps: 1, work: async (input: StepInput) => (again.push(input.key), 'done') })
    expect(again).toEqual(keys)
    // The branch that cannot start stops the run at its first visit, as the snapshot says.
    expect(result).toMatchObject({ status: 'stopped', steps: 1, stop: { node: 'f2/b' } })
    expect((await observeRun(dir, { maxSteps: 1 })).stop).toEqual({ ...result.stop, reason: result.reason })
  })
})
