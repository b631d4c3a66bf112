import type { AddressInfo } from 'node:net'
import { serve, type HttpBindings } from '@hono/node-server'
import type { Hono } from 'hono'

/** A Hono app served on a host and port: the port it bound, and what stops it and drops every connection. */
export interface Listening {
  port: number
  close(): Promise<void>
}

/**
 * Serves a Hono app on Node's HTTP server: the one HTTP stack of the board
 * and of MCP over Streamable HTTP (`@hono/node-server`, which hands each
 * request's Node objects to the app as `c.env`). Resolves once it listens.
 *
 * @throws the server's `listen` error (the port taken, the host not this machine's)
 */
export async function listen(app: Hono<{ Bindings: HttpBindings }>, host: string, port: number): Promise<Listening> {
  const server = serve({ fetch: app.fetch, hostname: host, port })
  await new Promise<void>((resolve, reject) => {
    if (server.listening) return resolve()
    server.once('listening', () => resolve())
    server.once('error', reject)
  })
  return {
    port: (server.address() as AddressInfo).port,
    close: async () => {
      if ('closeAllConnections' in server) server.closeAllConnections()
      await new Promise<void>((resolve) => server.close(() => resolve()))
    },
  }
}
