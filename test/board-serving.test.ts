import type { AddressInfo } from 'node:net'
import { connect } from 'node:net'
import { serve, type HttpBindings } from '@hono/node-server'
import { Hono } from 'hono'
import { describe, expect, test } from 'vitest'
import { startBoard, type Board } from 'vaultplan/board'
import { eventStreams } from '../src/board/event-streams.js'
import { boardCli, cookieOf, send, teamRoot } from './helpers/board.js'
import { until } from './helpers/until.js'

/*
 * Whom the board answers: a teammate's laptop by the name given with
 * --allowed-host, nothing else; and how many live pages, each how far
 * behind.
 */

describe('vaultplan board --allowed-host', () => {
  test('bound to 0.0.0.0, it answers requests to the allowed name and prints its URL by it; a foreign Host or Origin is still refused', async () => {
    const board = await boardCli(['--root', await teamRoot(), '--http', '0.0.0.0:0', '--allowed-host', 'laptop.lan'])
    try {
      const { port } = board.url
      expect(board.url.href).toMatch(new RegExp(`^http://laptop\\.lan:${port}/\\?token=[0-9a-f]{64}$`))
      const cookie = `vaultplan_board_${port}=${board.url.searchParams.get('token')}`
      const at = (path: string) => `http://127.0.0.1:${port}${path}`
      const host = `laptop.lan:${port}`
      expect((await send(at('/run?vault=release'), { headers: { host, cookie } })).status).toBe(200)
      const form = { host, cookie, 'content-type': 'application/x-www-form-urlencoded' }
      const body = 'vault=release&node=review&edge=approved&back=run&visit=1'
      const refused = await Promise.all([
        send(at('/run?vault=release'), { headers: { host: `evil.example:${port}`, cookie } }),
        send(at('/decide'), { method: 'POST', headers: { ...form, origin: `http://evil.example:${port}` }, body }),
      ])
      expect(refused.map(({ status }) => status)).toEqual([403, 403])
      expect((await send(at('/decide'), { method: 'POST', headers: { ...form, origin: `http://${host}` }, body })).status).toBe(303)
    } finally {
      board.stop()
    }
  })

  test('bound to 0.0.0.0 without it, it says that browsers will be refused, and how to let them in', async () => {
    const board = await boardCli(['--root', await teamRoot(), '--http', '0.0.0.0:0'])
    try {
      await expect.poll(() => board.stderr()).toContain('--allowed-host')
    } finally {
      board.stop()
    }
  })
})

describe("the board's live pages", () => {
  /** Opens `/events` as a page does and waits for its `ready`; resolves the response, its body still open. */
  async function follow(board: Board): Promise<Response> {
    const response = await fetch(`${board.origin}/events`, { headers: { cookie: cookieOf(board) } })
    if (response.status !== 200) return response
    const reader = response.body!.getReader()
    let text = ''
    while (!text.includes('event: ready')) text += new TextDecoder().decode((await reader.read()).value)
    reader.releaseLock()
    return response
  }

  test('past `maxEventStreams` open streams, one more is refused (503) until a page goes away', async () => {
    const board = await startBoard({ root: await teamRoot(), token: 'secret', maxEventStreams: 2 })
    try {
      const open = [await follow(board), await follow(board)]
      expect(open.map((response) => response.status)).toEqual([200, 200])
      const refused = await follow(board)
      expect({ status: refused.status, retry: refused.headers.get('retry-after') }).toEqual({ status: 503, retry: '60' })
      await refused.text()
      await open[0]!.body!.cancel()
      let next: Response | undefined
      await until(async () => {
        next = await follow(board)
        if (next.status !== 200) await next.text()
        return next.status === 200
      }, 'a place freed by the page that went away')
      await Promise.all([open[1]!.body!.cancel(), next!.body!.cancel()])
    } finally {
      await board.close()
    }
  })

  test('a client that never reads is disconnected once its unread notices pass the cap, and its place is free again', async () => {
    // A stand-in for the root's watch, so that the notices can be as large and as many as the test needs at once.
    const listeners = new Set<(paths: string[]) => void>()
    const watch = { listen: (listener: (paths: string[]) => void) => (listeners.add(listener), () => void listeners.delete(listener)) }
    const app = new Hono<{ Bindings: HttpBindings }>().get('/events', eventStreams(watch, { maxStreams: 1, maxQueuedBytes: 64 * 1024 }))
    const server = serve({ fetch: app.fetch, hostname: '127.0.0.1', port: 0 })
    await new Promise<void>((done) => (server.listening ? done() : server.once('listening', () => done())))
    const { port } = server.address() as AddressInfo
    const socket = connect(port, '127.0.0.1')
    try {
      socket.pause()
      socket.write(`GET /events HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`)
      await until(() => listeners.size === 1, 'the stream to listen')
      expect((await fetch(`http://127.0.0.1:${port}/events`)).status).toBe(503)
      // 200 paths of 4,000 bytes a notice, as a burst of changes deep in a vault: they fill what the
      // system buffers for the socket, then the stream's own queue, until it passes the cap.
      const notice = Array.from({ length: 200 }, (_, at) => `${at}/${'x'.repeat(4_000)}`)
      for (let sent = 0; listeners.size > 0; sent++) {
        if (sent > 100) throw new Error('80 MB of notices sent, and the client that reads none is still connected')
        for (const listener of [...listeners]) listener(notice)
        await new Promise((resolve) => setImmediate(resolve))
      }
      const again = await fetch(`http://127.0.0.1:${port}/events`)
      expect(again.status).toBe(200)
      await again.body!.cancel()
    } finally {
      socket.destroy()
      if ('closeAllConnections' in server) server.closeAllConnections()
      await new Promise((done) => server.close(done))
    }
  })
})
