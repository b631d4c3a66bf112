import { describe, expect, it } from 'vitest'
import { PlanValidationError, runPlan, type StepInput } from 'vaultplan'
import { draftReview } from './helpers/plans.js'
import { conditionsIn, currentOutput, noJudge, reviewJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, note, read, statuses, traceEntries, untilShown, writeVault } from './helpers/vault.js'

const query = 'Announce the release'
const options = { query, fsync: false } as const
const hops = (work: { calls: { node: string; visit: number; step: number }[] }) => work.calls.map((call) => `${call.node} v${call.visit} step ${call.step}`)

/** A worker that makes `change` once, from inside the visit `at` (`draft v1`), as a person in Obsidian would. */
/** A worker during whose work `at` a person edits the notes, as they see them (the run's writes shown). */
function editingWorker(dir: string, at: string, change: () => Promise<void>) {
  return scriptedWorker(async (step: StepInput) => {
    if (`${step.node.id} v${step.visit}` !== at) return
    await untilShown(dir)
    await change()
  })
}

describe('edits made in the notes while a run goes on are honoured from the next hop', () => {
  it('a changed body: the next visit of that note and the next note get the new text', async () => {
    const dir = await writeVault(draftReview())
    const work = editingWorker(dir, 'draft v1', async () => {
      await edit(dir, 'draft.md', (text) => text.replace('Write the draft.', 'Write a shorter draft.'))
      await edit(dir, 'review.md', (text) => text.replace('Review the draft.', 'Review the draft for length.'))
    })
    await runPlan(dir, { ...options, work, llm: reviewJudge('review v2') })
    expect(work.calls.map((call) => [`${call.node} v${call.visit}`, call.body])).toEqual([
      ['draft v1', 'Write the draft.'],
      ['review v1', 'Review the draft for length.'],
      ['draft v2', 'Write a shorter draft.'],
      ['review v2', 'Review the draft for length.'],
      ['send v1', 'Send the approved draft.'],
    ])
    expect(await read(dir, 'draft.md')).toContain('Write a shorter draft.')
  })

  it('a changed edge of the note being worked is followed', async () => {
    const dir = await writeVault(draftReview())
    const work = editingWorker(dir, 'draft v1', () => edit(dir, 'draft.md', (text) => text.replace('- [[review]]', '- [[send]]')))
    const result = await runPlan(dir, { ...options, work, llm: noJudge() })
    expect(hops(work)).toEqual(['draft v1 step 1', 'send v1 step 2'])
    expect(result).toMatchObject({ status: 'completed', output: 'send v1' })
    expect(await statuses(dir)).toEqual({ draft: 'done', review: 'pending', send: 'done' })
  })

  it('changed conditions of the next note are what the judge is asked about', async () => {
    const dir = await writeVault(draftReview())
    const work = editingWorker(dir, 'draft v1', () => edit(dir, 'review.md', (text) => text.replace('- approved -> [[send]]', '- good enough -> [[send]]')))
    const llm = scriptedJudge(() => '1: YES')
    await runPlan(dir, { ...options, work, llm })
    expect(llm.calls.map((call) => conditionsIn(call.prompt))).toEqual([['1. good enough', '2. needs revision']])
    expect((await traceEntries(dir))[1]).toMatchObject({ edge: 'good enough → [[send]]', decidedBy: 'llm' })
  })

  it('a budget raised while the note is worked is honoured', async () => {
    const dir = await writeVault(draftReview({ reviewVisits: 1 }))
    const work = editingWorker(dir, 'review v1', () => edit(dir, 'review.md', (text) => text.replace('max_visits: 1', 'max_visits: 2')))
    const result = await runPlan(dir, { ...options, work, llm: reviewJudge() })
    expect(hops(work)).toEqual(['draft v1 step 1', 'review v1 step 2', 'draft v2 step 3', 'review v2 step 4', 'draft v3 step 5'])
    expect(result).toMatchObject({ status: 'stopped', visits: { draft: 3, review: 2 } })
    expect(result.reason).toContain('`review` was refused visit 3; its budget is max_visits 2')
  })

  it('a budget lowered in another note stops the run when it is entered', async () => {
    const dir = await writeVault(draftReview())
    const work = editingWorker(dir, 'draft v2', () => edit(dir, 'review.md', (text) => text.replace(/^---\n/, '---\nmax_visits: 1\n')))
    const result = await runPlan(dir, { ...options, work, llm: reviewJudge() })
    expect(hops(work)).toEqual(['draft v1 step 1', 'review v1 step 2', 'draft v2 step 3'])
    expect(result.reason).toContain('`review` was refused visit 2; its budget is max_visits 1')
  })

  it('a new note linked from an edited edge of the note being worked', async () => {
    const dir = await writeVault(draftReview())
    const work = editingWorker(dir, 'draft v1', async () => {
      await writeVault({ 'outline.md': note({ title: 'Outline', body: 'Outline it first.', next: ['[[review]]'] }) }, dir)
      await edit(dir, 'draft.md', (text) => text.replace('- [[review]]', '- [[outline]]'))
    })
    const result = await runPlan(dir, { ...options, work, llm: reviewJudge('review v1') })
    expect(hops(work)).toEqual(['draft v1 step 1', 'outline v1 step 2', 'review v1 step 3', 'send v1 step 4'])
    expect(work.calls[1]!.body).toBe('Outline it first.')
    expect(result).toMatchObject({ status: 'completed', visits: { draft: 1, outline: 1, review: 1, send: 1 } })
    expect(await statuses(dir)).toEqual({ draft: 'done', outline: 'done', review: 'done', send: 'done' })
  })

  it('a new note, in a new folder, linked from an edited edge of another note', async () => {
    const dir = await writeVault(draftReview())
    const work = editingWorker(dir, 'draft v1', async () => {
      await writeVault({ 'extra/legal.md': note({ title: 'Legal', body: 'Check the legal text.', next: ['[[send]]'] }) }, dir)
      await edit(dir, 'review.md', (text) => text.replace('- approved -> [[send]]', '- approved -> [[legal]]'))
    })
    await runPlan(dir, { ...options, work, llm: reviewJudge('review v1') })
    expect(hops(work)).toEqual(['draft v1 step 1', 'review v1 step 2', 'extra/legal v1 step 3', 'send v1 step 4'])
    expect((await traceEntries(dir))[1]).toMatchObject({ edge: 'approved → [[extra/legal]]' })
  })
})

describe('an edit that breaks the plan', () => {
  it('in another note: the call ends with the diagnostics, nothing is lost, and the run goes on after the fix', async () => {
    const dir = await writeVault(draftReview())
    const first = editingWorker(dir, 'draft v1', () => edit(dir, 'review.md', (text) => text.replace('- approved -> [[send]]', '- approved -> [[sned]]')))
    const error = await runPlan(dir, { ...options, work: first, llm: reviewJudge('review v1') }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(PlanValidationError)
    expect((error as PlanValidationError).issues).toContainEqual({
      code: 'dangling-edge',
      severity: 'error',
      message: 'edge `approved` -> `[[sned]]` matches no note; did you mean `[[send]]`?',
      node: 'review',
      file: 'review.md',
      line: 6,
      column: 15,
    })
    expect(hops(first)).toEqual(['draft v1 step 1'])

    // Running again before the fix: the same error, nothing worked.
    const idle = scriptedWorker()
    await expect(runPlan(dir, { ...options, work: idle, llm: noJudge() })).rejects.toBeInstanceOf(PlanValidationError)
    expect(idle.calls).toEqual([])

    await edit(dir, 'review.md', (text) => text.replace('[[sned]]', '[[send]]'))
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work, llm: reviewJudge('review v1') })
    expect(hops(work)).toEqual(['review v1 step 2', 'send v1 step 3'])
    expect(result).toMatchObject({ status: 'completed', steps: 3, visits: { draft: 1, review: 1, send: 1 } })
    expect((await traceEntries(dir)).map((entry) => entry.heading)).toEqual([
      'Step 1 · [[draft]] · visit 1',
      'Step 2 · [[review]] · visit 1',
      'Step 3 · [[send]] · visit 1',
    ])
  })

  it('in the note being worked: its work is kept and judged after the fix, not done again', async () => {
    const dir = await writeVault(draftReview())
    const first = editingWorker(dir, 'draft v1', () => edit(dir, 'draft.md', (text) => text.replace('- [[review]]', '- [[reveiw]]')))
    const error = await runPlan(dir, { ...options, work: first, llm: noJudge() }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(PlanValidationError)
    expect((error as PlanValidationError).issues.map((issue) => [issue.code, issue.file])).toContainEqual(['dangling-edge', 'draft.md'])
    expect(await statuses(dir)).toEqual({ draft: 'done', review: 'pending', send: 'pending' })

    await edit(dir, 'draft.md', (text) => text.replace('[[reveiw]]', '[[review]]'))
    const work = scriptedWorker()
    const llm = reviewJudge('review v1')
    const result = await runPlan(dir, { ...options, work, llm })
    expect(hops(work)).toEqual(['review v1 step 2', 'send v1 step 3'])
    expect(llm.calls.map((call) => currentOutput(call.prompt))).toEqual(['review v1'])
    expect(result).toMatchObject({ status: 'completed', steps: 3 })
  })
})
