import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { startBoard } from 'vaultplan/board'
import { launchChromium, teamRoot } from './helpers/board.js'

/*
 * The board in a browser where two things race: two boards for one
 * browser's cookies, a page left open while the note or the proposal it
 * shows moves on.
 */

let browser: Browser
beforeAll(async () => {
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
})

describe('two boards in one browser', () => {
  test('each keeps its own cookie: the first still answers once the second was opened, and both keep working', async () => {
    const [first, second] = await Promise.all([startBoard({ root: await teamRoot() }), startBoard({ root: await teamRoot() })])
    const context = await browser.newContext()
    try {
      const page = await context.newPage()
      await page.goto(first.url)
      await page.goto(second.url)
      for (const board of [first, second]) {
        const response = await page.goto(`${board.origin}/run?vault=release`)
        expect({ origin: board.origin, status: response?.status() }).toEqual({ origin: board.origin, status: 200 })
      }
      const names = (await context.cookies()).map((cookie) => cookie.name).sort()
      expect(names).toEqual([`vaultplan_board_${new URL(first.origin).port}`, `vaultplan_board_${new URL(second.origin).port}`].sort())
    } finally {
      await context.close()
      await Promise.all([first.close(), second.close()])
    }
  })
})
