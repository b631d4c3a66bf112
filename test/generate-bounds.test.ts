import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, observeRun, PlanValidationError, runPlan, type RunResult, type StepInput } from 'vaultplan'
import { scriptedJudge } from './helpers/scripted.js'
import { note, read, writeVault } from './helpers/vault.js'

const query = 'Write a report on solar power'

/** `outline`, then `research` (`plan: generate`), then `write`. */
function generatedPlan(): Record<string, string> {
  return {
    'outline.md': note({ front: { type: 'start' }, title: 'Outline', body: 'Outline the report.', next: ['[[research]]'] }),
    'research.md': note({ front: { plan: 'generate' }, title: 'Research', body: 'Find the figures on solar power.', next: ['[[write]]'] }),
    'write.md': note({ title: 'Write', body: 'Write the report.' }),
  }
}

/** A planner that always decomposes again: the start note of every plan it writes says `plan: generate`. */
function endlessPlanner() {
  return scriptedJudge(() => '## dig\ntype: start\nplan: generate\nDig deeper.\n### Next\n- [[jot]]\n\n## jot\nWrite down what was found.\n')
}

const work = async (step: StepInput) => `${step.plan ?? ''}/${step.node.id}`

/** How many folders deep the vault's folders go (`00_plan-trace/` not counted). */
async function depthOf(dir: string): Promise<number> {
  const entries = await readdir(dir, { withFileTypes: true })
  let deepest = 0
  for (const entry of entries)
    if (entry.isDirectory() && entry.name !== '00_plan-trace') deepest = Math.max(deepest, 1 + (await depthOf(join(dir, entry.name))))
  return deepest
}

/** A vault whose notes run subplans nested `depth` folders deep: `d1/d2/.../d<depth>/leaf.md`. */
function nestedFolders(depth: number): Record<string, string> {
  const files: Record<string, string> = {
    'start.md': note({ front: { type: 'start' }, title: 'Start', next: ['[[go]]'] }),
    'go.md': note({ front: { plan: 'd1' }, title: 'Go', next: ['[[end]]'] }),
    'end.md': note({ title: 'End' }),
  }
  let folder = ''
  for (let level = 1; level <= depth; level++) {
    folder = `${folder}d${level}/`
    if (level < depth) files[`${folder}go.md`] = note({ front: { type: 'start', plan: `d${level + 1}` }, title: `Go ${level}` })
    else files[`${folder}leaf.md`] = note({ title: 'Leaf' })
  }
  return files
}

describe('a planner that keeps decomposing', () => {
  for (const maxSteps of [1, 2, 3, 5]) {
    it(`is bounded by maxSteps ${maxSteps}: works plus planner calls, and the run stops`, async () => {
      const dir = await writeVault(generatedPlan())
      const llm = endlessPlanner()
      const result = await runPlan(dir, { query, fsync: false, llm, work, maxSteps })
      expect(result).toMatchObject({ status: 'stopped', stop: { budget: 'maxSteps' } })
      expect(llm.calls.every((call) => call.role === 'planning')).toBe(true)
      expect(result.plannerCalls).toBe(llm.calls.length)
      expect(result.steps + result.plannerCalls).toBe(maxSteps)
      expect(await depthOf(dir)).toBeLessThanOrEqual(maxSteps)

      // The same budget again: no planner call and no work, across the restart.
      const again = endlessPlanner()
      let worked = 0
      const stopped = await runPlan(dir, { fsync: false, llm: again, work: async (step) => (worked++, work(step)), maxSteps })
      expect(stopped).toMatchObject({ status: 'stopped', steps: result.steps, plannerCalls: result.plannerCalls })
      expect(again.calls).toEqual([])
      expect(worked).toBe(0)
    })
  }

  it('stops at the note whose subplan the budget cannot begin', async () => {
    const dir = await writeVault(generatedPlan())
    const llm = endlessPlanner()
    const result = await runPlan(dir, { query, fsync: false, llm, work, maxSteps: 3 })
    // outline is worked, research and research/dig are decomposed; the subplan of research/dig would need a fourth step
    // for its first note (the stop names it, as the snapshot does, and a resumed run says the same).
    expect(result).toMatchObject({ status: 'stopped', steps: 1, plannerCalls: 2, stop: { budget: 'maxSteps', node: 'research/dig/dig' } })
    expect((await observeRun(dir, { maxSteps: 3 })).stop).toEqual({ ...result.stop, reason: result.reason })
    expect(await runPlan(dir, { fsync: false, llm, work, maxSteps: 3 })).toMatchObject({ status: 'stopped', stop: result.stop })
    expect(await readdir(`${dir}/research/dig`)).not.toContain('dig')
  })

  it('decomposes at most 8 deep: the `plan: generate` note 8 deep is worked as a plain step, and that is in the trace', async () => {
    const dir = await writeVault(generatedPlan())
    const llm = endlessPlanner()
    const worked: string[] = []
    const result: RunResult = await runPlan(dir, {
      query,
      fsync: false,
      llm,
      work: async (step) => (worked.push(`${step.plan ?? ''}/${step.node.id}`), work(step)),
      maxSteps: 50,
    })
    expect(result).toMatchObject({ status: 'completed', output: '/write', plannerCalls: 8, steps: 11 })
    expect(llm.calls).toHaveLength(8)
    expect(await depthOf(dir)).toBe(8)
    const deepest = Array.from({ length: 7 }, () => 'dig').join('/')
    expect(worked).toContain(`research/${deepest}/dig`)
    expect(await read(dir, `research/${deepest}/00_plan-trace/trace.md`)).toContain(
      'degraded: "subplans nest at most 8 deep: `dig` is worked as a plain step, not decomposed"',
    )

    // Resumed, the finished run makes no planner call and counts the same.
    const again = endlessPlanner()
    expect(await runPlan(dir, { fsync: false, llm: again, work, maxSteps: 50 })).toMatchObject({ status: 'completed', plannerCalls: 8, steps: 11 })
    expect(again.calls).toEqual([])
  })

  it('counts the planner calls of branches that decompose at once against one budget', async () => {
    const dir = await writeVault({
      'brief.md': note({ front: { type: 'start' }, title: 'Brief', next: ['[[gather]]'] }),
      'gather.md': `---\nplan: [web, library]\n---\n# Gather\n\n## Next\n- [[report]]\n`,
      'report.md': note({ title: 'Report' }),
      'web/look.md': note({ front: { type: 'start', plan: 'generate' }, title: 'Look on the web' }),
      'library/look.md': note({ front: { type: 'start', plan: 'generate' }, title: 'Look in the library' }),
    })
    // A slow planner: both branches have claimed their note before either call returns.
    const llm = scriptedJudge(() => new Promise<string>((resolve) => setTimeout(() => resolve('## find\nFind it.\n'), 20)))
    const result = await runPlan(dir, { query, fsync: false, llm, work, maxSteps: 2 })
    expect(result).toMatchObject({ status: 'stopped', steps: 1, plannerCalls: 1 })
    expect(llm.calls).toHaveLength(1)
    const done = await runPlan(dir, { fsync: false, llm, work, maxSteps: 50 })
    expect(done).toMatchObject({ status: 'completed', steps: 4, plannerCalls: 2 })
    expect(llm.calls).toHaveLength(2)
  })

  it('goes on with a larger budget where it stopped, reusing what the planner wrote', async () => {
    const dir = await writeVault(generatedPlan())
    const first = endlessPlanner()
    await runPlan(dir, { query, fsync: false, llm: first, work, maxSteps: 3 })
    const rest = endlessPlanner()
    const result = await runPlan(dir, { fsync: false, llm: rest, work, maxSteps: 50 })
    expect(result).toMatchObject({ status: 'completed', plannerCalls: 8, steps: 11 })
    expect(first.calls.length + rest.calls.length).toBe(8)
  })
})

describe('subplans nested deeper than 8', () => {
  it('are `invalid-subplan` at validation', async () => {
    const graph = await loadPlan(await writeVault(nestedFolders(9)))
    const error = (() => {
      try {
        graph.validate()
      } catch (caught) {
        return caught
      }
    })()
    expect(error).toBeInstanceOf(PlanValidationError)
    const issues = (error as PlanValidationError).issues.filter((issue) => issue.code === 'invalid-subplan')
    expect(issues).toMatchObject([{ severity: 'error', file: 'd1/d2/d3/d4/d5/d6/d7/d8/go.md' }])
    expect(issues[0]!.message).toContain('8 deep')
  })

  it('refuse to run, while 8 deep runs', async () => {
    const deep = await writeVault(nestedFolders(9))
    await expect(runPlan(deep, { query, fsync: false, work })).rejects.toMatchObject({ name: 'PlanValidationError' })
    const ok = await runPlan(await writeVault(nestedFolders(8)), { query, fsync: false, work })
    expect(ok).toMatchObject({ status: 'completed', output: '/end', steps: 3 })
  })
})
