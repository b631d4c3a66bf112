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
    // The proposal waits with no run yet: its step names no run id.
    expect(step.runId).toBeUndefined()
    // plan_decide answers the next step, as plan_finish does.
    const decided = await agent.call('plan_decide', { vault, node: 'proposal', edge: 'approve' })
    expect(decided).toMatchObject({ decided: { node: 'proposal', edge: 'approve' }, step: { kind: 'work', query: QUERY, node: { id: 'outline' } } })

    ;({ step } = await agent.call('plan_next', { vault }))
    expect(step).toEqual(decided.step)
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'an outline' }))
    expect(step).toMatchObject({ kind: 'work', node: { id: 'write' } })
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'the post' }))
    expect(step).toMatchObject({ kind: 'completed', output: 'the post' })
  })

  it('a declined proposal: plan_next refuses to run it and says why', async () => {
    const root = await tempDir()
    await proposePlan(QUERY, { into: join(root, 'post'), llm: async () => PLAN, fsync: false })
    const agent = await stdioClient(root)
    expect(await agent.call('plan_decide', { vault: 'post', node: 'proposal', edge: 'decline' })).toEqual({
      vault: 'post',
      decided: { node: 'proposal', edge: 'decline' },
      todo: 'A person declined the proposed plan (version 1): it never runs. Write a new plan with plan_create, in a new folder.',
    })
    expect((await agent.call('plan_status', { vault: 'post' })).todo).toBe('The proposal was declined: the plan never runs; propose a new one.')
    expect(await agent.refuse('plan_next', { vault: 'post' })).toMatch(/declined/)
  })
})
