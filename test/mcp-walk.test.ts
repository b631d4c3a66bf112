import { describe, expect, it } from 'vitest'
import { walkSeven } from '../bench/lib/agent-walk.mjs'
import { stdioClient } from './helpers/mcp.js'
import { tempDir } from './helpers/vault.js'

// The built CLI over stdio, as a coding agent's host starts it. Its tokens are measured by bench/mcp-agent.mjs.
describe('a coding agent walks a 7-note plan (two branches at once, a loop, a person) over MCP', () => {
  it('in at most 12 calls, each result lean, and plan_status of the plan in at most 1,500 characters', async () => {
    const root = await tempDir()
    const agent = await stdioClient(root)
    const { calls, step } = await walkSeven((tool, args) => agent.call(tool, args))
    expect(step).toMatchObject({ kind: 'completed', node: 'publish' })
    expect(calls.map((each) => each.tool)).toEqual([
      'plan_create',
      'plan_next',
      ...Array<string>(7).fill('plan_finish'),
      'plan_decide',
      'plan_next',
      'plan_finish',
    ])
    const status = await agent.call('plan_status', { vault: 'posts/tide-pools' })
    expect(status).toMatchObject({ phase: 'completed' })
    const size = JSON.stringify(status).length
    console.log(
      `walk: ${calls.length} calls, ${calls.reduce((sum, each) => sum + JSON.stringify(each.result).length, 0)} characters of results; plan_status ${size}`,
    )
    expect(size).toBeLessThanOrEqual(1_500)
  })
})
