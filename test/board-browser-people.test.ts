import { execFile } from 'node:child_process'
import { mkdir, symlink } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { promisify } from 'node:util'
import type { Browser, Page } from 'playwright-core'
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest'
import { decide, observeRun, runPlan } from 'vaultplan'
import { splitWords } from '../src/cli/cli-checks.js'
import { boardCli, launchChromium, LIVE_MS, openBoard, screenshot, submit, teamRoot } from './helpers/board.js'
import { bin } from './helpers/cli.js'
import { deadlinePlan, linear } from './helpers/plans.js'
import { noJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { startChatServer } from './support/chat-server.js'
import { note, tempDir, writeVault } from './helpers/vault.js'

/*
 * The board as the people around a plan meet it: the first page has runs on it, a decision says
 * what was chosen and what happens next, a deadline's edge is no button, the hops say why, and
 * the page fits a phone.
 */

let browser: Browser
beforeAll(async () => {
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
})
const stops: (() => unknown)[] = []
afterEach(async () => {
  await Promise.all(stops.splice(0).map((stop) => stop()))
})

/** A page of a new browser context on `url` (the board's, with its token), sized `width`. */
async function open(url: string, width = 1200): Promise<Page> {
  const context = await browser.newContext({ viewport: { width, height: 900 } })
  stops.push(() => context.close())
  const page = await context.newPage()
  await page.goto(url)
  return page
}

/** The fill of a note's box in the run's picture, as the board serves it. */
async function fillOf(page: Page, vault: string, title: string): Promise<string | undefined> {
  const svg = await page.evaluate(async (name) => (await fetch(`/plan.svg?vault=${encodeURIComponent(name)}`)).text(), vault)
  return new RegExp(`xlink:title="${title}">\\s*<\\w+ fill="(#[0-9a-f]+)"`).exec(svg)?.[1]
}

describe('the people around a plan, on the board', () => {
  test('the first page after the demo, `board --root runs`, opens the tab that has runs when none waits on a person', async () => {
    const root = await tempDir('vaultplan-board-')
    for (const name of ['demo-1', 'demo-2']) {
      const vault = await writeVault(linear(), join(root, name))
      await runPlan(vault, { query: 'Announce it', fsync: false, llm: noJudge(), work: scriptedWorker() })
    }
    const board = await boardCli(['--root', root])
    stops.push(board.stop)
    const page = await open(board.url.href)
    expect(await page.locator('.tabs a[aria-current="page"]').innerText()).toBe('All 2')
    expect(await page.locator('table.runs tbody tr td:first-child').allInnerTexts()).toEqual(['demo-1', 'demo-2'])
    expect(await page.getByText('No run here.').count()).toBe(0)
    // The tab asked for is the tab shown, empty or not.
    await page.getByRole('link', { name: /^Needs you/ }).click()
    expect(await page.getByText('No run here.').count()).toBe(1)
  })

  test('after a decision the page says what was chosen, with the feedback, and the command that goes on; the note is drawn decided, and the command works', async () => {
    // A project that installed vaultplan and keeps its runs in runs/: the board started there, as `npx vaultplan board --root runs`.
    const project = await tempDir('vaultplan-project-')
    const linked = join(project, 'node_modules', '.bin', 'vaultplan')
    await mkdir(dirname(linked), { recursive: true })
    await symlink(bin, linked)
    const root = await teamRoot(undefined, join(project, 'runs'))
    const board = await boardCli(['--root', 'runs'], { cwd: project, script: linked })
    stops.push(board.stop)
    const page = await open(board.url.href)
    await page.goto(new URL('/run?vault=release', page.url()).href)
    const waiting = await fillOf(page, 'release', 'Review')
    await page.getByLabel('Feedback (optional)').fill('Shorter, please.\n\n- Keep the date.')
    await submit(page, page.getByRole('button', { name: 'needs revision' }), /\/run\?vault=release$/)

    expect(await page.locator('.after-decision').innerText()).toBe(
      'Decided\nreview: decided needs revision, with the feedback Shorter, please.\n\n- Keep the date.\n\nNext: run npx vaultplan run runs/release to go on. A runner waiting on it (vaultplan run --wait), or a queue worker that serves this run, goes on by itself.',
    )
    expect(await page.locator('.decision').count()).toBe(0)
    expect({ before: waiting, after: await fillOf(page, 'release', 'Review') }).toEqual({ before: '#cffafe', after: '#dcfce7' })
    const plan = page.locator('img.plan')
    await expect.poll(() => plan.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), { timeout: 5_000 }).toBeGreaterThan(100)
    await screenshot(page, 'decided', root)

    // The command the page names goes on (npx runs the project's node_modules/.bin/vaultplan): the draft is worked again
    // with the feedback as typed, and the review waits again, which the open page shows.
    await page.waitForSelector('body[data-live="true"]')
    const model = await startChatServer(() => 'A shorter draft.')
    stops.push(model.close)
    const [npx, name, ...args] = splitWords('npx vaultplan run runs/release')
    expect([npx, name]).toEqual(['npx', 'vaultplan'])
    const env = { PATH: process.env.PATH ?? '', LLM_MODEL: 'm', LLM_BASE_URL: model.url }
    const ran = await promisify(execFile)(process.execPath, [linked, ...args], { cwd: project, env }).catch((error: { code: number }) => error)
    expect((ran as { code?: number }).code).toBe(4)
    expect(model.requests.find((request) => request.kind === 'work')?.prompt).toContain('Shorter, please.\n\n- Keep the date.')
    await page.locator('.decision').waitFor({ timeout: LIVE_MS })
    expect(await page.locator('.after-decision').count()).toBe(0)
  })

  test('the plan picture never goes blank while a live update loads the new one', async () => {
    const root = await teamRoot()
    const { page, close } = await openBoard(browser, root)
    stops.push(close)
    await page.goto(new URL('/run?vault=chores', page.url()).href)
    await page.waitForSelector('body[data-live="true"]')
    const plan = page.locator('img.plan')
    await expect.poll(() => plan.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), { timeout: 5_000 }).toBeGreaterThan(100)
    const first = await plan.getAttribute('src')
    // Every change of the page is looked at as it happens: a picture missing or not loaded then is a blank one.
    await page.evaluate(`
      globalThis.blank = 0
      new MutationObserver(() => {
        const img = document.querySelector('img.plan')
        if (!img || !img.complete || img.naturalWidth === 0) globalThis.blank++
      }).observe(document.getElementById('main'), { childList: true, subtree: true, attributes: true })
    `)
    await runPlan(join(root, 'chores'), { fsync: false, llm: noJudge(), work: scriptedWorker(), maxSteps: 2 })
    await page.locator('table.hops tbody tr').nth(1).waitFor({ timeout: LIVE_MS })
    await expect.poll(() => plan.getAttribute('src'), { timeout: LIVE_MS }).not.toBe(first)
    expect(await plan.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth)).toBeGreaterThan(100)
    expect(await page.evaluate(() => (globalThis as unknown as { blank: number }).blank)).toBe(0)
  })

  test("a `wait:` note's `timeout` is no button: the deadline takes it, and the page says when", async () => {
    const root = await tempDir('vaultplan-board-')
    const vault = await writeVault(deadlinePlan('2d'), join(root, 'launch'))
    const waits = await runPlan(vault, { query: 'Launch', fsync: false, llm: noJudge(), work: scriptedWorker() })
    const { page, close } = await openBoard(browser, root)
    stops.push(close)
    await page.goto(new URL('/run?vault=launch', page.url()).href)
    expect(await page.locator('.decision .choices button').allInnerTexts()).toEqual(['approved'])
    expect(await page.locator('.decision .deadline').innerText()).toMatch(
      /^Unless you decide first, its timeout edge is taken at \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC\.$/,
    )
    expect(await page.locator('.decision .deadline time').getAttribute('datetime')).toBe(waits.waiting![0]!.deadline)
  })

  test('the hops say why: the check, the judge, the person in their own words; the page fits a 420 px screen', async () => {
    const root = await tempDir('vaultplan-board-')
    const vault = await writeVault(
      {
        'code.md': note({ front: { type: 'start', check: 'test' }, title: 'Code', next: ['passed -> [[review]]', 'failed -> [[code]]'] }),
        'review.md': note({ title: 'Review', next: ['approved -> [[approve]]', 'needs revision -> [[code]]'] }),
        'approve.md': note({ front: { judge: 'human' }, title: 'Approve', next: ['[ ] ship -> [[ship]]', '[ ] rework -> [[code]]'] }),
        'ship.md': note({ title: 'Ship' }),
      },
      join(root, 'feature-with-a-rather-long-name'),
    )
    const options = {
      query: 'Add a --verbose flag to the command line, with a test',
      fsync: false,
      work: scriptedWorker(),
      llm: scriptedJudge(() => '1: YES\n2: NO'),
      checks: { test: { command: [process.execPath, '-e', ''] } },
    }
    await runPlan(vault, options)
    await decide(vault, 'approve', { edge: 'ship', feedback: 'Ship it.\nAnd tell the team.' })
    expect((await runPlan(vault, options)).status).toBe('completed')
    const { page, close } = await openBoard(browser, root)
    stops.push(close)
    await page.setViewportSize({ width: 420, height: 900 })
    await page.goto(new URL('/run?vault=feature-with-a-rather-long-name', page.url()).href)
    const why = await page.locator('table.hops tbody td:nth-child(6)').allInnerTexts()
    expect(why.map((text) => text.replace(/^Why\n/, ''))).toEqual([
      expect.stringMatching(/^check test passed \(exit 0, \d+ ms\)$|^check test passed \(exit 0, \d+\.\d s\)$/),
      'judge: approved YES · needs revision NO',
      'Ship it.\nAnd tell the team.',
      '',
    ])
    // The note holds it as a block quote (`> Ship it.`): the page shows the words, no quote mark.
    expect(await page.locator('table.hops q.feedback').innerText()).toBe('Ship it.\nAnd tell the team.')
    const widths = (await page.evaluate(
      `({ page: document.documentElement.scrollWidth, hops: document.querySelector('table.hops').getBoundingClientRect().right })`,
    )) as { page: number; hops: number }
    expect(widths.page).toBeLessThanOrEqual(420)
    expect(widths.hops).toBeLessThanOrEqual(420)
    await page.locator('table.hops').scrollIntoViewIfNeeded()
    await screenshot(page, 'phone', root, false)
    expect((await observeRun(vault)).phase).toBe('completed')
  })
})
