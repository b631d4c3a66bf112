import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { proposePlan } from 'vaultplan'
import { stdioClient } from './helpers/mcp.js'
import { tempDir } from './helpers/vault.js'

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
      waiting: [{ node: 'proposal', file: '00_plan-trace/proposal.md', choices: ['approve', 'revise', 'decline'] }],
    })
    expect((await agent.call('plan_status', { vault })).todo).toMatch(/plan_decide/)
    expect(await agent.refuse('plan_decide', { vault, node: 'proposal', edge: 'ship it' })).toMatch(/^Error \(bad-choice\)/)
    expect(await agent.call('plan_decide', { vault, node: 'proposal', edge: 'approve' })).toMatchObject({ node: 'proposal', edge: 'approve' })

    ;({ step } = await agent.call('plan_next', { vault }))
    expect(step).toMatchObject({ kind: 'work', query: QUERY, note: { id: 'outline' } })
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'an outline' }))
    expect(step).toMatchObject({ kind: 'work', note: { id: 'write' } })
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'the post' }))
    expect(step).toMatchObject({ kind: 'completed', output: 'the post' })
  })

  it('a declined proposal: plan_next refuses to run it and says why', async () => {
    const root = await tempDir()
    await proposePlan(QUERY, { into: join(root, 'post'), llm: async () => PLAN, fsync: false })
    const agent = await stdioClient(root)
    await agent.call('plan_decide', { vault: 'post', node: 'proposal', edge: 'decline' })
    expect((await agent.call('plan_status', { vault: 'post' })).todo).toBe('The proposal was declined: the plan never runs; propose a new one.')
    expect(await agent.refuse('plan_next', { vault: 'post' })).toMatch(/declined/)
  })
})
