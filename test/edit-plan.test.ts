import { readdir, rm } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { completeStep, editPlan, loadPlan, nextStep, PlanValidationError, RunStateError } from 'vaultplan'
import { linear, work } from './helpers/plans.js'
import { nestedPlan } from './helpers/subplans.js'
import { read, readNotes, readTree, statuses, writeVault } from './helpers/vault.js'

const query = 'Ship it'
const options = { fsync: false }

/** What `editPlan` rejects with, or `undefined` when it resolves. */
async function refusal(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => undefined,
    (error: unknown) => error,
  )
}

/** The edit records of a vault's trace. */
async function editRecords(dir: string): Promise<Record<string, unknown>[]> {
  const text = await read(dir, '00_plan-trace/trace.md')
  return [...text.matchAll(/^<!-- vaultplan:edit (.*) -->$/gm)].map(([, json]) => JSON.parse(json!) as Record<string, unknown>)
}

/** `b` leads to a new note `d`, and `d` on to `c`. */
const addD = '## b\n# B\nDo b.\n### Next\n- [[d]]\n\n## d\n# D\nDo d, between b and c.\n### Next\n- [[c]]\n'

describe('editPlan', () => {
  it('adds a note and links it from an existing one', async () => {
    const dir = await writeVault(linear())
    expect(await editPlan(dir, { document: addD })).toEqual({ written: ['b', 'd'], removed: [] })
    const notes = await readNotes(dir)
    expect(notes['d.md']).toBe('# D\nDo d, between b and c.\n\n## Next\n- [[c]]\n')
    expect(notes['b.md']).toBe('# B\nDo b.\n\n## Next\n- [[d]]\n')
    const plan = await loadPlan(dir)
    expect(plan.validate()).toEqual([])
    expect(plan.node('b').edges.map((edge) => edge.target)).toEqual(['d'])
    // The vault holds no run: nothing is recorded, and the replaced note is kept all the same.
    expect(await readNotes(join(dir, '00_plan-trace/edits/1'))).toEqual({ 'b.md': linear()['b.md'] })
  })

  it("replaces a note's knobs, title, body and `## Next`, keeping its status, the keys the section does not set and its feedback", async () => {
    const dir = await writeVault({
      ...linear(),
      'b.md': '---\nstatus: done\nowner: ann\nrole: draft\n---\n# B\n\nDo b.\n\n## Next\n- [[c]]\n\n## Feedback\n\nMention the date.\n',
    })
    await editPlan(dir, { document: '## b\nrole: review\nstatus: pending\nmax_visits: 2\n# Better B\nDo b, better.\n### Next\n- [[c]]\n' })
    expect(await read(dir, 'b.md')).toBe(
      '---\nstatus: done\nowner: ann\nrole: review\nmax_visits: 2\n---\n# Better B\nDo b, better.\n\n## Next\n- [[c]]\n\n## Feedback\n\nMention the date.\n',
    )
    expect((await loadPlan(dir)).node('b')).toMatchObject({ title: 'Better B', status: 'done', role: 'review', maxVisits: 2 })
    expect(await read(dir, '00_plan-trace/edits/1/b.md')).toBe(
      '---\nstatus: done\nowner: ann\nrole: draft\n---\n# B\n\nDo b.\n\n## Next\n- [[c]]\n\n## Feedback\n\nMention the date.\n',
    )
    // The next edit's copies go to the next folder.
    await editPlan(dir, { document: '## b\nDo b, once more.\n### Next\n- [[c]]\n' })
    expect(await readdir(join(dir, '00_plan-trace/edits'))).toEqual(['1', '2'])
  })

  it("changes only what the section names: the person's frontmatter style, comments and blank lines, and the note's other sections stay byte for byte", async () => {
    const person = [
      '---',
      '# who keeps this note: ann',
      'tags: [keep-me]',
      "role:   draft   # ann's role",
      "owner: 'ann'",
      '',
      'retries: 1',
      '---',
      '# B',
      '',
      'Do b.',
      '',
      '## Journal',
      '',
      'Tried twice; %% a comment %% kept.',
      '',
      '## Next',
      '- [[c]]',
      '',
      '## Feedback',
      '',
      'Mention the date.',
      '',
    ].join('\n')
    const dir = await writeVault({ ...linear(), 'b.md': person })
    await editPlan(dir, { document: '## b\nrole: review\nmax_visits: 2\nretries: 1\n# Better B\nDo b, better.\n### Next\n- [[c]]\n' })
    expect(await read(dir, 'b.md')).toBe(
      person
        .replace("role:   draft   # ann's role", "role:   review   # ann's role")
        .replace('retries: 1\n---', 'retries: 1\nmax_visits: 2\n---')
        .replace('# B\n\nDo b.\n', '# Better B\nDo b, better.\n'),
    )
    expect((await loadPlan(dir)).node('b')).toMatchObject({ title: 'Better B', role: 'review', maxVisits: 2, retries: 1 })
    // The same edit again changes nothing.
    const edited = await read(dir, 'b.md')
    await editPlan(dir, { document: '## b\nrole: review\nmax_visits: 2\nretries: 1\n# Better B\nDo b, better.\n### Next\n- [[c]]\n' })
    expect(await read(dir, 'b.md')).toBe(edited)
  })

  it("writes `## Next` where the note had it, after the text when it had none, and keeps a note's line ends", async () => {
    const dir = await writeVault({
      ...linear(),
      'b.md': '---\r\ntags: [x]\r\n---\r\n# B\r\n\r\nDo b.\r\n\r\n## Feedback\r\n\r\nLater.\r\n',
      'c.md': '# C\n\nDo c.\n\n## Next\n- [[a]]\n\n## Log\n\nRan once.\n',
    })
    // An empty `### Next` takes the edges away.
    await editPlan(dir, { document: '## b\n# B\nDo b.\n### Next\n- [[c]]\n\n## c\n# C\nDo c, the end.\n### Next\n' })
    expect(await read(dir, 'b.md')).toBe('---\r\ntags: [x]\r\n---\r\n# B\r\nDo b.\r\n\r\n## Next\r\n- [[c]]\r\n\r\n## Feedback\r\n\r\nLater.\r\n')
    expect(await read(dir, 'c.md')).toBe('# C\nDo c, the end.\n\n## Log\n\nRan once.\n')
  })

  it("keeps what a section does not name: `### Next` alone keeps the note's title and body, text alone its `## Next`, a title alone its body", async () => {
    const dir = await writeVault({ ...linear(), 'd.md': '# D\n\nDo d.\n' })
    await editPlan(dir, { document: '## b\n### Next\n- [[d]]\n\n## d\n### Next\n- [[c]]\n' })
    expect(await read(dir, 'b.md')).toBe('# B\n\nDo b.\n\n## Next\n- [[d]]\n')
    expect(await read(dir, 'd.md')).toBe('# D\n\nDo d.\n\n## Next\n- [[c]]\n')
    await editPlan(dir, { document: '## b\nDo b, then d.\n\n## d\n# Dee\n' })
    expect(await read(dir, 'b.md')).toBe('# B\nDo b, then d.\n\n## Next\n- [[d]]\n')
    expect(await read(dir, 'd.md')).toBe('# Dee\n\nDo d.\n\n## Next\n- [[c]]\n')
    expect((await loadPlan(dir)).validate()).toEqual([])
  })

  it('refuses to set a knob in a frontmatter that cannot take it in place, writing nothing', async () => {
    const dir = await writeVault({ ...linear(), 'b.md': '---\nrole: [draft\nowner: ann\n---\n# B\n\nDo b.\n\n## Next\n- [[c]]\n' })
    const before = await readTree(dir)
    const error = await refusal(editPlan(dir, { document: '## b\nrole: review\n# B\nDo b.\n### Next\n- [[c]]\n' }))
    expect(error).toBeInstanceOf(PlanValidationError)
    expect((error as PlanValidationError).issues[0]).toMatchObject({
      code: 'invalid-frontmatter',
      node: 'b',
      file: 'b.md',
      message: expect.stringMatching(/^cannot set `role`: /),
    })
    expect(await readTree(dir)).toEqual(before)
  })

  it("removes a note with no visits into the vault's .trash/, and refuses a visited one, changing nothing", async () => {
    const dir = await writeVault(linear())
    expect(await editPlan(dir, { document: '## b\n# B\nDo b.\n### Next\n', remove: ['c'] })).toEqual({ written: ['b'], removed: ['c'] })
    expect(Object.keys(await readNotes(dir))).toEqual(['.trash/c.md', 'a.md', 'b.md'])
    expect(await read(dir, '.trash/c.md')).toBe(linear()['c.md'])

    const a = work(await nextStep(dir, { ...options, query }))
    await completeStep(dir, a.key, { output: 'a done' }, options)
    const before = await readTree(dir)
    const error = await refusal(editPlan(dir, { document: '## c\ntype: start\nDo c.\n', remove: ['a'] }))
    expect(error).toBeInstanceOf(RunStateError)
    expect(error).toMatchObject({ code: 'visited-note', data: { nodes: ['a'] } })
    expect(await readTree(dir)).toEqual(before)
  })

  it('neither replaces nor removes a note being worked', async () => {
    const dir = await writeVault(linear())
    work(await nextStep(dir, { ...options, query }))
    const before = await readTree(dir)
    const error = await refusal(editPlan(dir, { document: '## a\ntype: start\nDo a, differently.\n### Next\n- [[b]]\n' }))
    expect(error).toMatchObject({ name: 'RunStateError', code: 'note-in-use', data: { nodes: ['a'] } })
    expect(await readTree(dir)).toEqual(before)
  })

  it('refuses an edit that would leave the plan invalid with every diagnostic, writing nothing', async () => {
    const dir = await writeVault({ ...linear(), 'notes.txt': 'a sentinel' })
    work(await nextStep(dir, { ...options, query }))
    const before = await readTree(dir)
    const error = await refusal(editPlan(dir, { document: '## b\nDo b.\n### Next\n- [[nowhere]]\n\n## e\npriority: high\nDo e.\n', remove: ['c'] }))
    expect(error).toBeInstanceOf(PlanValidationError)
    expect((error as PlanValidationError).issues.filter((found) => found.severity === 'error').map((found) => [found.code, found.node ?? found.line])).toEqual([
      ['unknown-knob', 7],
      ['dangling-edge', 'b'],
    ])
    expect(await readTree(dir)).toEqual(before)
  })

  it('records the edit in the trace once: who, which notes, where the replaced ones were kept', async () => {
    const dir = await writeVault(linear())
    work(await nextStep(dir, { ...options, query }))
    await editPlan(dir, { document: addD }, { agent: 'ann' })
    expect(await editRecords(dir)).toEqual([
      { kind: 'edit', at: expect.any(String), agent: 'ann', written: ['b', 'd'], removed: [], copies: 1, input: expect.any(String) },
    ])
    expect(await read(dir, '00_plan-trace/trace.md')).toContain(
      '\n## Plan edited by ann\n\n- Written: [[b]], [[d]]\n- The notes as they were: `00_plan-trace/edits/1/`\n',
    )
    // The same edit again changes nothing: no copy, no second record.
    const tree = await readTree(dir)
    expect(await editPlan(dir, { document: addD }, { agent: 'ann' })).toEqual({ written: ['b', 'd'], removed: [] })
    expect(await readTree(dir)).toEqual(tree)
  })

  it('completes an edit cut short by a kill when called again with the same input', async () => {
    const dir = await writeVault(linear())
    work(await nextStep(dir, { ...options, query }))
    // As a kill leaves it: `b` copied and replaced, `d` not written yet, no record.
    await writeVault({ '00_plan-trace/edits/1/b.md': linear()['b.md']!, 'b.md': '# B\nDo b.\n\n## Next\n- [[d]]\n' }, dir)
    expect(await editPlan(dir, { document: addD })).toEqual({ written: ['b', 'd'], removed: [] })
    expect(await read(dir, 'd.md')).toBe('# D\nDo d, between b and c.\n\n## Next\n- [[c]]\n')
    expect(await readdir(join(dir, '00_plan-trace/edits'))).toEqual(['1'])
    expect(await editRecords(dir)).toMatchObject([{ written: ['b', 'd'], removed: [] }])

    // Cut short after the notes and the removal, before the record: the repeat only records.
    const other = await writeVault(linear())
    work(await nextStep(other, { ...options, query }))
    await writeVault({ 'b.md': '# B\nDo b.\n', '.trash/c.md': linear()['c.md']! }, other)
    await rm(join(other, 'c.md'))
    expect(await editPlan(other, { document: '## b\n# B\nDo b.\n', remove: ['c'] })).toEqual({ written: ['b'], removed: ['c'] })
    expect(await editRecords(other)).toMatchObject([{ written: ['b'], removed: ['c'] }])
    expect(await readdir(join(other, '.trash'))).toEqual(['c.md'])
  })

  it('a running plan reaches the note added, from its next hop', async () => {
    const dir = await writeVault(linear())
    const a = work(await nextStep(dir, { ...options, query }))
    await editPlan(dir, { document: addD })
    const b = work(await completeStep(dir, a.key, { output: 'a done' }, options))
    expect(b.node.id).toBe('b')
    const d = work(await completeStep(dir, b.key, { output: 'b done' }, options))
    expect(d.node).toMatchObject({ id: 'd', body: 'Do d, between b and c.' })
    expect(await statuses(dir)).toEqual({ a: 'done', b: 'done', c: 'pending', d: 'active' })
  })

  it("edits a subplan's notes through `## folder/note` sections, recorded in the subplan's own trace", async () => {
    const dir = await writeVault(nestedPlan())
    const outline = work(await nextStep(dir, { ...options, query }))
    const find = work(await completeStep(dir, outline.key, { output: 'o' }, options))
    expect([find.plan, find.node.id]).toEqual(['research', 'find'])
    const document = '## research/summarise\n# Summarise\nSummarise the sources.\n### Next\n- [[check]]\n\n## research/check\nCheck the figures.\n'
    expect(await editPlan(dir, { document }, { agent: 'ann' })).toEqual({ written: ['research/summarise', 'research/check'], removed: [] })
    expect(await editRecords(join(dir, 'research'))).toMatchObject([{ agent: 'ann', written: ['summarise', 'check'], removed: [] }])
    expect(await editRecords(dir)).toEqual([])
    const summarise = work(await completeStep(dir, find.key, { output: 'f' }, options))
    const check = work(await completeStep(dir, summarise.key, { output: 's' }, options))
    expect([check.plan, check.node.id]).toEqual(['research', 'check'])
  })

  it('refuses what is no edit, and a note to remove that the vault does not hold', async () => {
    const dir = await writeVault(linear())
    await expect(editPlan(dir, { remove: [3 as unknown as string] })).rejects.toThrow(TypeError)
    await expect(editPlan(dir, { document: addD, remove: ['d'] })).rejects.toThrow('Expected a note either in `document` or in `remove`, got `d` in both')
    await expect(editPlan(dir, { remove: ['x'] })).rejects.toMatchObject({ code: 'node-missing', data: { node: 'x' } })
    await expect(editPlan(dir, { document: '## d\nDo d.\n\n## d\nDo d again.\n' })).rejects.toMatchObject({
      name: 'PlanValidationError',
      issues: [{ code: 'duplicate-id', node: 'd' }],
    })
    expect(Object.keys(await readNotes(dir))).toEqual(['a.md', 'b.md', 'c.md'])
  })
})
