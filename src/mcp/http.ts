import type { CheckDefinition } from '../run/core/checks.js'
import { randomUUID } from 'node:crypto'
import type { ServerResponse } from 'node:http'
import type { HttpBindings } from '@hono/node-server'
import { WebStandardStreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/webStandardStreamableHttp.js'
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js'
import { Hono, type Context } from 'hono'
import { bodyLimit } from 'hono/body-limit'
import { allowedHosts, foreignHostOrOrigin, sameSecret } from '../core/host-check.js'
import { listen } from './listen.js'
import { createMcpServer } from './server.js'

/** Options of `serveHttp`. */
export interface HttpOptions {
  root: string
  version: string
  /** @default '127.0.0.1' */
  host?: string
  /** `0` picks a free port. */
  port: number
  /** More `Host` values to accept (`name` or `name:port`; a name alone gets the bound port). */
  allowedHosts?: string[]
  /** When set, every request must carry `Authorization: Bearer <token>`. */
  token?: string
  /**
   * The most sessions held at once. A new session past it closes the one
   * idle longest (its client gets 404 and initializes again, as MCP asks);
   * when every session has a request or a stream open, it is refused with 503.
   *
   * @default 100
   */
  maxSessions?: number
  /**
   * A session with no request or stream open for this long is closed.
   *
   * @default 3_600_000 (one hour)
   */
  sessionIdleMs?: number
  /** How long `plan_graph`'s SVG layout may take (see `McpServerOptions`). */
  svgTimeoutMs?: number
  /** The checks a note's `check:` may name, as `McpServerOptions.checks`. */
  checks?: Record<string, CheckDefinition>
  /** The step budget of a run when `plan_next` names none, as `McpServerOptions.maxSteps`. */
  maxSteps?: number
  /** The agent every session works as when a call names none, as `McpServerOptions.agent`. */
  agent?: string
  /** How long a session's claim lasts unless it calls again, as `McpServerOptions.leaseMs`. */
  leaseMs?: number
}

const DEFAULTS = { host: '127.0.0.1', maxSessions: 100, sessionIdleMs: 3_600_000 }

/** A session: its transport, what closes it, its requests and streams open, and when the last one ended. */
interface Session {
  transport: WebStandardStreamableHTTPServerTransport
  close(): Promise<void>
  open: number
  idleSince: number
}

/** The endpoint of the Streamable HTTP transport. */
export const ENDPOINT = '/mcp'
/** The largest request body read: the SDK's own bound. */
const MAX_BODY = 4 * 1024 * 1024

type App = Hono<{ Bindings: HttpBindings }>

/**
 * Serves the vaults under `options.root` over MCP's Streamable HTTP
 * transport at `/mcp`, on the board's HTTP stack (Hono on Node's HTTP
 * server), one transport and one server per session (the
 * `mcp-session-id` the first response names). Before anything else, a
 * request whose `Host` is not the bound host and port (or `localhost`,
 * `127.0.0.1`, `[::1]` with that port when bound to loopback, or one of
 * `allowedHosts`), or whose `Origin` is present and not one of those, is
 * refused with 403 (DNS rebinding); with `token`, one without that bearer
 * token gets 401. Sessions are bounded: at most `maxSessions` are held (a
 * new one closes the one idle longest, or is refused with 503 while every
 * one has a request or stream open), and one idle for `sessionIdleMs` is
 * closed, so a flood of `initialize` requests cannot grow the server.
 *
 * @returns the endpoint's URL and what stops the server and every session.
 * @throws {TypeError} when `maxSessions` is not an integer from 1 up or `sessionIdleMs` not above 0.
 */
export async function serveHttp(options: HttpOptions): Promise<{ url: string; close(): Promise<void> }> {
  const { host, maxSessions, sessionIdleMs } = { ...DEFAULTS, ...definedOf(options) }
  if (!Number.isInteger(maxSessions) || maxSessions < 1) throw new TypeError(`Expected \`maxSessions\` to be an integer from 1 up, got \`${maxSessions}\``)
  if (!(sessionIdleMs > 0)) throw new TypeError(`Expected \`sessionIdleMs\` to be a number of milliseconds above 0, got \`${sessionIdleMs}\``)
  // In the order of their last request, least recent first: the first idle one is the one to close at the cap.
  const sessions = new Map<string, Session>()
  let starting = 0
  let allowed = new Set<string>()

  const drop = (id: string, session: Session) => {
    sessions.delete(id)
    session.close().catch(() => undefined)
  }
  /** Counts a request (or stream) of a session as open until its response closes. */
  const attend = (id: string, session: Session, response: ServerResponse) => {
    sessions.delete(id)
    sessions.set(id, session)
    session.open++
    response.once('close', () => {
      session.open--
      session.idleSince = Date.now()
    })
  }
  const sweep = setInterval(
    () => {
      const now = Date.now()
      for (const [id, session] of sessions) if (session.open === 0 && now - session.idleSince >= sessionIdleMs) drop(id, session)
    },
    Math.min(sessionIdleMs, 60_000),
  )
  sweep.unref()

  const app: App = new Hono()
  app.use(async (c, next) => {
    const refused = refusal(c, allowed, options.token)
    if (refused) return send(c, refused.status, refused.message, refused.headers)
    await next()
  })
  app.all(ENDPOINT, bodyLimit({ maxSize: MAX_BODY, onError: (c) => send(c, 413, `Request body over ${MAX_BODY} bytes`) }), async (c) => {
    const id = c.req.header('mcp-session-id')
    if (id !== undefined) {
      const session = sessions.get(id)
      if (!session) return send(c, 404, 'Session not found: it was closed, idle too long, or the server restarted; initialize a new one', {}, -32001)
      attend(id, session, c.env.outgoing)
      return session.transport.handleRequest(c.req.raw)
    }
    if (c.req.method !== 'POST') return send(c, 400, 'No session: POST an initialize request first')
    let body: unknown
    try {
      body = JSON.parse(await c.req.text())
    } catch {
      return send(c, 400, 'Parse error: the body is not JSON', {}, -32700)
    }
    if (!isInitializeRequest(body)) return send(c, 400, 'No session: the first request of a session is an initialize request (without mcp-session-id)')
    if (sessions.size + starting >= maxSessions) {
      const idlest = [...sessions].find(([, session]) => session.open === 0)
      if (!idlest) {
        return send(
          c,
          503,
          `Too many sessions: all ${maxSessions} have a request or a stream open; close one (DELETE /mcp) or start the server with a higher --max-sessions`,
          { 'retry-after': '1' },
        )
      }
      drop(...idlest)
    }
    const mcp = createMcpServer({
      root: options.root,
      version: options.version,
      ...(options.svgTimeoutMs !== undefined && { svgTimeoutMs: options.svgTimeoutMs }),
      ...(options.checks !== undefined && { checks: options.checks }),
      ...(options.maxSteps !== undefined && { maxSteps: options.maxSteps }),
      ...(options.agent !== undefined && { agent: options.agent }),
      ...(options.leaseMs !== undefined && { leaseMs: options.leaseMs }),
    })
    // Counted against the cap from here until it is a session (or is refused), so racing initializes cannot pass it.
    let pending = true
    starting++
    const settle = () => {
      if (pending) starting--
      pending = false
    }
    const transport = new WebStandardStreamableHTTPServerTransport({
      sessionIdGenerator: () => randomUUID(),
      onsessioninitialized: (sessionId) => {
        settle()
        attend(sessionId, { transport, close: mcp.close, open: 0, idleSince: Date.now() }, c.env.outgoing)
      },
    })
    // The server hears of the close too (its onclose stops the session's file watchers).
    transport.onclose = () => {
      if (transport.sessionId !== undefined) sessions.delete(transport.sessionId)
    }
    let response: Response
    try {
      await mcp.server.connect(transport)
      response = await transport.handleRequest(c.req.raw, { parsedBody: body })
    } finally {
      settle()
    }
    // An initialize the transport refused (a wrong Accept header, say) made no session: nothing may hold its server.
    if (transport.sessionId === undefined || !sessions.has(transport.sessionId)) await mcp.close()
    return response
  })
  app.notFound((c) => send(c, 404, `Not found: the MCP endpoint is ${ENDPOINT}`))
  app.onError((error, c) => send(c, 500, `Internal error: ${error instanceof Error ? error.message : String(error)}`, {}, -32603))

  const server = await listen(app, host, options.port)
  allowed = allowedHosts(host, server.port, options.allowedHosts ?? [])
  const shown = host.includes(':') ? `[${host}]` : host
  return {
    url: `http://${shown}:${server.port}${ENDPOINT}`,
    close: async () => {
      clearInterval(sweep)
      await Promise.all([...sessions.values()].map((session) => session.close()))
      sessions.clear()
      await server.close()
    },
  }
}

/** `options` without its `undefined` values, so they take the defaults. */
function definedOf<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>
}

/** Why a request is refused before it reaches MCP, if it is: a foreign `Host` or `Origin` (403), a missing token (401). */
function refusal(
  c: Context,
  allowed: ReadonlySet<string>,
  token: string | undefined,
): { status: number; message: string; headers?: Record<string, string> } | undefined {
  const foreign = foreignHostOrOrigin({ host: c.req.header('host'), origin: c.req.header('origin') }, allowed)
  if (foreign) {
    const hint = foreign.header === 'Host' ? '; start it with --allowed-host to accept another name' : ''
    return { status: 403, message: `Forbidden: ${foreign.message}${hint}` }
  }
  if (token !== undefined && !sameSecret(bearer(c.req.header('authorization')), token)) {
    return {
      status: 401,
      message: 'Unauthorized: send the token of VAULTPLAN_MCP_TOKEN as `Authorization: Bearer <token>`',
      headers: { 'www-authenticate': 'Bearer realm="vaultplan"' },
    }
  }
  return undefined
}

function bearer(header: string | undefined): string | undefined {
  const match = header === undefined ? null : /^Bearer[ \t]+(\S+)[ \t]*$/i.exec(header)
  return match?.[1]
}

/** Answers with a JSON-RPC error object, as the SDK's transport does for its own refusals. */
function send(c: Context, status: number, message: string, headers: Record<string, string> = {}, code = -32000): Response {
  return new Response(JSON.stringify({ jsonrpc: '2.0', error: { code, message }, id: null }), {
    status,
    headers: { 'content-type': 'application/json', ...headers },
  })
}
