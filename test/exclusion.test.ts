import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, runPlan } from 'vaultplan'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, statuses, traceEntries, writeVault } from './helpers/vault.js'

const options = { fsync: false }

describe('what is a note of the plan', () => {
  it('a run vault kept inside the plan folder, and a run folder at any depth, are no notes of the plan', async () => {
    const dir = await writeVault({ ...draftReview(), 'notes/00_plan-trace/stray.md': '# not a note\n', 'notes/idea.md': '# An idea\n' })
    // A run of the plan kept in a subfolder of the plan itself.
    await runPlan(dir, { ...options, query: 'q', runVault: join(dir, 'runs/first'), work: scriptedWorker(), llm: reviewJudge('review v1') })
    const graph = await loadPlan(dir)
    expect([...graph.nodes.keys()].sort()).toEqual(['draft', 'notes/idea', 'review', 'send'])
    // The plan still validates: no second start from the copy's notes, no note of the copy's trace.
    expect(graph.validate()).toEqual([expect.objectContaining({ code: 'unreachable', severity: 'warning', node: 'notes/idea' })])
    const again = await runPlan(dir, { ...options, query: 'q', runVault: join(dir, 'runs/second'), work: scriptedWorker(), llm: reviewJudge('review v1') })
    expect(again.status).toBe('completed')
    // The second run's copy leaves the first run vault out.
    expect((await loadPlan(join(dir, 'runs/second'))).nodes.size).toBe(4)
    const { stat } = await import('node:fs/promises')
    expect(await stat(join(dir, 'runs/second/runs/first')).catch(() => 'absent')).toBe('absent')
  })
})

describe('a person moves the run mid-run', () => {
  it('a note set `status: active` while another is worked is where the run goes on, as a new visit', async () => {
    const dir = await writeVault(draftReview())
    let moved = false
    const work = scriptedWorker(async (step) => {
      if (step.node.id === 'review' && !moved) {
        moved = true
        await edit(dir, 'send.md', (text) => `---\nstatus: active\n---\n${text}`)
      }
    })
    const result = await runPlan(dir, { ...options, query: 'q', work, llm: reviewJudge() })
    expect(work.calls.map((call) => `${call.node} ${call.visit}`)).toEqual(['draft 1', 'review 1', 'send 1'])
    expect(result).toMatchObject({ status: 'completed', lastNode: 'send' })
    expect(await statuses(dir)).toEqual({ draft: 'done', review: 'done', send: 'done' })
    expect((await traceEntries(dir)).map((entry) => entry.heading)).toEqual([
      'Step 1 · [[draft]] · visit 1',
      'Step 2 · [[review]] · visit 1',
      'Step 3 · [[send]] · visit 1',
    ])
    // Run again: the recorded result, nothing worked.
    const idle = scriptedWorker()
    expect(await runPlan(dir, { ...options, work: idle, llm: reviewJudge() })).toMatchObject({ status: 'completed', steps: 3 })
    expect(idle.calls).toEqual([])
  })
})
