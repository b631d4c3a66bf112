import { spawn } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DOCUMENT, stdioClient } from './helpers/mcp.js'
import { tempDir, writeVault } from './helpers/vault.js'

// These tests run the built CLI (`npm test` builds first), as a coding agent starts it.
describe('a refused tool call carries the error as data', () => {
  it('structuredContent holds the code and the data of the error, paths as the client names them, through the SDK client that checks output schemas', async () => {
    const root = await tempDir()
    const agent = await stdioClient(root)
    // Listing the tools makes the SDK client check every later result against the tool's output schema, as real clients do.
    await agent.client.listTools()
    const vault = 'plans/release'
    await agent.call('plan_create', { vault, document: DOCUMENT })
    const { step: draft } = await agent.call('plan_next', { vault, query: 'announce 0.2' })
    const { step: review } = await agent.call('plan_finish', { vault, key: draft.key, output: 'vaultplan 0.2' })

    expect(await agent.refusal('plan_finish', { vault, key: draft.key, output: 'again' })).toEqual({
      error: {
        code: 'stale-step',
        message: '`key` is not the key of the pending step; nothing was written.',
        data: { pending: { key: review.key, node: 'review', visit: 1, step: 2 } },
        todo: `The pending step is \`review\` (visit 1, key \`${review.key}\`): call plan_next for all of it, then plan_finish with its key.`,
      },
    })
    expect(await agent.refusal('plan_finish', { vault, key: review.key, output: 'fine', choice: 'maybe' })).toMatchObject({
      error: { code: 'bad-choice', data: { node: 'review', choices: ['approved', 'needs revision'] } },
    })
    expect(await agent.refusal('plan_decide', { vault, node: 'review', edge: 'approved' })).toMatchObject({
      error: { code: 'not-waiting', data: { node: 'review', status: 'active', waiting: [] } },
    })
    expect(await agent.refusal('plan_next', { vault, query: 'something else' })).toMatchObject({
      error: { code: 'query-mismatch', data: { recorded: 'announce 0.2' } },
    })

    // A runner in another process holds the vault: its holder, and the vault as the client names it.
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' })
    try {
      await mkdir(join(root, vault, '00_plan-trace/.lock'), { recursive: true })
      await writeFile(join(root, vault, '00_plan-trace/.lock-holder.json'), JSON.stringify({ pid: other.pid, host: hostname(), since: 'a minute ago' }))
      const locked = await agent.refusal('plan_next', { vault })
      expect(locked).toMatchObject({ error: { code: 'vault-locked', data: { vault, holder: { pid: other.pid, host: hostname(), since: 'a minute ago' } } } })
      expect(JSON.stringify(locked)).not.toContain(root)
    } finally {
      other.kill()
    }
  })

  it('a refusal that is not a RunStateError carries its code, and the issues of an invalid plan', async () => {
    const root = await tempDir()
    await writeVault(
      { 'start.md': '---\ntype: start\n---\n# Start\n\n## Next\n- done -> [[end]]\n- lost -> [[nowhere]]\n', 'end.md': '# End\n' },
      join(root, 'broken'),
    )
    const agent = await stdioClient(root)
    await agent.client.listTools()
    expect(await agent.refusal('plan_status', { vault: '../x' })).toEqual({
      error: { code: 'outside-root', message: expect.any(String), todo: expect.any(String) },
    })
    expect(await agent.refusal('plan_next', { vault: 'broken', query: 'q' })).toMatchObject({
      error: { code: 'plan-invalid', data: { errors: 1, issues: [expect.objectContaining({ code: 'dangling-edge', file: 'start.md', severity: 'error' })] } },
    })
  })
})
