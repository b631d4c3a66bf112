import { writeFile } from 'node:fs/promises'
import { request } from 'node:http'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { DOCUMENT, httpClient, httpServer, until } from './helpers/mcp.js'
import { tempDir } from './helpers/vault.js'

/** A raw `initialize` POST with the given headers, as a browser or a rebinding page would send it: the status and body. */
function initialize(port: number, headers: Record<string, string>): Promise<{ status: number; body: string }> {
  const body = JSON.stringify({
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  })
  return new Promise((resolve, reject) => {
    const sent = request(
      {
        host: '127.0.0.1',
        port,
        path: '/mcp',
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers },
      },
      (response) => {
        let text = ''
        response.on('data', (chunk: Buffer) => (text += chunk.toString()))
        response.on('end', () => resolve({ status: response.statusCode ?? 0, body: text }))
      },
    )
    sent.on('error', reject)
    sent.end(body)
  })
}

describe('vaultplan mcp --http (Streamable HTTP on 127.0.0.1), driven by the SDK client', () => {
  it('walks a plan over HTTP; a second client sees the same run, since the server keeps no run state of its own', async () => {
    const root = await tempDir()
    const server = await httpServer(root)
    expect(server.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/mcp$/)
    const agent = await httpClient(server.url)
    await agent.call('plan_create', { vault: 'release', document: DOCUMENT })
    let { step } = await agent.call('plan_next', { vault: 'release', query: 'announce 0.2' })
    expect(step).toMatchObject({ kind: 'work', node: { id: 'draft' } })
    ;({ step } = await agent.call('plan_finish', { vault: 'release', key: step.key, output: 'A draft.' }))
    expect(step).toMatchObject({ kind: 'work', node: { id: 'review' }, conditions: ['approved', 'needs revision'] })

    // Another session is another agent: it is told who holds the step; naming that agent (the same one after losing
    // its context), it gets the same pending step.
    const first = (await agent.call('plan_next', { vault: 'release' })).agent as string
    const second = await httpClient(server.url)
    const busy = (await second.call('plan_next', { vault: 'release' })).step
    expect(busy).toMatchObject({ kind: 'busy', claims: [{ node: 'review', claim: { agent: first, key: step.key } }] })
    expect((await second.call('plan_next', { vault: 'release', agent: first })).step).toEqual({ ...step, query: 'announce 0.2' })
    ;({ step } = await second.call('plan_finish', { vault: 'release', key: step.key, output: 'Fine.', choice: 'approved', agent: first }))
    expect(step).toMatchObject({ kind: 'work', node: { id: 'approve' } })
    expect(await agent.refuse('plan_finish', { vault: 'release', key: 'not-a-key', output: 'x' })).toMatch(/^Error \(stale-step\)/)
    expect(await agent.refuse('plan_status', { vault: '../../etc' })).toMatch(/^Error \(outside-root\)/)
    expect((await agent.call('plan_status', { vault: 'release' })).phase).toBe('ready')
  })

  it('reads a note and tells a subscribed session when it changes on disk, over its event stream', async () => {
    const root = await tempDir()
    const server = await httpServer(root)
    const agent = await httpClient(server.url)
    await agent.call('plan_create', { vault: 'release', document: DOCUMENT })
    const uri = 'vaultplan://release/review.md'
    const read = await agent.client.readResource({ uri })
    expect((read.contents[0] as { text: string }).text).toContain('- approved -> [[approve]]')
    await agent.client.subscribeResource({ uri })
    await writeFile(join(root, 'release', 'review.md'), `${(read.contents[0] as { text: string }).text}\nA person's remark.\n`)
    await until(() => agent.updated.includes(uri), 'the update of review.md')
    expect(new Set(agent.updated)).toEqual(new Set([uri]))
  })

  it('refuses a Host or an Origin that is not its own (DNS rebinding) with 403', async () => {
    const server = await httpServer(await tempDir())
    const own = `127.0.0.1:${server.port}`
    expect((await initialize(server.port, { host: own })).status).toBe(200)
    expect((await initialize(server.port, { host: `localhost:${server.port}`, origin: `http://localhost:${server.port}` })).status).toBe(200)
    expect((await initialize(server.port, { host: `[::1]:${server.port}` })).status).toBe(200)
    const rebinding = await initialize(server.port, { host: `evil.example.com:${server.port}` })
    expect(rebinding.status).toBe(403)
    expect(JSON.parse(rebinding.body).error.message).toContain('DNS rebinding')
    expect((await initialize(server.port, { host: `127.0.0.1:${server.port + 1}` })).status).toBe(403)
    expect((await initialize(server.port, { host: own, origin: 'http://evil.example.com' })).status).toBe(403)
    expect((await initialize(server.port, { host: own, origin: `http://evil.example.com:${server.port}` })).status).toBe(403)
    expect((await initialize(server.port, { host: own, origin: 'null' })).status).toBe(403)
  })

  it('accepts a host given with --allowed-host', async () => {
    const server = await httpServer(await tempDir(), { args: ['--allowed-host', 'plans.internal'] })
    expect((await initialize(server.port, { host: `plans.internal:${server.port}`, origin: `http://plans.internal:${server.port}` })).status).toBe(200)
    expect((await initialize(server.port, { host: `other.internal:${server.port}` })).status).toBe(403)
  })

  it('requires the bearer token of VAULTPLAN_MCP_TOKEN when it is set (401 otherwise)', async () => {
    const server = await httpServer(await tempDir(), { env: { VAULTPLAN_MCP_TOKEN: 's3cret-token' } })
    const own = `127.0.0.1:${server.port}`
    const missing = await initialize(server.port, { host: own })
    expect(missing.status).toBe(401)
    expect(JSON.parse(missing.body).error.message).toContain('Authorization: Bearer')
    expect((await initialize(server.port, { host: own, authorization: 'Bearer wrong' })).status).toBe(401)
    expect((await initialize(server.port, { host: own, authorization: 'Bearer s3cret-token' })).status).toBe(200)
    const agent = await httpClient(server.url, { authorization: 'Bearer s3cret-token' })
    expect(await agent.call('plan_list')).toEqual({ vaults: [], truncated: false })
    await expect(httpClient(server.url)).rejects.toThrow(/401|Unauthorized/)
  })

  it('answers 404 for another path and for a session it does not know', async () => {
    const server = await httpServer(await tempDir())
    const response = await fetch(`http://127.0.0.1:${server.port}/elsewhere`)
    expect(response.status).toBe(404)
    const unknown = await fetch(server.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': 'no-such-session' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/list' }),
    })
    expect(unknown.status).toBe(404)
  })
})
