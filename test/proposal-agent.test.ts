import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { decide, nextStep, observeRun, PlanValidationError, proposePlan, readProposal, readRunStatus, runPlan, RunStateError, VaultPathError } from 'vaultplan'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { readTree, tempDir, writeVault } from './helpers/vault.js'
import { vaultplan } from './helpers/cli.js'
import { clockPast } from './helpers/until.js'

const QUERY = 'Write a post about tide pools'
const V1 = '## research\ntype: start\nFind three sources on tide pools.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft.\n'
const V2 = '## outline\ntype: start\nOutline the post first.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft from the outline.\n'
const options = { fsync: false, llm: noJudge() } as const
const PROPOSAL = '00_plan-trace/proposal.md'

/** An agent's proposal of `V1`, in a new folder. */
async function proposed(more: { wait?: string } = {}): Promise<string> {
  return proposePlan(QUERY, { into: join(await tempDir(), 'post'), document: V1, fsync: false, ...more })
}

function isRunState(code: string) {
  return (error: unknown) => error instanceof RunStateError && error.code === code
}

describe('an agent as the planner: proposePlan with a document', () => {
  test('the document is version 1, pending, with three boxes, recorded as an agent’s; approved, it runs', async () => {
    const vault = await proposed()
    const tree = await readTree(vault)
    expect(Object.keys(tree)).toEqual([PROPOSAL, 'draft.md', 'research.md'])
    expect(tree[PROPOSAL]).toContain('\nplanner: agent\n')
    expect(tree[PROPOSAL]).toContain('- [ ] approve\n- [ ] revise\n- [ ] decline\n')
    expect(tree[PROPOSAL]).toContain('`revise` sends it back to the agent that proposed it')
    expect(await readProposal(vault)).toEqual({ version: 1, status: 'pending', planner: 'agent' })
    expect(await nextStep(vault, { fsync: false })).toMatchObject({
      kind: 'waiting',
      waiting: [{ node: 'proposal', file: PROPOSAL, kind: 'proposal', choices: ['approve', 'revise', 'decline'] }],
    })
    await decide(vault, 'proposal', { edge: 'approve' })
    const work = scriptedWorker()
    const queries: string[] = []
    const result = await runPlan(vault, { ...options, work: async (step) => (queries.push(step.query), work(step)) })
    expect(result).toMatchObject({ status: 'completed', lastNode: 'draft' })
    expect(work.calls.map((call) => call.node)).toEqual(['research', 'draft'])
    expect(queries).toEqual([QUERY, QUERY])
  })

  test('sent back with revise: nextStep, runPlan and the snapshot wait on the agent, with the feedback, and write nothing', async () => {
    const vault = await proposed()
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
    const before = await readTree(vault)
    const waiting = [{ node: 'proposal', file: PROPOSAL, kind: 'proposal', choices: [], reason: 'Start with an outline.' }]
    const step = await nextStep(vault, { fsync: false })
    expect(step).toMatchObject({ kind: 'waiting', waiting })
    expect(step.kind === 'waiting' && step.waiting).toEqual(waiting)
    // No model is asked: `llm` would throw if it were.
    const result = await runPlan(vault, { ...options, work: scriptedWorker() })
    expect(result).toMatchObject({ status: 'waiting', waiting, steps: 0 })
    expect(result.reason).toContain('propose it again')
    expect((await observeRun(vault)).waiting).toEqual(waiting)
    expect(await readRunStatus(vault)).toMatchObject({ phase: 'waiting', next: { kind: 'plan', node: 'proposal' } })
    expect(await readTree(vault)).toEqual(before)
  })

  test('the CLI, with no model configured: status says it waits for the agent, and run waits without asking a model', async () => {
    const vault = await proposed()
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
    const env = { LLM_MODEL: '', LLM_BASE_URL: '', NO_COLOR: '1' }
    expect((await vaultplan(['status', vault], { env })).stdout).toContain(
      'The proposal was sent back to the agent that proposed it: it waits for its next version.',
    )
    const run = await vaultplan(['run', vault], { env })
    expect(run.stderr).toBe('')
    expect(run.stdout).toContain('Waiting: 00_plan-trace/proposal.md (nothing for a person to tick: it waits for an agent; feedback: Start with an outline.)')
  })

  test('the agent answers with its next document: version 2, the first kept under proposals/v1/ and linked, waiting again', async () => {
    const vault = await proposed()
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
    expect(await proposePlan(QUERY, { into: vault, document: V2, fsync: false })).toBe(vault)
    expect(await readProposal(vault)).toEqual({ version: 2, status: 'pending', parent: '00_plan-trace/proposals/v1/proposal.md', planner: 'agent' })
    const tree = await readTree(vault)
    expect(Object.keys(tree)).toEqual([
      PROPOSAL,
      '00_plan-trace/proposals/v1/draft.md',
      '00_plan-trace/proposals/v1/proposal.md',
      '00_plan-trace/proposals/v1/research.md',
      'draft.md',
      'outline.md',
    ])
    expect(tree['00_plan-trace/proposals/v1/proposal.md']).toContain('status: revised')
    expect(tree[PROPOSAL]).toContain('## Earlier versions\n\n- [[00_plan-trace/proposals/v1/proposal|v1]]: Start with an outline.\n')
    expect(tree[PROPOSAL]).toContain('- [[outline]]\n- [[draft]]\n')
    expect(await nextStep(vault, { fsync: false })).toMatchObject({
      kind: 'waiting',
      waiting: [{ node: 'proposal', choices: ['approve', 'revise', 'decline'] }],
    })
    await decide(vault, 'proposal', { edge: 'approve' })
    const work = scriptedWorker()
    expect(await runPlan(vault, { ...options, work })).toMatchObject({ status: 'completed' })
    expect(work.calls.map((call) => call.node)).toEqual(['outline', 'draft'])
  })

  test('refused, nothing written: a proposal not sent back, another query, an invalid document, a folder of other notes', async () => {
    const vault = await proposed()
    const pending = await readTree(vault)
    await expect(proposePlan(QUERY, { into: vault, document: V2, fsync: false })).rejects.toSatisfy(isRunState('not-revising'))
    const refused = await proposePlan(QUERY, { into: vault, document: V2, fsync: false }).catch((error: unknown) => error)
    expect(refused instanceof RunStateError && refused.data).toEqual({ version: 1, status: 'pending', ticked: [] })
    await decide(vault, 'proposal', { edge: 'approve' })
    const approved = await proposePlan(QUERY, { into: vault, document: V2, fsync: false }).catch((error: unknown) => error)
    expect(approved instanceof RunStateError && { code: approved.code, data: approved.data }).toEqual({
      code: 'not-revising',
      data: { version: 1, status: 'pending', ticked: ['approve'] },
    })
    expect(Object.keys(await readTree(vault))).toEqual(Object.keys(pending))

    const sentBack = await proposed()
    await decide(sentBack, 'proposal', { edge: 'revise', feedback: 'Shorter.' })
    const before = await readTree(sentBack)
    await expect(proposePlan('Another post', { into: sentBack, document: V2, fsync: false })).rejects.toSatisfy(isRunState('query-mismatch'))
    await expect(proposePlan(QUERY, { into: sentBack, document: '## a\nno start, no edges\n### Next\n- [[b]]\n', fsync: false })).rejects.toBeInstanceOf(
      PlanValidationError,
    )
    expect(await readTree(sentBack)).toEqual(before)

    const plain = await writeVault({ 'draft.md': '---\ntype: start\n---\n# Draft\n' })
    await expect(proposePlan(QUERY, { into: plain, document: V1, fsync: false })).rejects.toSatisfy(
      (error) => error instanceof VaultPathError && error.code === 'vault-not-empty',
    )
    await expect(proposePlan(QUERY, { into: join(plain, 'x'), document: V1, llm: noJudge() })).rejects.toThrow(TypeError)
    await expect(proposePlan(QUERY, { into: join(plain, 'x'), document: V1, wait: 'soon' })).rejects.toThrow(TypeError)
  })
})

describe('wait: on a proposal', () => {
  test('a pending proposal past its `wait:` is overdue, and keeps waiting; its revision keeps the wait with a deadline of its own', async () => {
    const vault = await proposed({ wait: '1s' })
    expect(await readTree(vault).then((tree) => tree[PROPOSAL])).toContain('\nwait: 1s\n')
    const first = await nextStep(vault, { fsync: false })
    const [entry] = first.kind === 'waiting' ? first.waiting : []
    expect(Date.parse(entry!.deadline!) - Date.parse(entry!.since!)).toBe(1000)
    expect(entry).toEqual({
      node: 'proposal',
      file: PROPOSAL,
      kind: 'proposal',
      choices: ['approve', 'revise', 'decline'],
      since: entry!.since,
      deadline: entry!.deadline,
    })
    expect(first.kind === 'waiting' && first.reason).toContain(`Its deadline is ${entry!.deadline}.`)
    await clockPast(entry!.deadline!)
    const overdue = await runPlan(vault, { ...options, work: scriptedWorker() })
    expect(overdue).toMatchObject({ status: 'waiting', steps: 0 })
    expect(overdue.waiting).toEqual([{ ...entry, overdue: true }])
    expect(overdue.reason).toContain(`It is overdue since ${entry!.deadline}.`)
    expect((await observeRun(vault)).waiting).toEqual(overdue.waiting)
    expect(await readRunStatus(vault)).toMatchObject({ phase: 'waiting', waiting: [{ node: 'proposal', deadline: entry!.deadline, overdue: true }] })
    expect((await vaultplan(['status', vault])).stdout).toContain(`    deadline ${entry!.deadline} (overdue`)

    // Sent back, it waits on the agent: no deadline runs then.
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Shorter.' })
    const sentBack = await nextStep(vault, { fsync: false })
    expect(sentBack.kind === 'waiting' && sentBack.waiting).toEqual([{ node: 'proposal', file: PROPOSAL, kind: 'proposal', choices: [], reason: 'Shorter.' }])
    await proposePlan(QUERY, { into: vault, document: V2, fsync: false })
    const second = await nextStep(vault, { fsync: false })
    const [again] = second.kind === 'waiting' ? second.waiting : []
    expect(again).toMatchObject({ choices: ['approve', 'revise', 'decline'] })
    expect(again!.overdue).toBeUndefined()
    expect(Date.parse(again!.since!)).toBeGreaterThan(Date.parse(entry!.deadline!))
    expect(Date.parse(again!.deadline!) - Date.parse(again!.since!)).toBe(1000)
  })

  test('a proposal without `wait:` has no deadline', async () => {
    const step = await nextStep(await proposed(), { fsync: false })
    expect(step.kind === 'waiting' && step.waiting[0]).toEqual({
      node: 'proposal',
      file: PROPOSAL,
      kind: 'proposal',
      choices: ['approve', 'revise', 'decline'],
    })
  })
})
