import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { proposePlan } from 'vaultplan'
import { memoryClient, stdioClient } from './helpers/mcp.js'
import { readTree, tempDir } from './helpers/vault.js'

const QUERY = 'Write a post about tide pools'
const PLAN = '## outline\ntype: start\nSay what the post covers.\n### Next\n- [[write]]\n\n## write\nWrite the post.\n'

// The built CLI (`npm test` builds first), as a coding agent starts it; the proposal written by the library with a scripted planner.
describe('the MCP tools on a proposed plan', () => {
  it('plan_next says the proposal waits for a person; plan_decide approves it; plan_next then works its notes with the recorded query', async () => {
    const root = await tempDir()
    await proposePlan(QUERY, { into: join(root, 'post'), llm: async () => PLAN, fsync: false })
    const agent = await stdioClient(root)
    const vault = 'post'

    let { step } = await agent.call('plan_next', { vault })
    expect(step).toMatchObject({
      kind: 'waiting',
      waiting: [{ node: 'proposal', uri: 'vaultplan://post/00_plan-trace/proposal.md', choices: ['approve', 'revise', 'decline'] }],
    })
    expect((await agent.call('plan_status', { vault })).todo).toMatch(/plan_decide/)
    expect(await agent.refuse('plan_decide', { vault, node: 'proposal', edge: 'ship it' })).toMatch(/^Error \(bad-choice\)/)
    // The proposal waits with no run yet: its step names no run id.
    expect(step.runId).toBeUndefined()
    // plan_decide says what comes next, and claims nothing: plan_next starts the approved plan with its recorded query.
    const decided = await agent.call('plan_decide', { vault, node: 'proposal', edge: 'approve' })
    expect(decided).toMatchObject({ decided: { node: 'proposal', edge: 'approve' }, next: { node: 'outline' }, todo: expect.stringContaining('plan_next') })

    ;({ step } = await agent.call('plan_next', { vault }))
    expect(step).toMatchObject({ kind: 'work', query: QUERY, node: { id: 'outline' } })
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'an outline' }))
    expect(step).toMatchObject({ kind: 'work', node: { id: 'write' } })
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'the post' }))
    expect(step).toMatchObject({ kind: 'completed', output: 'the post' })
  })

  it('a declined proposal: plan_decide says what was declined and that a revised proposal is the way on; plan_next refuses to run it', async () => {
    const root = await tempDir()
    await proposePlan(QUERY, { into: join(root, 'post'), llm: async () => PLAN, fsync: false })
    const agent = await stdioClient(root)
    expect(await agent.call('plan_decide', { vault: 'post', node: 'proposal', edge: 'decline' })).toEqual({
      vault: 'post',
      decided: { node: 'proposal', edge: 'decline' },
      next: { kind: 'declined', node: 'proposal' },
      todo:
        'A person declined the proposed plan (version 1): it never runs, and this vault keeps it as they decided. Tell the user. ' +
        'If a plan is still wanted, revise yours to their feedback and plan_propose it into a new folder: a person decides on it again.',
    })
    const status = await agent.call('plan_status', { vault: 'post' })
    expect(status.todo).toBe(
      'The proposal was declined: the plan never runs. A revised plan goes to the person as a new proposal (plan_propose into a new folder).',
    )
    expect(status.todo).not.toContain('plan_create')
    expect(await agent.refuse('plan_next', { vault: 'post' })).toMatch(/declined[\s\S]*plan_propose/)
  })
})

const V2 = '## outline\ntype: start\nOutline the post.\n### Next\n- [[write]]\n\n## write\nWrite the post from the outline.\n'

// An agent is the planner: it proposes the document, a person decides, and the agent writes the revision.
describe('plan_propose: an agent proposes, a person decides', () => {
  it('approved with plan_decide, the proposed plan runs with plan_next', async () => {
    const root = await tempDir()
    const agent = await memoryClient(root)
    expect(await agent.call('plan_propose', { vault: 'plans/post', query: QUERY, document: PLAN })).toMatchObject({
      vault: 'plans/post',
      version: 1,
      proposal: 'vaultplan://plans%2Fpost/00_plan-trace/proposal.md',
    })
    const vault = 'plans/post'
    let { step } = await agent.call('plan_next', { vault })
    expect(step).toMatchObject({ kind: 'waiting', waiting: [{ node: 'proposal', kind: 'proposal', choices: ['approve', 'revise', 'decline'] }] })
    await agent.call('plan_decide', { vault, node: 'proposal', edge: 'approve' })
    ;({ step } = await agent.call('plan_next', { vault }))
    expect(step).toMatchObject({ kind: 'work', query: QUERY, node: { id: 'outline' } })
  })

  it('revised with feedback: plan_next waits on the agent with the feedback, and plan_propose writes v2 linked to v1', async () => {
    const root = await tempDir()
    const agent = await memoryClient(root)
    const vault = 'post'
    await agent.call('plan_propose', { vault, query: QUERY, document: PLAN, wait: '2d' })
    await agent.call('plan_decide', { vault, node: 'proposal', edge: 'revise', feedback: 'Outline it first.' })
    const { step } = await agent.call('plan_next', { vault })
    expect(step).toMatchObject({ kind: 'waiting', waiting: [{ node: 'proposal', kind: 'proposal', choices: [], reason: 'Outline it first.' }] })
    expect(step.todo).toContain('plan_propose')
    expect(await agent.call('plan_propose', { vault, query: QUERY, document: V2 })).toEqual({
      vault,
      version: 2,
      proposal: 'vaultplan://post/00_plan-trace/proposal.md',
      parent: 'vaultplan://post/00_plan-trace/proposals/v1/proposal.md',
      todo: expect.stringContaining('plan_decide'),
    })
    const tree = await readTree(join(root, vault))
    expect(tree['00_plan-trace/proposal.md']).toContain('- [[00_plan-trace/proposals/v1/proposal|v1]]: Outline it first.')
    expect(tree['00_plan-trace/proposal.md']).toContain('\nwait: 2d\n')
    expect(tree['00_plan-trace/proposals/v1/outline.md']).toContain('Say what the post covers.')
    expect((await agent.call('plan_next', { vault })).step).toMatchObject({ kind: 'waiting', waiting: [{ choices: ['approve', 'revise', 'decline'] }] })
  })

  it('refuses a proposal no person sent back, an invalid document, a bad wait, and a folder of other notes', async () => {
    const root = await tempDir()
    const agent = await memoryClient(root)
    await agent.call('plan_propose', { vault: 'post', query: QUERY, document: PLAN })
    expect(await agent.refuse('plan_propose', { vault: 'post', query: QUERY, document: V2 })).toMatch(/^Error \(not-revising\)/)
    expect(await agent.refuse('plan_propose', { vault: 'other', query: QUERY, document: '## a\n### Next\n- [[b]]\n' })).toMatch(/^Error \(plan-invalid\)/)
    expect(await agent.refuse('plan_propose', { vault: 'other', query: QUERY, document: PLAN, wait: 'soon' })).toMatch(/^Error \(bad-wait\)/)
    await agent.call('plan_create', { vault: 'plain', document: PLAN })
    expect(await agent.refuse('plan_propose', { vault: 'plain', query: QUERY, document: PLAN })).toMatch(/^Error \(vault-not-empty\)/)
    const { tools } = await agent.client.listTools()
    expect(tools.find((tool) => tool.name === 'plan_propose')!.description!.length).toBeLessThan(600)
    expect(await agent.refuse('plan_propose', { vault: 'post/inner', query: QUERY, document: PLAN })).toMatch(/^Error \(exists\)/)
    expect(await agent.refuse('plan_propose', { vault: '../out', query: QUERY, document: PLAN })).toMatch(/^Error \(outside-root\)/)
  })
})
