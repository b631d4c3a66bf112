import { describe, expect, test } from 'vitest'
import { boardCli, send, teamRoot } from './helpers/board.js'

/*
 * Whom the board answers: a teammate's laptop by the name given with
 * --allowed-host, nothing else.
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
      const body = 'vault=release&node=review&edge=approved&back=run'
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
