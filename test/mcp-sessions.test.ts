import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { vaultplan } from './helpers/cli.js'
import { httpClient, httpServer, stdioClient, until, type TestClient } from './helpers/mcp.js'
import { linear } from './helpers/plans.js'
import { read, tempDir, writeVault } from './helpers/vault.js'

/** A root holding the vault `p`: a -> b -> c. */
async function planRoot(): Promise<string> {
  const root = await tempDir()
  await writeVault(linear(), join(root, 'p'))
  return root
}

/** Resolves once the server of `client` has exited (its transport closed). */
function exited(client: TestClient): Promise<void> {
  return new Promise((resolve) => {
    client.client.onclose = () => resolve()
  })
}

/** The claim lines of the trace of `p`: agent and until, in order. */
async function claimLines(root: string): Promise<string[]> {
  const trace = await read(join(root, 'p'), '00_plan-trace/trace.md')
  return [...trace.matchAll(/<!-- vaultplan:claim (.*) -->/g)].map((match) => match[1]!)
}

// The built CLI over stdio, as a coding agent's host starts it: a new session after the old one ended.
describe('a new session learns where it is in one call', () => {
  it('a session whose client closes (its stdin ends) lets go of its claim: the next session takes the step at once, the same key, no visit counted again', async () => {
    const root = await planRoot()
    const old = await stdioClient(root)
    const claimed = await old.call('plan_next', { vault: 'p', query: 'q' })
    await old.close()
    const fresh = await stdioClient(root)
    const taken = await fresh.call('plan_next', { vault: 'p' })
    expect(taken.step).toMatchObject({ kind: 'work', key: claimed.step.key, step: 1, visit: 1, node: { id: 'a' } })
    expect(taken.agent).not.toBe(claimed.agent)
    // The release is a claim whose lease ends as it is written: nothing counted again.
    const status = await fresh.call('plan_status', { vault: 'p' })
    expect(status.run.steps).toBe(0)
    expect((await claimLines(root)).length).toBe(3)
  })

  it('a session ended by SIGTERM lets go of its claim too', async () => {
    const root = await planRoot()
    const old = await stdioClient(root)
    const claimed = await old.call('plan_next', { vault: 'p', query: 'q' })
    const gone = exited(old)
    process.kill(old.pid!, 'SIGTERM')
    await gone
    const fresh = await stdioClient(root)
    expect((await fresh.call('plan_next', { vault: 'p' })).step).toMatchObject({ kind: 'work', key: claimed.step.key, visit: 1 })
  })

  it('a killed session keeps its claim until its lease (--lease) ends: busy says when to call again, and names the earlier session to take it back in one call', async () => {
    const root = await planRoot()
    const args = ['--lease', '0.5']
    const old = await stdioClient(root, {}, { args })
    const claimed = await old.call('plan_next', { vault: 'p', query: 'q' })
    const gone = exited(old)
    process.kill(old.pid!, 'SIGKILL')
    await gone
    const fresh = await stdioClient(root, {}, { args })
    const busy = await fresh.call('plan_next', { vault: 'p' })
    expect(busy.step).toMatchObject({ kind: 'busy', claims: [{ node: 'a', claim: { agent: claimed.agent, key: claimed.step.key } }] })
    // The lease is 30 s (0.5 minutes): the earliest lease ends within it.
    expect(busy.step.retryAfter).toBeGreaterThanOrEqual(1)
    expect(busy.step.retryAfter).toBeLessThanOrEqual(30)
    expect(busy.step.todo).toContain(`call plan_next again in ${busy.step.retryAfter} s`)
    expect(busy.step.todo).toContain(`call plan_next with \`agent: "${claimed.agent}"\` to take it back now`)
    const back = await fresh.call('plan_next', { vault: 'p', agent: claimed.agent })
    expect(back.step).toMatchObject({ kind: 'work', key: claimed.step.key, visit: 1 })
  })

  it('a killed session of another client: its claim is not released but taken with the same key once the lease (--lease 0.05: 3 s) ends', async () => {
    const root = await planRoot()
    const args = ['--lease', '0.05']
    const old = await stdioClient(root, {}, { args, name: 'gone' })
    const claimed = await old.call('plan_next', { vault: 'p', query: 'q' })
    const gone = exited(old)
    process.kill(old.pid!, 'SIGKILL')
    await gone
    const other = await stdioClient(root, {}, { args })
    let taken: { step: { kind: string; key?: string; visit?: number; todo?: string } } | undefined
    await until(async () => {
      taken = await other.call('plan_next', { vault: 'p' })
      // Another client's session: nothing of its own to take back.
      if (taken!.step.kind === 'busy') expect(taken!.step.todo).not.toContain('agent:')
      return taken!.step.kind === 'work'
    }, 'the lease to end')
    expect(taken!.step).toMatchObject({ key: claimed.step.key, visit: 1 })
    // The killed session wrote no release: its claim, then the one that took it over.
    expect((await claimLines(root)).map((line) => JSON.parse(line).agent)).toEqual([claimed.agent, expect.stringMatching(/^vaultplan-test-/)])
  })

  it('a session over HTTP that its client closes lets go of its claim too', async () => {
    const root = await planRoot()
    const server = await httpServer(root)
    const old = await httpClient(server.url)
    const claimed = await old.call('plan_next', { vault: 'p', query: 'q' })
    await old.close()
    const fresh = await httpClient(server.url)
    // The close is answered before the server has let go of the claim: the next session asks until it is free.
    let taken: { step: { kind: string; key?: string } } | undefined
    await until(async () => (taken = await fresh.call('plan_next', { vault: 'p' })).step.kind === 'work', 'the claim to be let go of')
    expect(taken!.step).toMatchObject({ key: claimed.step.key, visit: 1 })
  })

  it('--lease takes minutes above 0 and says so in its help', async () => {
    const help = await vaultplan(['mcp', '--help'])
    expect(help.stdout).toContain('--lease MIN')
    const refused = await vaultplan(['mcp', '--lease', '0', '--root', await tempDir()])
    expect([refused.code, refused.stderr]).toEqual([2, expect.stringContaining('--lease takes minutes above 0')])
  })
})
