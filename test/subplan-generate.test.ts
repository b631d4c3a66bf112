import { readdir } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { runPlan, type StepInput } from 'vaultplan'
import { scriptedJudge } from './helpers/scripted.js'
import { edit, note, read, writeVault } from './helpers/vault.js'

const query = 'Write a report on solar power'

/** A plan whose `research` note asks the planner for its subplan. */
function generatedPlan(): Record<string, string> {
  return {
    'outline.md': note({ front: { type: 'start' }, title: 'Outline', body: 'Outline the report.', next: ['[[research]]'] }),
    'research.md': note({ front: { plan: 'generate' }, title: 'Research', body: 'Find the figures on solar power.', next: ['[[write]]'] }),
    'write.md': note({ title: 'Write', body: 'Write the report.' }),
  }
}

const document = '## find\ntype: start\nFind three sources.\n### Next\n- [[sum-up]]\n\n## sum-up\nSum the sources up.\n'

/** A planner (the `planning` role) that answers with a document and records its prompts; no other role may call. */
function planner(reply = document) {
  return scriptedJudge(() => reply)
}

const work = async (step: StepInput) => `${step.plan ?? ''}/${step.node.id}`

describe('`plan: generate`', () => {
  it('asks the planning role once, writes the subplan beside the note, and runs it', async () => {
    const dir = await writeVault(generatedPlan())
    const llm = planner()
    const result = await runPlan(dir, { query, fsync: false, llm, work })
    expect(llm.calls.map((call) => call.role)).toEqual(['planning'])
    expect(llm.calls[0]!.prompt).toContain('Research\n\nFind the figures on solar power.')
    expect(result).toMatchObject({ status: 'completed', output: '/write', steps: 4 })
    expect(result.visits).toMatchObject({ 'research/find': 1, 'research/sum-up': 1 })
    expect((await readdir(`${dir}/research`)).sort()).toEqual(['00_plan-trace', 'find.md', 'sum-up.md'])
  })

  it('reuses the written subplan afterwards, as a person edited it, with no planner call', async () => {
    const dir = await writeVault(generatedPlan())
    await runPlan(dir, { query, fsync: false, llm: planner(), work })
    await edit(dir, 'research/sum-up.md', (text) => text.replace('Sum the sources up.', 'Sum the sources up in a table.'))
    const llm = planner()
    const bodies: string[] = []
    const result = await runPlan(dir, { query, fsync: false, llm, fresh: true, work: async (step) => (bodies.push(step.node.body), work(step)) })
    expect(result.status).toBe('completed')
    expect(llm.calls).toEqual([])
    expect(bodies).toContain('Sum the sources up in a table.')
  })

  it('uses a folder that holds notes already as it is', async () => {
    const files = generatedPlan()
    files['research/look.md'] = note({ title: 'Look it up' })
    const dir = await writeVault(files)
    const llm = planner()
    const result = await runPlan(dir, { query, fsync: false, llm, work })
    expect(llm.calls).toEqual([])
    expect(result.visits).toMatchObject({ 'research/look': 1 })
  })

  it('degrades a reply that is no plan to a path graph, and records that in the subplan’s trace', async () => {
    const dir = await writeVault(generatedPlan())
    const llm = planner('1. Find sources\n2. Compare them\n')
    const result = await runPlan(dir, { query, fsync: false, llm, work })
    expect(result.status).toBe('completed')
    expect(Object.keys(result.visits).filter((id) => id.startsWith('research/'))).toEqual(['research/01-find-sources', 'research/02-compare-them'])
    expect(await read(dir, 'research/00_plan-trace/trace.md')).toMatch(/degraded: .*not a valid plan/)
  })
})
