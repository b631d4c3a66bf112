import { describe, expect, it } from 'vitest'
import { editPlan, loadPlan, nextStep, PlanValidationError, RunStateError } from 'vaultplan'
import { draftReview, linear } from './helpers/plans.js'
import { nestedPlan } from './helpers/subplans.js'
import { read, readTree, writeVault } from './helpers/vault.js'

/** The plan's order from its start along the unconditional edges. */
async function row(dir: string, folder?: string): Promise<string[]> {
  const top = await loadPlan(dir)
  const plan = folder === undefined ? top : top.subplans!.get(folder)!
  const order = [plan.startNode().id]
  for (let edges = plan.node(order[0]!).edges; edges.length === 1 && order.length < 20; edges = plan.node(order.at(-1)!).edges) order.push(edges[0]!.target)
  return order
}

/** What `editPlan` rejects with. */
async function refusal(promise: Promise<unknown>): Promise<PlanValidationError> {
  return promise.then(
    () => {
      throw new Error('expected a refusal')
    },
    (error: unknown) => error as PlanValidationError,
  )
}

describe('editPlan with `after`: a note put in a row after another, no other note restated', () => {
  it('adds a note to a queue, in the middle and at its end', async () => {
    const dir = await writeVault(linear())
    expect(await editPlan(dir, { document: '## lint\n# Lint\nRun the linter.\n', after: 'b' })).toEqual({ written: ['b', 'lint'], removed: [] })
    expect(await row(dir)).toEqual(['a', 'b', 'lint', 'c'])
    // b keeps its text; only its edge changed.
    expect(await read(dir, 'b.md')).toBe('# B\n\nDo b.\n\n## Next\n- [[lint]]\n')
    expect(await read(dir, 'lint.md')).toBe('# Lint\nRun the linter.\n\n## Next\n- [[c]]\n')
    await editPlan(dir, { document: '## ship\nShip it.\n\n## tell\nTell people.\n', after: 'c' })
    expect(await row(dir)).toEqual(['a', 'b', 'lint', 'c', 'ship', 'tell'])
    expect(await read(dir, 'tell.md')).toBe('Tell people.\n')
    expect((await loadPlan(dir)).validate()).toEqual([])
  })

  it('reorders: a note of the plan named in the document moves, the notes that led to it lead on past it', async () => {
    const dir = await writeVault({ ...linear(), 'c.md': '# C\n\nDo c.\n\n## Next\n- [[d]]\n', 'd.md': '# D\n\nDo d.\n' })
    await editPlan(dir, { document: '## d\n', after: 'a' })
    expect(await row(dir)).toEqual(['a', 'd', 'b', 'c'])
    expect(await read(dir, 'c.md')).toBe('# C\n\nDo c.\n')
    expect(await read(dir, 'd.md')).toBe('# D\n\nDo d.\n\n## Next\n- [[b]]\n')
    await editPlan(dir, { document: '## d\n', after: 'c' })
    expect(await row(dir)).toEqual(['a', 'b', 'c', 'd'])
    // Where it stands already: nothing changes.
    const before = await readTree(dir, { skipTrace: true })
    await editPlan(dir, { document: '## b\n', after: 'a' })
    expect(await readTree(dir, { skipTrace: true })).toMatchObject(before)
  })

  it('puts a note after one inside a subplan, linked within it', async () => {
    const dir = await writeVault(nestedPlan())
    const plan = await loadPlan(dir)
    const [folder, inner] = [...plan.subplans!.entries()][0]!
    const first = inner.startNode().id
    await editPlan(dir, { document: `## ${folder}/check\nCheck it.\n`, after: `${folder}/${first}` })
    expect((await row(dir, folder)).slice(0, 2)).toEqual([first, 'check'])
    expect((await loadPlan(dir)).validate()).toEqual([])
  })

  it('puts a note after the step being worked: its edges change, its text stays refused', async () => {
    const dir = await writeVault(linear())
    await nextStep(dir, { query: 'q', agent: 'ada', fsync: false })
    await editPlan(dir, { document: '## lint\nLint.\n', after: 'a' }, { agent: 'ada' })
    expect(await row(dir)).toEqual(['a', 'lint', 'b', 'c'])
    expect(await read(dir, 'a.md')).toContain('status: active')
    const text = await editPlan(dir, { document: '## a\nDo a, differently.\n' }, { agent: 'ada' }).catch((error: unknown) => error)
    expect(text).toBeInstanceOf(RunStateError)
    expect(text).toMatchObject({ code: 'note-in-use' })
  })

  it('refuses a note whose way on is a choice, a section with its own ### Next, and a note the plan lacks, writing nothing', async () => {
    const dir = await writeVault(draftReview())
    const before = await readTree(dir)
    const branching = await refusal(editPlan(dir, { document: '## lint\nLint.\n', after: 'review' }))
    expect(branching).toBeInstanceOf(PlanValidationError)
    expect(branching.issues).toMatchObject([{ code: 'unplaceable-note', node: 'review', message: expect.stringContaining('`approved`, `needs revision`') }])
    const own = await refusal(editPlan(dir, { document: '## lint\nLint.\n### Next\n- [[send]]\n', after: 'draft' }))
    expect(own.issues).toMatchObject([{ code: 'unplaceable-note', node: 'lint' }])
    const none = await refusal(editPlan(dir, { document: '## lint\nLint.\n', after: 'nowhere' }))
    expect(none.issues).toMatchObject([{ code: 'unplaceable-note', message: expect.stringContaining('no note of the plan') }])
    expect(await readTree(dir)).toEqual(before)
  })
})
