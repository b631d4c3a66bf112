import { execFile } from 'node:child_process'
import { createServer } from 'node:http'
import type { AddressInfo } from 'node:net'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { Browser } from 'playwright-core'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { blockStep, decide, nextStep, observeRun, readProposal, runPlan, RunStateError } from 'vaultplan'
import { copyOf, launchChromium, LIVE_MS, openBoard, proposalRoot, screenshot, submit, teamRoot, V2 } from './helpers/board.js'
import { root as repo } from './helpers/cli.js'
import { noJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { note, tempDir, writeVault } from './helpers/vault.js'

let browser: Browser
beforeAll(async () => {
  browser = await launchChromium()
})
afterAll(async () => {
  await browser?.close()
})

describe('the board in Chromium', () => {
  test('the runs page lists every vault, the one that waits on a person under "Needs you"', async () => {
    const root = await teamRoot()
    const { page, close } = await openBoard(browser, root)
    try {
      expect(await page.locator('.tabs a[aria-current="page"]').innerText()).toBe('Needs you 1')
      expect(await page.locator('table.runs tbody tr td:first-child').allInnerTexts()).toEqual(['release'])
      await screenshot(page, 'runs', root)
      await page.getByRole('link', { name: /^All/ }).click()
      expect(await page.locator('table.runs tbody tr td:first-child').allInnerTexts()).toEqual(['release', 'chores', 'fresh'])
      expect(await page.locator('table.runs tbody tr td:nth-child(2)').allInnerTexts()).toEqual(['waiting', 'stopped', 'fresh'])
    } finally {
      await close()
    }
  })

  test("a run's page shows the plan drawn, the hops and the outputs rendered", async () => {
    const root = await teamRoot()
    const { page, close } = await openBoard(browser, root)
    try {
      await page.getByRole('link', { name: 'release' }).click()
      const plan = page.getByRole('img', { name: /The plan of release/ })
      // The first picture of a process loads Graphviz's WebAssembly: on a busy machine that alone passes the poll's default second.
      await expect.poll(() => plan.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), { timeout: 5_000 }).toBeGreaterThan(100)
      expect(await page.locator('table.hops tbody td:nth-child(2)').allInnerTexts()).toEqual(['draft'])
      expect(await page.locator('.output strong').first().innerText()).toBe('bold')
      await screenshot(page, 'run', root)
    } finally {
      await close()
    }
  })

  test('a choice clicked with feedback, by keyboard alone, ticks exactly that box and appends the feedback, as decide does', async () => {
    const root = await teamRoot()
    const vault = join(root, 'release')
    const expected = await copyOf(vault)
    await decide(expected, 'review', { edge: 'needs revision', feedback: 'Shorter, please.' })
    const { page, close } = await openBoard(browser, root)
    try {
      await page.goto(new URL('/run?vault=release', page.url()).href)
      expect((await observeRun(vault)).phase).toBe('waiting')
      await screenshot(page, 'decision', root)
      // The README's picture: what the first screen of a waiting run shows.
      await screenshot(page, 'glance', root, false)
      // Tab to the feedback box, type, tab to the second choice, press Enter: real buttons, with labels.
      for (let presses = 0; presses < 20 && (await page.locator('textarea:focus').count()) === 0; presses++) await page.keyboard.press('Tab')
      expect(await page.locator(':focus').getAttribute('name')).toBe('feedback')
      await page.keyboard.type('Shorter, please.')
      await page.keyboard.press('Tab')
      await page.keyboard.press('Tab')
      expect(await page.locator(':focus').innerText()).toBe('needs revision')
      await page.keyboard.press('Enter')
      await expect.poll(() => page.locator('.decision').count()).toBe(0)
      expect(await readFile(join(vault, 'review.md'), 'utf8')).toBe(await readFile(join(expected, 'review.md'), 'utf8'))
      expect((await observeRun(vault)).phase).toBe('ready')
    } finally {
      await close()
    }
  })

  test('a hop written by another process shows on the open page without a reload', async () => {
    const root = await teamRoot()
    const { page, close } = await openBoard(browser, root)
    try {
      await page.goto(new URL('/run?vault=chores', page.url()).href)
      await page.waitForSelector('body[data-live="true"]')
      await page.evaluate(() => Object.assign(globalThis, { loadedOnce: true }))
      expect(await page.locator('table.hops tbody td:nth-child(2)').allInnerTexts()).toEqual(['a'])
      await anotherProcessWorks(join(root, 'chores'), 2)
      const written = Date.now()
      await page.locator('table.hops tbody tr').nth(1).waitFor({ timeout: LIVE_MS })
      expect(Date.now() - written).toBeLessThan(1_000)
      expect(await page.locator('table.hops tbody td:nth-child(2)').allInnerTexts()).toEqual(['a', 'b'])
      expect(await page.evaluate(() => (globalThis as { loadedOnce?: boolean }).loadedOnce)).toBe(true)
    } finally {
      await close()
    }
  })

  test('a script in an output is shown as text and runs nothing', async () => {
    const hostile = 'Look: <script>window.pwned = 1</script> <img src="x" onerror="window.pwned = 2"> [link](javascript:window.pwned=3)'
    const root = await teamRoot(hostile)
    const { page, close } = await openBoard(browser, root)
    try {
      const response = await page.goto(new URL('/run?vault=release', page.url()).href)
      expect(response?.headers()['content-security-policy']).toContain("script-src 'self'")
      await page.locator('.output a').first().click()
      expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined()
      expect(await page.locator('.output').first().innerText()).toContain('<script>window.pwned = 1</script>')
      expect(await page.locator('.output img, .output script').count()).toBe(0)
    } finally {
      await close()
    }
  })

  test('a fork from a step, asked on the page, is a new vault holding the run up to that step', async () => {
    const root = await teamRoot()
    const { page, close } = await openBoard(browser, root)
    try {
      await page.goto(new URL('/run?vault=release', page.url()).href)
      await page.getByLabel('Fork from step').fill('1')
      await page.getByLabel('into the new folder').fill('release-again')
      await submit(page, page.getByRole('button', { name: 'Fork' }), /vault=release-again$/)
      const fork = await observeRun(join(root, 'release-again'))
      expect({ phase: fork.phase, steps: fork.steps, next: fork.frontier[0]?.node }).toEqual({ phase: 'ready', steps: 1, next: 'review' })
      expect(await page.locator('h1').innerText()).toContain('release-again')
    } finally {
      await close()
    }
  })
})

describe('agents on the board', () => {
  test("an agent's claim shows on the run's page; its block shows live with the reason, and unblock with feedback hands the step back as decide does", async () => {
    const agent = '<img src=x onerror="window.pwned = 1">'
    const root = await tempDir('vaultplan-board-')
    const vault = await writeVault(
      {
        'frame.md': note({ front: { type: 'start' }, title: 'Frame', body: 'Frame the survey.', next: ['[[report]]'] }),
        'report.md': note({ title: 'Report', body: 'Write it up.' }),
      },
      join(root, 'survey'),
    )
    const base = { fsync: false, llm: noJudge(), agent }
    const claimed = await nextStep(vault, { ...base, query: 'Survey the field' })
    if (claimed.kind !== 'work') throw new Error(`expected work, got ${claimed.kind}`)
    const { page, close } = await openBoard(browser, root)
    try {
      await page.goto(new URL('/run?vault=survey', page.url()).href)
      await page.waitForSelector('body[data-live="true"]')
      expect(await page.locator('.frontier li').allInnerTexts()).toEqual([
        expect.stringMatching(/^work frame · visit 1 · step 1 · claimed by <img src=x onerror="window.pwned = 1"> until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d UTC$/),
      ])

      // The agent hands the step to a person: the open page shows it without a reload.
      await blockStep(vault, claimed.key, { reason: 'Which field: <b>solar</b> or wind?' }, base)
      const blocked = (await observeRun(vault)).waiting[0]!
      await page.locator('.decision').waitFor({ timeout: LIVE_MS })
      expect(await page.locator('.decision h3').innerText()).toBe('An agent blocked frame')
      expect(await page.locator('.decision .reason').innerText()).toContain('Which field: <b>solar</b> or wind?')
      expect(await page.locator('.decision .since time').getAttribute('datetime')).toBe(blocked.since)
      expect(await page.locator('.decision').getByRole('button').allInnerTexts()).toEqual(['unblock'])
      expect(await page.locator('main img:not(.plan), main b:not(.agent)').count()).toBe(0)
      const plan = page.getByRole('img', { name: /The plan of survey/ })
      await expect.poll(() => plan.evaluate((img) => (img as unknown as { naturalWidth: number }).naturalWidth), { timeout: 5_000 }).toBeGreaterThan(100)
      await screenshot(page, 'blocked', root)

      const expected = await copyOf(vault)
      await decide(expected, 'frame', { edge: 'unblock', feedback: 'Solar, please.' })
      await page.getByLabel('Feedback (optional)').fill('Solar, please.')
      await submit(page, page.getByRole('button', { name: 'unblock' }), /\/run\?vault=survey$/)
      const unblocked = await readFile(join(vault, 'frame.md'), 'utf8')
      expect(unblocked).toBe(await readFile(join(expected, 'frame.md'), 'utf8'))
      expect(unblocked).toMatch(/status: pending[\s\S]*## Feedback\n+> Solar, please\./)
      expect(await page.locator('.decision').count()).toBe(0)
      expect(await page.locator('.frontier li').allInnerTexts()).toEqual(['work frame · visit 1 · step 1'])

      // The agent takes it again: the same visit, its claim shown live.
      await page.waitForSelector('body[data-live="true"]')
      const again = await nextStep(vault, base)
      expect(again.kind === 'work' && again.key).toBe(claimed.key)
      await page.locator('.frontier .claim').waitFor({ timeout: LIVE_MS })
      expect(await page.evaluate(() => (globalThis as { pwned?: number }).pwned)).toBeUndefined()
    } finally {
      await close()
    }
  })
})

describe('what the board refuses in a browser', () => {
  test('a form on another origin that posts a decision to the board is refused (403), though the browser sends the cookie, and changes nothing', async () => {
    const root = await teamRoot()
    const note = join(root, 'release', 'review.md')
    const before = await readFile(note, 'utf8')
    const { board, page, close } = await openBoard(browser, root)
    // Another site on this machine (another port: the same site to the browser, so the SameSite cookie goes along).
    const attack = `<!doctype html><form id="f" method="post" action="${board.origin}/decide">
<input name="vault" value="release"><input name="node" value="review"><input name="edge" value="approved"><input name="feedback" value="ok">
</form><script>document.getElementById('f').submit()</script>`
    const other = createServer((_request, response) => response.writeHead(200, { 'content-type': 'text/html' }).end(attack))
    await new Promise<void>((done) => other.listen(0, '127.0.0.1', done))
    const otherOrigin = `http://127.0.0.1:${(other.address() as AddressInfo).port}`
    try {
      const posted = page.waitForRequest((request) => request.url() === `${board.origin}/decide` && request.method() === 'POST')
      const answered = page.waitForResponse(`${board.origin}/decide`)
      await page.goto(`${otherOrigin}/`)
      const headers = await (await posted).allHeaders()
      expect({ origin: headers.origin, cookie: headers.cookie?.startsWith(`vaultplan_board_${new URL(board.origin).port}=`) }).toEqual({
        origin: otherOrigin,
        cookie: true,
      })
      const response = await answered
      expect({ status: response.status(), text: await response.text() }).toEqual({
        status: 403,
        text: `Forbidden: Origin \`${otherOrigin}\` is not this server's address (DNS rebinding protection)`,
      })
      expect(await readFile(note, 'utf8')).toBe(before)
      expect((await observeRun(join(root, 'release'))).phase).toBe('waiting')
    } finally {
      await close()
      await new Promise((done) => other.close(done))
    }
  })
})

describe('a proposal on the board', () => {
  test('approved on its page: exactly the approve box is ticked, and the next run marks it approved and runs its plan', async () => {
    const root = await proposalRoot()
    const vault = join(root, 'post')
    const expected = await copyOf(vault)
    await decide(expected, 'proposal', { edge: 'approve' })
    const { page, close } = await openBoard(browser, root)
    try {
      await page.goto(new URL('/run?vault=post', page.url()).href)
      await submit(page, page.getByRole('link', { name: 'Its versions side by side' }), /\/proposal\?vault=post$/)
      expect(await page.locator('.version h3').allInnerTexts()).toEqual(['Version 1 · pending'])
      await submit(page, page.getByRole('button', { name: 'approve' }), /\/proposal\?vault=post$/)
      expect(await page.locator('.decided').innerText()).toBe('approve is ticked: the next run of this vault runs this version.')
      expect(await page.getByRole('button', { name: 'approve' }).count()).toBe(0)
      expect(await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')).toBe(await readFile(join(expected, '00_plan-trace/proposal.md'), 'utf8'))
      const work = scriptedWorker()
      const result = await runPlan(vault, { fsync: false, llm: scriptedJudge(() => 'next'), work })
      expect({ status: result.status, worked: work.calls.map((call) => call.node) }).toEqual({ status: 'completed', worked: ['research', 'draft'] })
      expect(await readProposal(vault)).toEqual({ version: 1, status: 'approved' })
      // The run's page still leads to the versions of the plan it runs.
      await page.goto(new URL('/run?vault=post', page.url()).href)
      expect(await page.locator('p.proposal').innerText()).toBe('A model proposed this plan: version 1, approved. Its versions side by side')
    } finally {
      await close()
    }
  })

  test('revised with feedback on its page: the next run has the planner write version 2, shown beside version 1 with the difference', async () => {
    const root = await proposalRoot()
    const vault = join(root, 'post')
    const { page, close } = await openBoard(browser, root)
    try {
      await page.goto(new URL('/proposal?vault=post', page.url()).href)
      await page.waitForSelector('body[data-live="true"]')
      await page.getByLabel('Feedback (optional)').fill('Start with an outline.')
      await submit(page, page.getByRole('button', { name: 'revise' }), /\/proposal\?vault=post$/)
      expect(await page.locator('.decided').innerText()).toBe(
        'revise is ticked: the next run of this vault has the planner write the next version from the feedback.',
      )
      // The board calls no model: the next run does, here with a stand-in planner.
      const planner = scriptedJudge(() => V2)
      const result = await runPlan(vault, { fsync: false, llm: planner })
      expect(result.status).toBe('waiting')
      expect(planner.calls.map((call) => call.role)).toEqual(['planning'])
      expect(planner.calls[0]!.prompt).toContain('Start with an outline.')
      expect(await readProposal(vault)).toEqual({ version: 2, status: 'pending', parent: '00_plan-trace/proposals/v1/proposal.md' })
      // The open page follows without a reload.
      await page.locator('.version').nth(1).waitFor({ timeout: LIVE_MS })
      expect(await page.locator('.version h3').allInnerTexts()).toEqual(['Version 1 · revised', 'Version 2 · pending'])
      expect(await page.locator('ol.versions li').allInnerTexts()).toEqual(['v1 · revised · sent back with: Start with an outline.', 'v2 · pending'])
      expect(await page.locator('.differences h3').allInnerTexts()).toEqual(['outline.md new', 'draft.md changed', 'research.md removed'])
      expect(await page.locator('.diff-changed pre').innerText()).toContain('- Write the draft.\n+ Write the draft from the outline.')
      await screenshot(page, 'proposal', root)
    } finally {
      await close()
    }
  })

  test('declined on the run page: the proposal is declined for good, and no run works its plan', async () => {
    const root = await proposalRoot()
    const vault = join(root, 'post')
    const { page, close } = await openBoard(browser, root)
    try {
      await page.goto(new URL('/run?vault=post', page.url()).href)
      await submit(page, page.getByRole('button', { name: 'decline' }), /\/run\?vault=post$/)
      await expect.poll(() => page.locator('h1 .phase').innerText()).toBe('declined')
      expect(await page.locator('.decision').count()).toBe(0)
      const work = scriptedWorker()
      await expect(runPlan(vault, { fsync: false, work })).rejects.toSatisfy((error) => error instanceof RunStateError && error.code === 'declined')
      expect(work.calls).toEqual([])
      expect(await readProposal(vault)).toEqual({ version: 1, status: 'declined' })
      await page.goto(new URL('/proposal?vault=post', page.url()).href)
      expect(await page.locator('h1 .phase').innerText()).toBe('proposal v1 · declined')
      expect(await page.getByRole('button').allInnerTexts()).toEqual(['Search'])
    } finally {
      await close()
    }
  })
})

/** Works `steps` steps of the vault's run in a separate Node process, as a second runner would. */
function anotherProcessWorks(vault: string, maxSteps: number): Promise<void> {
  const script = `
    import { runPlan } from ${JSON.stringify(join(repo, 'src/index.ts'))}
    await runPlan(process.argv[1], { query: 'Do the chores', fsync: false, maxSteps: ${maxSteps}, work: async () => 'done', llm: async () => 'next' })
  `
  return new Promise((done, fail) => {
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script, vault], { cwd: repo }, (error) => (error ? fail(error) : done()))
  })
}
