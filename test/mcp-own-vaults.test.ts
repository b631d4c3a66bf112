import { mkdir, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { memoryClient } from './helpers/mcp.js'
import { note, tempDir, writeVault } from './helpers/vault.js'

/*
 * Every MCP tool takes a vault through one check (vaultPath): a folder
 * inside the root, no folder of another vault's (issue 26). Runs the
 * server of src/ in this process.
 */

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
