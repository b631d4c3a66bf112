import { mkdir, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { memoryClient } from './helpers/mcp.js'
import { note, readTree, tempDir, writeVault } from './helpers/vault.js'

/*
 * Every MCP tool takes a vault through one check (vaultPath): a folder
 * inside the root, no folder of another vault's (issue 26). Runs the
 * server of src/ in this process.
 */

/** A root with the vault `p`: `a` -> `steps/x` -> `steps/y`, its notes partly in the folder `steps`, and a run of it started. */
async function planWithFolder() {
  const root = await tempDir()
  await writeVault(
    {
      'p/a.md': note({ front: { type: 'start' }, title: 'A', next: ['[[x]]'] }),
      'p/steps/x.md': note({ title: 'X', next: ['[[y]]'] }),
      'p/steps/y.md': note({ title: 'Y' }),
    },
    root,
  )
  const agent = await memoryClient(root)
  const { step } = await agent.call('plan_next', { vault: 'p', query: 'q' })
  await agent.call('plan_finish', { vault: 'p', key: step.key, output: 'a done' })
  return { root, agent }
}

describe('the MCP tools on a folder inside a plan vault', () => {
  it('refuse it, each of them, and change nothing: its notes are the vault’s and its outputs the run’s', async () => {
    const { root, agent } = await planWithFolder()
    const before = await readTree(join(root, 'p'))
    for (const vault of ['p/steps', 'p/00_plan-trace/outputs']) {
      const calls: [string, Record<string, unknown>][] = [
        ['plan_next', { vault, query: 'q' }],
        ['plan_fact', { vault, text: 'a fact' }],
        ['plan_assume', { vault, text: 'an assumption' }],
        ['plan_decision', { vault, text: 'a decision', reason: 'why' }],
        ['plan_invalidate', { vault, id: 'A1', reason: 'why' }],
        ['plan_revalidate', { vault, id: 'A1' }],
        ['plan_ledger', { vault }],
        ['plan_fork', { vault, step: 1, into: 'elsewhere' }],
        ['plan_finish', { vault, key: 'k', output: 'o' }],
        ['plan_decide', { vault, node: 'x', edge: 'next' }],
        ['plan_status', { vault }],
        ['plan_validate', { vault }],
        ['plan_graph', { vault }],
        ['plan_propose', { vault, query: 'q', document: '## a\ntype: start\n' }],
        ['plan_defer', { vault, key: 'k', reason: 'why' }],
        ['plan_block', { vault, key: 'k', reason: 'why' }],
        ['plan_edit', { vault, remove: ['a'] }],
      ]
      for (const [tool, args] of calls) {
        expect({ tool, vault, refusal: await agent.refuse(tool, args) }).toMatchObject({
          refusal: expect.stringMatching(/^Error \(bad-path\): `[^`]+` is inside the vault `p`/),
        })
      }
    }
    expect(await agent.refuse('plan_create', { vault: 'p/steps/new', document: '## a\ntype: start\n' })).toMatch(
      /^Error \(exists\): [^\n]*inside the vault `p`/,
    )
    expect(await agent.refuse('plan_propose', { vault: 'p/steps/new', query: 'q', document: '## a\ntype: start\n' })).toMatch(
      /^Error \(exists\): [^\n]*inside the vault `p`/,
    )
    expect(await readTree(join(root, 'p'))).toEqual(before)
    // A tool added later that takes a vault is added above too.
    const { tools } = await agent.client.listTools()
    expect(
      tools
        .filter((tool) => 'vault' in (tool.inputSchema.properties ?? {}))
        .map((tool) => tool.name)
        .sort(),
    ).toEqual(
      [
        'plan_create',
        'plan_next',
        'plan_fact',
        'plan_assume',
        'plan_decision',
        'plan_invalidate',
        'plan_revalidate',
        'plan_ledger',
        'plan_fork',
        'plan_finish',
        'plan_decide',
        'plan_status',
        'plan_validate',
        'plan_graph',
        'plan_propose',
        'plan_defer',
        'plan_block',
        'plan_edit',
      ].sort(),
    )
  })
})

describe('the MCP tools on a folder that only holds vaults', () => {
  it('refuse it, each of them, naming the vaults it holds, and create nothing (no run folder)', async () => {
    const root = await tempDir()
    await writeVault(
      { 'plans/one/a.md': note({ front: { type: 'start' }, title: 'A' }), 'plans/two/b.md': note({ front: { type: 'start' }, title: 'B' }) },
      root,
    )
    const agent = await memoryClient(root)
    const before = await readTree(join(root, 'plans'))
    const { tools } = await agent.client.listTools()
    const args: Record<string, Record<string, unknown>> = {
      plan_create: { document: '## a\ntype: start\n' },
      plan_next: { query: 'q' },
      plan_finish: { key: 'k', output: 'o' },
      plan_decide: { node: 'a', edge: 'next' },
      plan_fact: { text: 'a fact' },
      plan_assume: { text: 'an assumption' },
      plan_decision: { text: 'a decision' },
      plan_invalidate: { id: 'A1', reason: 'why' },
      plan_revalidate: { id: 'A1' },
      plan_fork: { step: 0, into: 'forked' },
      plan_propose: { query: 'q', document: '## a\ntype: start\n' },
      plan_defer: { key: 'k', reason: 'why' },
      plan_block: { key: 'k', reason: 'why' },
      plan_edit: { remove: ['a'] },
    }
    for (const tool of tools.filter((each) => 'vault' in (each.inputSchema.properties ?? {}))) {
      const refused = await agent.refusal(tool.name, { vault: 'plans', ...args[tool.name] })
      // plan_create writes only new folders: `plans` exists.
      expect({ tool: tool.name, code: refused.error.code }).toEqual({ tool: tool.name, code: tool.name === 'plan_create' ? 'exists' : 'not-a-vault' })
      if (tool.name !== 'plan_create')
        expect(refused.error.message).toBe('`plans` holds no note of its own, only vaults (`plans/one`, `plans/two`): it is no vault itself')
    }
    expect(await readTree(join(root, 'plans'))).toEqual(before)
    expect(Object.keys(await readTree(root)).filter((file) => !file.startsWith('plans/'))).toEqual([])
  })
})

describe('resource subscriptions', () => {
  it('refuse a dangling symlink, like any path out of the root', async () => {
    const root = await tempDir()
    await writeVault({ 'p/a.md': note({ front: { type: 'start' }, title: 'A' }) }, root)
    const outside = await tempDir()
    await mkdir(join(outside, 'later'))
    // Leads nowhere now; once the file appears outside the root, a watch would report it.
    await symlink(join(outside, 'later', 'secret.md'), join(root, 'p', 'soon.md'))
    const agent = await memoryClient(root)
    await expect(agent.client.subscribeResource({ uri: 'vaultplan://p/soon.md' })).rejects.toThrow(/symlink that leads nowhere/)
  })
})
