import { request, type ClientRequest } from 'node:http'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { loadPlan, PictureTooLargeError } from 'vaultplan'
import { toSvg } from 'vaultplan/pictures'
import { serveHttp, type HttpOptions } from '../src/mcp/http.js'
import { vaultplan } from './helpers/cli.js'
import { httpClient, until } from './helpers/mcp.js'
import { note, tempDir, writeVault } from './helpers/vault.js'

/** How many Graphviz layouts were started (each in a worker thread of its own). */
const layouts = vi.hoisted(() => ({ started: 0 }))
vi.mock('node:worker_threads', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:worker_threads')>()
  class Worker extends real.Worker {
    constructor(...args: ConstructorParameters<typeof real.Worker>) {
      super(...args)
      layouts.started += 1
    }
  }
  return { ...real, Worker, default: { ...real, Worker } }
})

const servers: { close(): Promise<void> }[] = []
const streams: ClientRequest[] = []

afterEach(async () => {
  for (const stream of streams.splice(0)) stream.destroy()
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

/** `serveHttp` in this process on a free port of 127.0.0.1. */
async function serve(options: Partial<HttpOptions> = {}): Promise<{ port: number; url: string; root: string }> {
  const root = await tempDir()
  const served = await serveHttp({ root, version: '0.0.0', port: 0, ...options })
  servers.push(served)
  return { port: Number(new URL(served.url).port), url: served.url, root }
}

/**
 * A plan Graphviz takes long to lay out: `count` notes in a row, each with
 * three more links to notes drawn at random (seeded). 40 such notes take
 * seconds, 60 tens of seconds, 400 far longer than anyone waits.
 */
function densePlan(count: number): Record<string, string> {
  let seed = 1
  const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
  const files: Record<string, string> = {}
  for (let n = 0; n < count; n++) {
    const links = n + 1 < count ? [`next -> [[n${n + 1}]]`, ...[0, 1, 2].map((k) => `c${k} -> [[n${Math.floor(random() * count)}]]`)] : []
    files[`n${n}.md`] = note({ front: n === 0 ? { type: 'start' } : {}, title: `Note ${n}`, ...(links.length > 0 && { next: links }) })
  }
  return files
}

const HEADERS = { host: '', 'content-type': 'application/json', accept: 'application/json, text/event-stream' }

/** A raw POST to `/mcp`: its status, its `mcp-session-id` and its body. */
function post(port: number, body: object, session?: string): Promise<{ status: number; session: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    const headers: Record<string, string> = { ...HEADERS, host: `127.0.0.1:${port}`, ...(session && { 'mcp-session-id': session }) }
    const sent = request({ host: '127.0.0.1', port, path: '/mcp', method: 'POST', headers }, (response) => {
      let text = ''
      response.on('data', (chunk: Buffer) => (text += chunk.toString()))
      response.on('end', () => resolve({ status: response.statusCode ?? 0, session: response.headers['mcp-session-id'] as string | undefined, body: text }))
    })
    sent.on('error', reject)
    sent.end(JSON.stringify(body))
  })
}

/** An `initialize` request: the new session's id, and the status. */
async function initialize(port: number): Promise<{ status: number; session: string | undefined; body: string }> {
  return post(port, {
    jsonrpc: '2.0',
    id: 1,
    method: 'initialize',
    params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'raw', version: '1' } },
  })
}

/** A `ping` in a session: 200 while the session lives, 404 once it is gone. */
async function ping(port: number, session: string): Promise<number> {
  return (await post(port, { jsonrpc: '2.0', id: 2, method: 'ping' }, session)).status
}

/** Opens the session's event stream (GET) and keeps it open until the test ends. */
function openStream(port: number, session: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const headers = { host: `127.0.0.1:${port}`, accept: 'text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-06-18' }
    const sent = request({ host: '127.0.0.1', port, path: '/mcp', method: 'GET', headers }, (response) => resolve(response.statusCode ?? 0))
    sent.on('error', (error) => (sent.destroyed ? undefined : reject(error)))
    streams.push(sent)
    sent.end()
  })
}

describe('MCP over HTTP under load', () => {
  it('holds at most maxSessions sessions: a new one closes the one idle longest', async () => {
    const { port } = await serve({ maxSessions: 3 })
    const ids: string[] = []
    for (let n = 0; n < 3; n++) ids.push((await initialize(port)).session!)
    // The first is used again: the second is now the one idle longest.
    expect(await ping(port, ids[0]!)).toBe(200)
    const fourth = await initialize(port)
    expect(fourth.status).toBe(200)
    expect(await Promise.all([...ids, fourth.session!].map((id) => ping(port, id)))).toEqual([200, 404, 200, 200])
  })

  it('holds at most maxSessions when initialize requests race, each answered 200 or 503', async () => {
    const { port } = await serve({ maxSessions: 3 })
    const answers = await Promise.all(Array.from({ length: 12 }, () => initialize(port)))
    expect(answers.map((answer) => answer.status).filter((status) => status !== 200 && status !== 503)).toEqual([])
    expect(answers.filter((answer) => answer.status === 200).length).toBeGreaterThan(0)
    const alive = await Promise.all(answers.filter((answer) => answer.session).map((answer) => ping(port, answer.session!)))
    expect(alive.filter((status) => status === 200).length).toBeLessThanOrEqual(3)
  })

  it('refuses a new session with 503 and a JSON-RPC error while every session has a stream open', async () => {
    const { port } = await serve({ maxSessions: 2 })
    const ids = [(await initialize(port)).session!, (await initialize(port)).session!]
    expect(await Promise.all(ids.map((id) => openStream(port, id)))).toEqual([200, 200])
    const refused = await initialize(port)
    expect({ status: refused.status, body: JSON.parse(refused.body) }).toEqual({
      status: 503,
      body: {
        jsonrpc: '2.0',
        error: {
          code: -32000,
          message: 'Too many sessions: all 2 have a request or a stream open; close one (DELETE /mcp) or start the server with a higher --max-sessions',
        },
        id: null,
      },
    })
    expect(await Promise.all(ids.map((id) => ping(port, id)))).toEqual([200, 200])
    streams.shift()!.destroy()
    await until(async () => (await initialize(port)).status === 200, 'a session once a stream closed')
    expect(await ping(port, ids[0]!)).toBe(404)
  })

  it('closes a session idle for sessionIdleMs', async () => {
    const { port } = await serve({ sessionIdleMs: 200 })
    const { session } = await initialize(port)
    expect(await ping(port, session!)).toBe(200)
    // Each look waits first: a ping is a request, and would keep the session from being idle.
    const idle = () => new Promise((resolve) => setTimeout(resolve, 1_000))
    await until(async () => (await idle(), await ping(port, session!)) === 404, 'the idle session to be closed')
  })

  it('takes the bounds as --max-sessions and --session-idle, and says so in its help', async () => {
    const help = await vaultplan(['mcp', '--help'])
    expect(help.stdout).toContain('--max-sessions N    over HTTP, hold at most N sessions (default 100)')
    expect(help.stdout).toContain('--session-idle MIN  over HTTP, close a session idle MIN minutes (default 60)')
    const root = await tempDir()
    expect(await vaultplan(['mcp', '--root', root, '--http', '0', '--max-sessions', '0'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining("--max-sessions takes an integer from 1 up, got '0'"),
    })
    expect(await vaultplan(['mcp', '--root', root, '--session-idle', '5'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--max-sessions and --session-idle are for --http; stdio serves one session'),
    })
  })

  it('refuses maxSessions and sessionIdleMs that are no bound', async () => {
    await expect(serve({ maxSessions: 0 })).rejects.toThrow(new TypeError('Expected `maxSessions` to be an integer from 1 up, got `0`'))
    await expect(serve({ sessionIdleMs: Number.NaN })).rejects.toThrow(
      new TypeError('Expected `sessionIdleMs` to be a number of milliseconds above 0, got `NaN`'),
    )
  })

  it('answers another session while an SVG is laid out, and refuses the SVG past svgTimeoutMs with picture-too-large', async () => {
    const { url, root } = await serve({ svgTimeoutMs: 5_000 })
    await writeVault(densePlan(60), join(root, 'dense'))
    const [drawer, other] = await Promise.all([httpClient(url), httpClient(url)])
    let drawn = false
    const started = layouts.started
    const svg = drawer.refusal('plan_graph', { vault: 'dense', format: 'svg' }).finally(() => (drawn = true))
    // Another session's call, made once the layout is under way, is answered before the layout ends.
    await until(() => layouts.started > started, 'the layout to be under way')
    const listed = await other.call('plan_list')
    expect({ drawn, vaults: listed.vaults.map((row: { vault: string }) => row.vault) }).toEqual({ drawn: false, vaults: ['dense'] })
    expect(await svg).toEqual({
      error: {
        code: 'picture-too-large',
        message:
          "The plan (60 notes) is too large to lay out as SVG within 5 s; draw it as mermaid, dot or canvas instead, or lay the DOT text out with Graphviz's own `dot -Tsvg`.",
        data: { notes: 60, timeoutMs: 5_000 },
      },
    })
  })
})

describe('plan_search with a long query', () => {
  it('is refused with query-too-long, saying why', async () => {
    const { url } = await serve()
    const agent = await httpClient(url)
    const query = Array.from({ length: 65 }, (_, n) => `w${n}`).join(' ')
    expect(await agent.refusal('plan_search', { query })).toEqual({
      error: {
        code: 'query-too-long',
        message: `the query has 65 words (${query.length} characters), over the 64 words and 1000 characters a search takes; search with the few words that matter`,
      },
    })
  })
})

describe('toSvg of a 400-note plan', () => {
  it('ends with PictureTooLargeError at timeoutMs, the process answering meanwhile', async () => {
    const graph = await loadPlan(await writeVault(densePlan(400)))
    let ticks = 0
    const ticking = setInterval(() => ticks++, 10)
    const refused = await toSvg(graph, undefined, { timeoutMs: 2_000 }).catch((error: unknown) => error)
    clearInterval(ticking)
    expect(refused).toBeInstanceOf(PictureTooLargeError)
    expect(refused).toMatchObject({ code: 'picture-too-large', notes: 400, timeoutMs: 2_000 })
    expect(ticks).toBeGreaterThan(0)
  })

  it('still draws a small plan', async () => {
    const svg = await toSvg(await loadPlan(await writeVault(densePlan(5))))
    expect(svg).toMatch(/^<\?xml[\s\S]*<svg[\s\S]*Note 4[\s\S]*<\/svg>\n$/)
  })
})
