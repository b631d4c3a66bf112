import { cp, readFile, rm, stat, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { decide, nextStep, proposePlan, readProposal, readRunStatus, runPlan, RunStateError, VaultPathError } from 'vaultplan'
import { scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, readTree, tempDir, writeVault } from './helpers/vault.js'

const QUERY = 'Write a post about tide pools'

const V1 = '## research\ntype: start\nFind three sources on tide pools.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft.\n'
const V2 = '## outline\ntype: start\nOutline the post first.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft from the outline.\n'
const V3 =
  '## outline\ntype: start\nOutline the post, with a section on safety.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft from the outline.\n### Next\n- [[edit]]\n\n## edit\nCut it to 800 words.\n'

/** A planning model that writes the given documents in turn, and records the prompts it got. */
function planner(...documents: string[]) {
  return scriptedJudge((_prompt, call) => {
    const document = documents[call]
    if (document === undefined) throw new Error(`the planner was called ${call + 1} times`)
    return document
  })
}

async function propose(llm = planner(V1, V2, V3)): Promise<{ vault: string; llm: typeof llm }> {
  const vault = await proposePlan(QUERY, { into: join(await tempDir(), 'post'), llm, fsync: false })
  return { vault, llm }
}

const waitingOnProposal = [{ node: 'proposal', file: '00_plan-trace/proposal.md', kind: 'proposal', choices: ['approve', 'revise', 'decline'] }]

describe('proposePlan', () => {
  test('writes the planned notes and a proposal that waits, with the query and three boxes', async () => {
    const { vault, llm } = await propose()
    expect(llm.calls.map((call) => call.role)).toEqual(['planning'])
    expect(llm.calls[0]!.prompt).toContain(QUERY)
    const tree = await readTree(vault)
    expect(Object.keys(tree)).toEqual(['00_plan-trace/proposal.md', 'draft.md', 'research.md'])
    // When the version was written: its wait for a person begins then.
    const proposed = /^proposed: "(.*)"$/m.exec(tree['00_plan-trace/proposal.md']!)?.[1]
    expect(Date.now() - Date.parse(proposed!)).toBeLessThan(60_000)
    expect(tree['00_plan-trace/proposal.md']).toBe(
      [
        '---',
        'vaultplan: proposal',
        'version: 1',
        'status: pending',
        `query: "${QUERY}"`,
        'notes: ["research.md","draft.md"]',
        `proposed: "${proposed}"`,
        '---',
        '# Proposal v1',
        '',
        'A plan was written into this vault for the query below. It does not run until it is approved.',
        'Tick one box, then run the vault again: `approve` runs it, `revise` has the planner write the next version',
        'from what you write under `## Feedback`, `decline` keeps it from ever running.',
        '',
        `> ${QUERY}`,
        '',
        '## Plan',
        '',
        '- [[research]]',
        '- [[draft]]',
        '',
        '## Decision',
        '',
        '- [ ] approve',
        '- [ ] revise',
        '- [ ] decline',
        '',
        '## Feedback',
        '',
        '',
      ].join('\n'),
    )
    expect(await readProposal(vault)).toEqual({ version: 1, status: 'pending' })
  })

  test('refuses a folder that holds anything, and bad arguments, before calling the planner', async () => {
    const into = await tempDir()
    await writeFile(join(into, 'mine.md'), '# Mine\n')
    const llm = planner(V1)
    await expect(proposePlan(QUERY, { into, llm })).rejects.toSatisfy((error) => error instanceof VaultPathError && error.code === 'vault-not-empty')
    await expect(proposePlan('  ', { into: join(into, 'new'), llm })).rejects.toThrow(TypeError)
    expect(llm.calls).toHaveLength(0)
    expect(await readTree(into)).toEqual({ 'mine.md': '# Mine\n' })
  })
})

describe('a pending proposal', () => {
  test('blocks runPlan, nextStep and the status: all wait on the proposal, nothing is worked or traced', async () => {
    const { vault } = await propose()
    const before = await readTree(vault)
    const work = scriptedWorker()
    const events: string[] = []
    const result = await runPlan(vault, {
      work,
      llm: planner(),
      fsync: false,
      onEvent: (event) => events.push(`${event.type} ${'node' in event ? event.node : ''}`),
    })
    expect(result).toMatchObject({ status: 'waiting', waiting: waitingOnProposal, steps: 0, runVault: vault })
    expect(result.reason).toContain('00_plan-trace/proposal.md')
    expect(events).toEqual(['waiting proposal'])
    // A query given to a pending proposal runs nothing either.
    expect(await runPlan(vault, { work, query: QUERY, fsync: false })).toMatchObject({ status: 'waiting', waiting: waitingOnProposal })
    expect(await nextStep(vault, { fsync: false })).toMatchObject({ kind: 'waiting', waiting: waitingOnProposal })
    const status = await readRunStatus(vault)
    expect(status).toMatchObject({
      phase: 'waiting',
      waiting: [{ kind: 'proposal', node: 'proposal', file: '00_plan-trace/proposal.md', choices: ['approve', 'revise', 'decline'] }],
      next: { kind: 'waiting', node: 'proposal' },
      proposal: { version: 1, status: 'pending' },
    })
    expect(work.calls).toHaveLength(0)
    expect(await readTree(vault)).toEqual(before)
  })

  test('approved: the plan runs with the recorded query, none given', async () => {
    const { vault } = await propose()
    await decide(vault, 'proposal', { edge: 'approve' })
    const work = scriptedWorker()
    const queries: string[] = []
    const result = await runPlan(vault, { work: async (step) => (queries.push(step.query), work(step)), fsync: false })
    expect(result).toMatchObject({ status: 'completed', steps: 2, lastNode: 'draft' })
    expect(work.calls.map((call) => call.node)).toEqual(['research', 'draft'])
    expect(queries).toEqual([QUERY, QUERY])
    expect(await readProposal(vault)).toEqual({ version: 1, status: 'approved' })
    expect((await readRunStatus(vault)).phase).toBe('completed')
    // Approved is approved: the next call resumes the run, and another query is refused.
    expect(await runPlan(vault, { work, fsync: false })).toMatchObject({ status: 'completed' })
    await expect(runPlan(vault, { work, query: 'another post', fsync: false })).rejects.toSatisfy(
      (error) => error instanceof RunStateError && error.code === 'query-mismatch',
    )
    expect(work.calls).toHaveLength(2)
  })

  test('a box ticked by hand in the note and decide from code write the same bytes and run the same', async () => {
    const byHand = (await propose(planner(V1))).vault
    const byCode = join(await tempDir(), 'post')
    await cp(byHand, byCode, { recursive: true })
    await edit(byHand, '00_plan-trace/proposal.md', (text) => text.replace('- [ ] approve', '- [x] approve'))
    await decide(byCode, 'proposal', { edge: 'approve' })
    expect(await readFile(join(byCode, '00_plan-trace/proposal.md'), 'utf8')).toBe(await readFile(join(byHand, '00_plan-trace/proposal.md'), 'utf8'))
    // Approved, its plan runs next from its start: the snapshot says so before a run marks the proposal approved.
    expect((await readRunStatus(byHand)).next).toEqual({ kind: 'fresh', node: 'research' })
    for (const vault of [byHand, byCode])
      expect(await runPlan(vault, { work: scriptedWorker(), fsync: false })).toMatchObject({ status: 'completed', steps: 2 })
  })

  test('declined: every run rejects with `declined`, the notes untouched', async () => {
    const { vault } = await propose()
    await decide(vault, 'proposal', { edge: 'decline' })
    expect((await readRunStatus(vault)).next).toEqual({ kind: 'declined', node: 'proposal' })
    const work = scriptedWorker()
    for (let run = 0; run < 2; run++) {
      await expect(runPlan(vault, { work, fsync: false })).rejects.toSatisfy((error) => error instanceof RunStateError && error.code === 'declined')
    }
    await expect(runPlan(vault, { work, fresh: true, query: QUERY, fsync: false })).rejects.toSatisfy(
      (error) => error instanceof RunStateError && error.code === 'declined',
    )
    expect(await readProposal(vault)).toEqual({ version: 1, status: 'declined' })
    expect(work.calls).toHaveLength(0)
    expect(await stat(join(vault, '00_plan-trace/trace.md')).catch(() => undefined)).toBeUndefined()
    // Declined is no longer pending: `proposal` names a note again, and there is none.
    await expect(decide(vault, 'proposal', { edge: 'approve' })).rejects.toSatisfy((error) => error instanceof RunStateError && error.code === 'not-waiting')
  })

  test("revised twice: each version kept under proposals/v<n>/ and linked, a person's own notes never moved", async () => {
    const { vault, llm } = await propose()
    const mine = '# My notes\n\nTide pools at Point Lobos, low tide 6am.\n'
    await writeFile(join(vault, 'my-notes.md'), mine)
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
    const work = scriptedWorker()
    expect(await runPlan(vault, { work, llm, fsync: false })).toMatchObject({ status: 'waiting', waiting: waitingOnProposal })
    expect(await readProposal(vault)).toEqual({ version: 2, status: 'pending', parent: '00_plan-trace/proposals/v1/proposal.md' })
    // The planner saw the feedback and version 1's notes, as data.
    expect(llm.calls[1]!.prompt).toContain('Start with an outline.')
    expect(llm.calls[1]!.prompt).toContain('Find three sources on tide pools.')
    expect(llm.calls[1]!.prompt).toMatch(/<<<DATA-\w+\nStart with an outline\./)
    let tree = await readTree(vault)
    expect(Object.keys(tree)).toEqual([
      '00_plan-trace/proposal.md',
      '00_plan-trace/proposals/v1/draft.md',
      '00_plan-trace/proposals/v1/proposal.md',
      '00_plan-trace/proposals/v1/research.md',
      'draft.md',
      'my-notes.md',
      'outline.md',
    ])
    expect(tree['my-notes.md']).toBe(mine)
    expect(tree['00_plan-trace/proposals/v1/research.md']).toContain('Find three sources on tide pools.')
    const v1 = tree['00_plan-trace/proposals/v1/proposal.md']!
    expect(v1).toContain('status: revised')
    expect(v1).toContain('- [x] revise')
    expect(v1).toMatch(/## Feedback\n\n> Start with an outline\.\n/)
    expect(tree['00_plan-trace/proposal.md']).toContain('## Earlier versions\n\n- [[00_plan-trace/proposals/v1/proposal|v1]]: Start with an outline.\n')
    expect(tree['00_plan-trace/proposal.md']).toContain('- [[outline]]\n- [[draft]]\n')

    // The second revision is asked for by hand, in the note.
    await edit(vault, '00_plan-trace/proposal.md', (text) =>
      text.replace('- [ ] revise', '- [x] revise').replace(/## Feedback\n\n/, '## Feedback\n\nAdd a safety section, and an edit pass.\n'),
    )
    expect((await readRunStatus(vault)).next).toEqual({ kind: 'plan', node: 'proposal', visit: 2, step: 1 })
    expect(await runPlan(vault, { work, llm, fsync: false })).toMatchObject({ status: 'waiting' })
    expect(await readProposal(vault)).toEqual({ version: 3, status: 'pending', parent: '00_plan-trace/proposals/v2/proposal.md' })
    tree = await readTree(vault)
    expect(Object.keys(tree).filter((file) => file.startsWith('00_plan-trace/proposals/'))).toEqual([
      '00_plan-trace/proposals/v1/draft.md',
      '00_plan-trace/proposals/v1/proposal.md',
      '00_plan-trace/proposals/v1/research.md',
      '00_plan-trace/proposals/v2/draft.md',
      '00_plan-trace/proposals/v2/outline.md',
      '00_plan-trace/proposals/v2/proposal.md',
    ])
    expect(tree['00_plan-trace/proposal.md']).toContain(
      '## Earlier versions\n\n- [[00_plan-trace/proposals/v1/proposal|v1]]: Start with an outline.\n- [[00_plan-trace/proposals/v2/proposal|v2]]: Add a safety section, and an edit pass.\n',
    )
    expect(tree['my-notes.md']).toBe(mine)

    await decide(vault, 'proposal', { edge: 'approve' })
    expect(await runPlan(vault, { work, fsync: false })).toMatchObject({ status: 'completed', lastNode: 'edit' })
    expect(work.calls.map((call) => call.node)).toEqual(['outline', 'draft', 'edit'])
    expect(llm.calls).toHaveLength(3)
    expect(await readFile(join(vault, 'my-notes.md'), 'utf8')).toBe(mine)
  })

  test("a new note that would take the name of a person's note is renamed, its links following", async () => {
    const { vault, llm } = await propose()
    const theirs = "# Outline\n\nMy own outline, not the plan's.\n"
    await writeFile(join(vault, 'outline.md'), theirs)
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
    await runPlan(vault, { work: scriptedWorker(), llm, fsync: false })
    expect(await readFile(join(vault, 'outline.md'), 'utf8')).toBe(theirs)
    expect(await readFile(join(vault, 'outline-v2.md'), 'utf8')).toContain('Outline the post first.')
    expect(await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')).toContain('notes: ["outline-v2.md","draft.md"]')
    await decide(vault, 'proposal', { edge: 'approve' })
    const work = scriptedWorker()
    expect(await runPlan(vault, { work, fsync: false })).toMatchObject({ status: 'completed' })
    expect(work.calls.map((call) => call.node)).toEqual(['outline-v2', 'draft'])
  })

  test('a revision cut short after keeping some notes is finished by the next run, nothing kept twice or lost', async () => {
    const { vault, llm } = await propose()
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
    const research = await readFile(join(vault, 'research.md'), 'utf8')
    // Where a kill after the first move leaves it: v1's proposal and research kept, draft not yet.
    await writeVault(
      {
        '00_plan-trace/proposals/v1/research.md': research,
        '00_plan-trace/proposals/v1/proposal.md': await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8'),
      },
      vault,
    )
    await rm(join(vault, 'research.md'))
    expect(await runPlan(vault, { work: scriptedWorker(), llm, fsync: false })).toMatchObject({ status: 'waiting' })
    const tree = await readTree(vault)
    expect(Object.keys(tree)).toEqual([
      '00_plan-trace/proposal.md',
      '00_plan-trace/proposals/v1/draft.md',
      '00_plan-trace/proposals/v1/proposal.md',
      '00_plan-trace/proposals/v1/research.md',
      'draft.md',
      'outline.md',
    ])
    expect(tree['00_plan-trace/proposals/v1/research.md']).toBe(research)
    expect(tree['00_plan-trace/proposals/v1/draft.md']).toContain('Write the draft.')
    expect(await readProposal(vault)).toMatchObject({ version: 2, status: 'pending' })
  })

  test("a revision cut short after writing the new notes is finished by the next run: its notes are not taken for a person's", async () => {
    const { vault, llm } = await propose(planner(V1, V2, V2))
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
    const v1 = await readTree(vault)
    // Where a kill just before the new proposal is written leaves it: v1 kept, v2's notes in place, the proposal still v1.
    await writeVault(
      {
        '00_plan-trace/proposals/v1/research.md': v1['research.md']!,
        '00_plan-trace/proposals/v1/draft.md': v1['draft.md']!,
        '00_plan-trace/proposals/v1/proposal.md': v1['00_plan-trace/proposal.md']!.replace('status: pending', 'status: revised'),
        '00_plan-trace/proposals/v1/revision.json': '{"notes":["outline.md","draft.md"]}\n',
        'outline.md': '---\ntype: start\n---\nOutline the post first.\n\n## Next\n- [[draft]]\n',
        'draft.md': 'Write the draft from the outline.\n',
      },
      vault,
    )
    await rm(join(vault, 'research.md'))
    expect(await runPlan(vault, { work: scriptedWorker(), llm, fsync: false })).toMatchObject({ status: 'waiting' })
    const tree = await readTree(vault)
    expect(Object.keys(tree)).toEqual([
      '00_plan-trace/proposal.md',
      '00_plan-trace/proposals/v1/draft.md',
      '00_plan-trace/proposals/v1/proposal.md',
      '00_plan-trace/proposals/v1/research.md',
      'draft.md',
      'outline.md',
    ])
    expect(tree['00_plan-trace/proposals/v1/draft.md']).toBe(v1['draft.md'])
    expect(tree['00_plan-trace/proposal.md']).toContain('notes: ["outline.md","draft.md"]')
  })

  test('reads a proposal a person edited (comments, their words, another box style) and keeps their bytes', async () => {
    const { vault } = await propose()
    await edit(vault, '00_plan-trace/proposal.md', (text) =>
      text
        .replace('status: pending', 'status: pending # until I say so')
        .replace('## Plan\n', '## Plan\n\nLooks short, but fine.\n')
        .replace('- [ ] approve', '* [X] **Approve** (Sam, Tuesday)'),
    )
    const edited = await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')
    expect(await runPlan(vault, { work: scriptedWorker(), fsync: false })).toMatchObject({ status: 'completed' })
    expect(await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')).toBe(
      edited.replace('status: pending # until I say so', 'status: approved # until I say so'),
    )
  })

  test('a proposal saved with CRLF line endings is read, decided and approved, its endings kept', async () => {
    const { vault } = await propose()
    await edit(vault, '00_plan-trace/proposal.md', (text) => text.replace(/\n/g, '\r\n'))
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'More detail.' })
    const decided = await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')
    expect(decided).toContain('- [x] revise\r\n')
    expect(decided).toContain('## Feedback\r\n\r\n> More detail.\r\n')
    expect(decided.replace(/\r\n/g, '')).not.toContain('\n')
    expect(await readProposal(vault)).toEqual({ version: 1, status: 'pending', feedback: '> More detail.' })
  })

  test('two boxes ticked: an error naming both, nothing changed; decide refuses a second box', async () => {
    const { vault } = await propose()
    await decide(vault, 'proposal', { edge: 'approve' })
    await expect(decide(vault, 'proposal', { edge: 'decline' })).rejects.toSatisfy(
      (error) => error instanceof RunStateError && error.code === 'ambiguous-decision',
    )
    await expect(decide(vault, 'proposal', { edge: 'maybe' })).rejects.toSatisfy((error) => error instanceof RunStateError && error.code === 'bad-choice')
    await edit(vault, '00_plan-trace/proposal.md', (text) => text.replace('- [ ] decline', '- [x] decline'))
    const before = await readTree(vault)
    await expect(runPlan(vault, { work: scriptedWorker(), fsync: false })).rejects.toThrow(/`approve` and `decline` ticked/)
    expect(await readTree(vault)).toEqual(before)
  })

  test('a proposal that lost its query is an error that says how to restore it', async () => {
    const { vault } = await propose()
    await edit(vault, '00_plan-trace/proposal.md', (text) => text.replace(/^query: .*\n/m, ''))
    await expect(readProposal(vault)).rejects.toSatisfy((error) => error instanceof RunStateError && error.code === 'proposal-unreadable')
    await expect(runPlan(vault, { work: scriptedWorker(), fsync: false })).rejects.toThrow(/has no `query:`/)
  })
})
