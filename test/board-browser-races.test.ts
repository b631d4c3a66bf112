import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { decide, readProposal, runPlan } from 'vaultplan'
import { startBoard } from 'vaultplan/board'
import { launchChromium, openBoard, proposalRoot, submit, teamRoot, V2 } from './helpers/board.js'
import { noJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'

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

describe('a page left open while what it shows moves on', () => {
  test('approve clicked on a page that shows version 1, after version 2 was written, approves nothing and shows version 2, the feedback kept', async () => {
    const root = await proposalRoot()
    const vault = join(root, 'post')
    const { page, close } = await openBoard(browser, root)
    try {
      // A page that does not follow the files (asleep, offline a moment): it still shows version 1.
      await page.route('**/events', (route) => route.abort())
      await page.goto(new URL('/proposal?vault=post', page.url()).href)
      expect(await page.locator('.decision h3').innerText()).toBe('The proposed plan, version 1')
      await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
      await runPlan(vault, { fsync: false, llm: scriptedJudge(() => V2) })
      const before = await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')

      await page.getByLabel('Feedback (optional)').fill('Ship it.')
      const [response] = await Promise.all([
        page.waitForResponse((answer) => answer.url().endsWith('/decide')),
        page.getByRole('button', { name: 'approve' }).click(),
      ])
      expect(response.status()).toBe(409)
      expect(await page.locator('.notice').innerText()).toBe(
        'Nothing was decided: you decided on version 1 of the proposal, and it is at version 2 now. Here it is; decide again.',
      )
      expect(await page.locator('.decision h3').innerText()).toBe('The proposed plan, version 2')
      expect(await page.getByLabel('Feedback (optional)').inputValue()).toBe('Ship it.')
      expect(await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')).toBe(before)

      // Decided again on what it shows now: taken.
      await submit(page, page.getByRole('button', { name: 'approve' }), /\/proposal\?vault=post$/)
      await runPlan(vault, { fsync: false, work: scriptedWorker(), llm: scriptedJudge(() => 'next') })
      expect(await readProposal(vault)).toMatchObject({ version: 2, status: 'approved' })
    } finally {
      await close()
    }
  })

  test('a choice clicked on a page that shows an earlier visit of the waiting note decides nothing, and shows the visit that waits', async () => {
    const root = await teamRoot()
    const vault = join(root, 'release')
    const { page, close } = await openBoard(browser, root)
    try {
      await page.route('**/events', (route) => route.abort())
      await page.goto(new URL('/run?vault=release', page.url()).href)
      await decide(vault, 'review', { edge: 'needs revision' })
      await runPlan(vault, { fsync: false, llm: noJudge(), work: scriptedWorker() })
      const before = await readFile(join(vault, 'review.md'), 'utf8')

      const [response] = await Promise.all([
        page.waitForResponse((answer) => answer.url().endsWith('/decide')),
        page.getByRole('button', { name: 'approved' }).click(),
      ])
      expect(response.status()).toBe(409)
      expect(await page.locator('.notice').innerText()).toBe(
        'Nothing was decided: you decided on visit 1 of review, and it waits at its visit 2 now. Here it is; decide again.',
      )
      expect(await page.locator('table.hops tbody td:nth-child(2)').allInnerTexts()).toEqual(['draft', 'review', 'draft'])
      expect(await readFile(join(vault, 'review.md'), 'utf8')).toBe(before)
    } finally {
      await close()
    }
  })
})
