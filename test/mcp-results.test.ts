import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { memoryClient } from './helpers/mcp.js'
import { linear } from './helpers/plans.js'
import { note, read, readTree, tempDir, writeVault } from './helpers/vault.js'

const PLAN = '## outline\ntype: start\nSay what the post covers.\n### Next\n- [[write]]\n\n## write\nWrite the post.\n'

/**
 * Results that do not mislead (issue 41), each through the SDK client. The
 * others are beside what they are about: a declined proposal in
 * test/proposal-mcp.test.ts, plan_status's size in test/mcp-walk.test.ts, a
 * decision that claims nothing in test/mcp-hands.test.ts, a person's edit
 * right after a call in test/mcp-agent.test.ts.
 */
describe('results that do not mislead', () => {
  it('a note waiting with a deadline offers its person no `timeout`: the deadline takes that edge', async () => {
    const root = await tempDir()
    await writeVault(
      {
        'draft.md': note({ front: { type: 'start' }, title: 'Draft', next: ['[[approve]]'] }),
        'approve.md': note({ front: { judge: 'human', wait: '1h' }, title: 'Approve', next: ['approved -> [[send]]', 'timeout -> [[remind]]'] }),
        'send.md': note({ title: 'Send' }),
        'remind.md': note({ title: 'Remind' }),
      },
      join(root, 'p'),
    )
    const agent = await memoryClient(root)
    const { step } = await agent.call('plan_next', { vault: 'p', query: 'q' })
    let waiting = (await agent.call('plan_finish', { vault: 'p', key: step.key, output: 'drafted' })).step
    if (waiting.kind === 'work') waiting = (await agent.call('plan_finish', { vault: 'p', key: waiting.key, output: 'asked' })).step
    expect(waiting).toMatchObject({ kind: 'waiting', waiting: [{ node: 'approve', choices: ['approved'], deadline: expect.any(String) }] })
  })

  it('plan_create on an existing folder names plan_edit; a bad document does not say to fix notes it never wrote', async () => {
    const root = await tempDir()
    await writeVault(linear(), join(root, 'p'))
    const agent = await memoryClient(root)
    const exists = await agent.refusal('plan_create', { vault: 'p', document: PLAN })
    expect(exists.error).toMatchObject({ code: 'exists', todo: expect.stringContaining('plan_edit') })
    const bad = await agent.refuse('plan_create', { vault: 'q', document: '## a\ntype: start\nDo a.\n### Next\n- [[nowhere]]\n' })
    expect(bad).toMatch(/^Error \(plan-invalid\)/)
    expect(bad).toContain('Fix the document as these lines say and call plan_create again; nothing was written.')
    expect(bad).not.toContain('Fix these notes')
    expect(await readTree(root)).not.toHaveProperty('q/a.md')
  })

  it('a plan_edit section holding only ### Next keeps the note’s title and body', async () => {
    const root = await tempDir()
    await writeVault(linear(), join(root, 'p'))
    const agent = await memoryClient(root)
    const before = await read(join(root, 'p'), 'b.md')
    const edited = await agent.call('plan_edit', { vault: 'p', document: '## b\n### Next\n- [[d]]\n\n## d\nDo d.\n### Next\n- [[c]]\n' })
    expect(edited).toEqual({ vault: 'p', written: ['b', 'd'], removed: [], todo: 'The run follows the edited plan from its next hop.' })
    expect(await read(join(root, 'p'), 'b.md')).toBe(before.replace('[[c]]', '[[d]]'))
  })

  it('plan_list shows a waiting proposal with its versions and what the person said of each; plan_propose’s todo asks for no plan_next', async () => {
    const root = await tempDir()
    const agent = await memoryClient(root)
    const proposed = await agent.call('plan_propose', { vault: 'post', query: 'A post', document: PLAN })
    expect(proposed.todo).toContain('plan_decide')
    expect(proposed.todo).not.toContain('plan_next')
    await agent.call('plan_decide', { vault: 'post', node: 'proposal', edge: 'revise', feedback: 'Outline it first.' })
    await agent.call('plan_propose', { vault: 'post', query: 'A post', document: PLAN.replace('Write the post.', 'Write it from the outline.') })
    expect((await agent.call('plan_list')).vaults).toEqual([
      {
        vault: 'post',
        phase: 'waiting',
        node: 'proposal',
        proposal: {
          version: 2,
          status: 'pending',
          uri: 'vaultplan://post/00_plan-trace/proposal.md',
          versions: [{ version: 1, status: 'revised', feedback: '> Outline it first.', uri: 'vaultplan://post/00_plan-trace/proposals/v1/proposal.md' }],
        },
      },
    ])
  })
})
