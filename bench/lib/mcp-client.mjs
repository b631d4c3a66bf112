/**
 * An MCP client as an agent's host runs one: the official SDK's `Client`
 * over stdio (the host starts the server), with every JSON-RPC message kept
 * as it crossed the wire, and the tokens of a text in `o200k_base` (the
 * encoding of OpenAI's current models), for bench/mcp-tokens.mjs and
 * bench/mcp-hop.mjs.
 */
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport, getDefaultEnvironment } from '@modelcontextprotocol/sdk/client/stdio.js'
import { Tiktoken } from 'js-tiktoken/lite'
import o200kBase from 'js-tiktoken/ranks/o200k_base'

const encoding = new Tiktoken(o200kBase)

/** The tokens of `text` in `o200k_base`. */
export function tokens(text) {
  return encoding.encode(text).length
}

/**
 * A transport that hands every message on and keeps it: `wire.received`
 * and `wire.sent` hold the JSON-RPC messages in order. Each is written on
 * the wire as `JSON.stringify(message)` and a newline (the SDK's stdio
 * framing), so {@link onTheWire} gives back its text.
 */
function tapped(inner) {
  const wire = { received: [], sent: [] }
  const outer = {
    wire,
    async start() {
      inner.onmessage = (message, extra) => {
        wire.received.push(message)
        outer.onmessage?.(message, extra)
      }
      inner.onclose = () => outer.onclose?.()
      inner.onerror = (error) => outer.onerror?.(error)
      return inner.start()
    },
    send(message, options) {
      wire.sent.push(message)
      return inner.send(message, options)
    },
    close: () => inner.close(),
    setProtocolVersion: (version) => inner.setProtocolVersion?.(version),
  }
  return outer
}

/** The text of a JSON-RPC message as the stdio transport writes it (without the newline). */
export function onTheWire(message) {
  return JSON.stringify(message)
}

/**
 * Starts `command args` as an MCP server over stdio and connects the SDK's
 * client to it. Resolves to `{ client, wire, stderr, close, pid }`
 * (`stderr()`: what the server printed there so far); rejects when the
 * server does not answer `initialize` within `timeoutMs`.
 */
export async function connectStdio(command, args, { cwd, env = {}, timeoutMs = 60_000 } = {}) {
  const inner = new StdioClientTransport({ command, args, cwd, env: { ...getDefaultEnvironment(), ...env }, stderr: 'pipe' })
  let stderr = ''
  inner.stderr?.on('data', (chunk) => (stderr += chunk))
  const transport = tapped(inner)
  const client = new Client({ name: 'vaultplan-bench', version: '1' })
  let timer
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`no answer to initialize within ${timeoutMs / 1000} s`)), timeoutMs)
  })
  try {
    await Promise.race([client.connect(transport, { timeout: timeoutMs }), timeout])
  } catch (error) {
    await transport.close().catch(() => {})
    const said = stderr.trim().split('\n').slice(-3).join(' | ')
    throw new Error(`${error.message}${said ? ` (stderr: ${said.slice(0, 300)})` : ''}`, { cause: error })
  } finally {
    clearTimeout(timer)
  }
  return { client, wire: transport.wire, stderr: () => stderr, close: () => client.close(), pid: inner.pid }
}

/** The response to the last request of `method` sent over `wire`, as received. */
export function responseTo(wire, method) {
  const request = wire.sent.findLast((message) => message.method === method && message.id !== undefined)
  return wire.received.find((message) => message.id === request?.id && ('result' in message || 'error' in message))
}

/**
 * What an agent reads of a tool's result: the text of its content blocks
 * and its `structuredContent` as sent, in tokens each.
 */
export function resultTokens(result) {
  const text = (result.content ?? []).map((block) => (block.type === 'text' ? block.text : JSON.stringify(block))).join('\n')
  const structured = result.structuredContent === undefined ? '' : JSON.stringify(result.structuredContent)
  return { text: tokens(text), structured: structured ? tokens(structured) : 0 }
}

/**
 * The note of a work step as `{ id, title }`, from `step.node` or `step.note`
 * (the server's step names it either way, as an object or by its id).
 */
export function workNote(step) {
  const note = step.node ?? step.note
  return typeof note === 'string' ? { id: note, title: note } : { id: note.id, title: note.title ?? note.id }
}
