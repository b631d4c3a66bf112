import { spawn, type ChildProcess } from 'node:child_process'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'
import { InMemoryTransport } from '@modelcontextprotocol/sdk/inMemory.js'
import { ElicitRequestSchema, ResourceUpdatedNotificationSchema, type ElicitRequest, type ElicitResult } from '@modelcontextprotocol/sdk/types.js'
import { realpath } from 'node:fs/promises'
import { createMcpServer } from '../../src/mcp/server.js'
import { afterEach } from 'vitest'
import { bin, root as repository } from './cli.js'

const open: { close(): Promise<void> }[] = []

afterEach(async () => {
  await Promise.all(open.splice(0).map((item) => item.close()))
})

/** A client of the SDK with the calls the tests make, and a log of what it did (for the transcript in docs/mcp.md). */
export interface TestClient {
  client: Client
  /** The `uri`s of every `notifications/resources/updated` received, in order. */
  updated: string[]
  /** Every tool call: name, arguments, and the result's structured content or error text. */
  calls: { tool: string; arguments: Record<string, unknown>; result: unknown; isError: boolean }[]
  /** The server's process id, for a server over stdio (to signal or kill it as a host would). */
  pid?: number | undefined
  /** Calls a tool that must succeed; its `structuredContent` (checked to equal the JSON text block). */
  call(tool: string, args?: Record<string, unknown>): Promise<any>
  /** Calls a tool that must fail as a tool result (`isError: true`); its text. */
  refuse(tool: string, args?: Record<string, unknown>): Promise<string>
  /** Calls a tool that must fail as a tool result (`isError: true`); its `structuredContent`. */
  refusal(tool: string, args?: Record<string, unknown>): Promise<any>
  close(): Promise<void>
}

function wrap(client: Client, close: () => Promise<void>): TestClient {
  const updated: string[] = []
  const calls: TestClient['calls'] = []
  client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
    updated.push(notification.params.uri)
  })
  const invoke = async (tool: string, args: Record<string, unknown>) => {
    const result = await client.callTool({ name: tool, arguments: args })
    const content = result.content as { type: string; text: string }[]
    const text = content.find((block) => block.type === 'text')?.text ?? ''
    calls.push({ tool, arguments: args, result: result.isError ? text : result.structuredContent, isError: result.isError === true })
    return { result, text }
  }
  const wrapped: TestClient = {
    client,
    updated,
    calls,
    async call(tool, args = {}) {
      const { result, text } = await invoke(tool, args)
      if (result.isError) throw new Error(`${tool} failed: ${text}`)
      if (JSON.stringify(JSON.parse(text)) !== JSON.stringify(result.structuredContent))
        throw new Error(`${tool}: the text block is not the structured content`)
      return result.structuredContent
    },
    async refuse(tool, args = {}) {
      const { result, text } = await invoke(tool, args)
      if (!result.isError) throw new Error(`${tool} succeeded, expected a refusal: ${text}`)
      return text
    },
    async refusal(tool, args = {}) {
      const { result, text } = await invoke(tool, args)
      if (!result.isError) throw new Error(`${tool} succeeded, expected a refusal: ${text}`)
      return result.structuredContent
    },
    close,
  }
  open.push(wrapped)
  return wrapped
}

/** Starts `vaultplan mcp --root <root>` from the built CLI over stdio and connects the SDK's client to it. */
export async function stdioClient(
  root: string,
  env: Record<string, string> = {},
  more: { args?: string[]; cwd?: string; name?: string } = {},
): Promise<TestClient> {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: [bin, 'mcp', '--root', root, ...(more.args ?? [])],
    env: { PATH: process.env.PATH ?? '', ...env },
    stderr: 'pipe',
    ...(more.cwd === undefined ? {} : { cwd: more.cwd }),
  })
  const client = new Client({ name: more.name ?? 'vaultplan-test', version: '1.0.0' })
  await client.connect(transport)
  const wrapped = wrap(client, () => client.close())
  wrapped.pid = transport.pid ?? undefined
  return wrapped
}

/**
 * The server of `src/` in this process, connected to the SDK's client in
 * memory: for tests of the server's checks, with no build and no child process.
 */
export async function memoryClient(
  root: string,
  options: { leaseMs?: number; name?: string; elicit?: (request: ElicitRequest) => ElicitResult | Promise<ElicitResult> } = {},
): Promise<TestClient> {
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair()
  const served = createMcpServer({ root: await realpath(root), version: '0.0.0-test', ...(options.leaseMs !== undefined && { leaseMs: options.leaseMs }) })
  await served.server.connect(serverSide)
  // A client that answers elicitation declares it, as a coding agent that can show a form does.
  const client = new Client({ name: options.name ?? 'vaultplan-test', version: '1.0.0' }, options.elicit ? { capabilities: { elicitation: { form: {} } } } : {})
  if (options.elicit) client.setRequestHandler(ElicitRequestSchema, options.elicit)
  await client.connect(clientSide)
  return wrap(client, async () => {
    await client.close()
    await served.close()
  })
}

/** A `vaultplan mcp --http` process of the built CLI and the endpoint it printed. */
export interface HttpServer {
  url: string
  /** The bound port, for raw requests. */
  port: number
  process: ChildProcess
  stop(): Promise<void>
}

/** Starts `vaultplan mcp --root <root> --http 127.0.0.1:0 [args]` and waits for it to say where it listens. */
export async function httpServer(root: string, options: { args?: string[]; env?: Record<string, string> } = {}): Promise<HttpServer> {
  const child = spawn(process.execPath, [bin, 'mcp', '--root', root, '--http', '127.0.0.1:0', ...(options.args ?? [])], {
    cwd: repository,
    env: { PATH: process.env.PATH ?? '', ...options.env },
    stdio: ['ignore', 'ignore', 'pipe'],
  })
  let stderr = ''
  const url = await new Promise<string>((resolve, reject) => {
    child.stderr!.on('data', (chunk: Buffer) => {
      stderr += chunk.toString()
      const found = /at (http:\/\/\S+)/.exec(stderr)
      if (found) resolve(found[1]!)
    })
    child.once('exit', (code) => reject(new Error(`vaultplan mcp --http exited (${code}): ${stderr}`)))
  })
  const stop = async () => {
    if (child.exitCode !== null || child.signalCode !== null) return
    const exited = new Promise((resolve) => child.once('exit', resolve))
    child.kill('SIGTERM')
    await exited
  }
  const server = { url, port: Number(new URL(url).port), process: child, stop, close: stop }
  open.push(server)
  return server
}

/** Connects the SDK's client to a Streamable HTTP endpoint; `headers` go with every request. */
export async function httpClient(url: string, headers: Record<string, string> = {}): Promise<TestClient> {
  const transport = new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } })
  const client = new Client({ name: 'vaultplan-test', version: '1.0.0' })
  await client.connect(transport)
  return wrap(client, async () => {
    await transport.terminateSession().catch(() => undefined)
    await client.close()
  })
}
export { until } from './until.js'

/** A plan document with a choice (review) and a note decided by a person (approve). */
export const DOCUMENT = `## draft
type: start
Write a two-line release note for vaultplan 0.2.
### Next
- [[review]]

## review
Check the draft: is it accurate and short?
### Next
- approved -> [[approve]]
- needs revision -> [[draft]]

## approve
judge: human
A person approves the note before it is sent.
### Next
- send it -> [[send]]
- rewrite -> [[draft]]

## send
Post the release note.
`
