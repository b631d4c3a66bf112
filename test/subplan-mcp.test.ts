import { describe, expect, it } from 'vitest'
import { stdioClient } from './helpers/mcp.js'
import { note, tempDir, writeVault } from './helpers/vault.js'

// The built CLI (`npm test` builds first), as a coding agent starts it.
describe('the MCP tools on a plan with a subplan', () => {
  it('plan_next returns the nested note to work, with its folder and path; plan_finish completes it', async () => {
    const root = await tempDir()
    await writeVault(
      {
        'report/outline.md': note({ front: { type: 'start' }, title: 'Outline', next: ['[[research]]'] }),
        'report/research.md': note({ front: { plan: 'research' }, title: 'Research', body: 'Find the figures.', next: ['[[write]]'] }),
        'report/write.md': note({ title: 'Write' }),
        'report/research/find.md': note({ front: { type: 'start' }, title: 'Find sources', next: ['[[summarise]]'] }),
        'report/research/summarise.md': note({ title: 'Summarise' }),
      },
      root,
    )
    const agent = await stdioClient(root)
    const vault = 'report'
    let { step } = await agent.call('plan_next', { vault, query: 'a report on solar power' })
    expect(step.node.id).toBe('outline')
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'an outline' }))
    expect(step).toMatchObject({
      kind: 'work',
      plan: 'research',
      query: 'Research\n\nFind the figures.\n\na report on solar power',
      node: { id: 'find', title: 'Find sources' },
    })
    const seen: string[] = []
    while (step.kind === 'work') {
      seen.push(`${step.plan ?? ''}/${step.node.id}`)
      ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: `did ${step.node.id}` }))
    }
    expect(seen).toEqual(['research/find', 'research/summarise', '/write'])
    expect(step).toMatchObject({ kind: 'completed', output: 'did write' })
  })
})
