import { spawn, type ChildProcess } from 'node:child_process'
import { cp, mkdir } from 'node:fs/promises'
import { request } from 'node:http'
import { join } from 'node:path'
import { chromium, type Browser, type Locator, type Page } from 'playwright-core'
import { proposePlan, runPlan } from 'vaultplan'
import { startBoard, type Board } from 'vaultplan/board'
import { chromiumPath } from '../setup/browser-notice.js'
import { humanReview, linear } from './plans.js'
import { noJudge, scriptedJudge, scriptedWorker } from './scripted.js'
import { tempDir, writeVault } from './vault.js'
import { bin, root } from './cli.js'

/** How long a test waits for an open page to follow a change on disk without a reload: a bound for a stuck page on a loaded machine (how fast it follows is the board bench's to measure, not a test's). */
export const LIVE_MS = 15_000

// Each page's picture for docs/board.md: written there with VAULTPLAN_SCREENSHOTS=docs, else beside the test's vaults.
const shots = process.env.VAULTPLAN_SCREENSHOTS === 'docs' ? join(root, 'docs') : undefined

/** A picture of the page as `board-<name>.png`: into docs/ with `VAULTPLAN_SCREENSHOTS=docs`, else beside the test's vaults under `root`. */
export async function screenshot(page: Page, name: string, vaults: string, fullPage = true): Promise<void> {
  const folder = shots ?? join(vaults, 'screenshots')
  await mkdir(folder, { recursive: true })
  await page.screenshot({ path: join(folder, `board-${name}.png`), fullPage })
}

/**
 * Clicks what submits a form and waits for the page it leads to, stylesheets
 * and all, then checks it is `url`. Not `waitForURL`: the board answers a form
 * with the page it was on, so the old URL already matches and the new page
 * would be read half-loaded (a `q` without its `white-space` rule).
 */
export async function submit(page: Page, button: Locator, url: RegExp): Promise<void> {
  await Promise.all([page.waitForEvent('load'), button.click()])
  if (!url.test(page.url())) throw new Error(`Expected the form to lead to ${url}, got ${page.url()}`)
}

/** Chromium from Debian's package, headless; `--no-sandbox` because CI runs as root. Never a downloaded browser. */
export function launchChromium(): Promise<Browser> {
  return chromium.launch({ executablePath: chromiumPath(), headless: true, args: ['--no-sandbox'] })
}

/**
 * A root of three vaults, as a team has them: `release` waits for a person
 * at `review` (its outputs hold what `output` gives), `chores` stopped after
 * one step, `fresh` never ran. In `into` when given, else a new temporary folder.
 */
export async function teamRoot(output = 'A draft with **bold** words.', into?: string): Promise<string> {
  const root = into ?? (await tempDir('vaultplan-board-'))
  const release = await writeVault(humanReview(), join(root, 'release'))
  await runPlan(release, { query: 'Announce the release', fsync: false, llm: noJudge(), work: scriptedWorker(() => output) })
  const chores = await writeVault(linear(), join(root, 'chores'))
  await runPlan(chores, { query: 'Do the chores', fsync: false, llm: noJudge(), work: scriptedWorker(), maxSteps: 1 })
  await writeVault(linear(), join(root, 'fresh'))
  return root
}

/** The plan a stand-in planner proposes first for the post: research, then draft. */
export const V1 = '## research\ntype: start\nFind three sources on tide pools.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft.\n'
/** The plan it writes when sent back: an outline first. */
export const V2 = '## outline\ntype: start\nOutline the post first.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft from the outline.\n'

/** A root holding one vault, `post`, whose plan a (stand-in) model proposed and which waits for a person's approval. */
export async function proposalRoot(): Promise<string> {
  const root = await tempDir('vaultplan-board-')
  await proposePlan('Write a post about tide pools', { into: join(root, 'post'), llm: scriptedJudge(() => V1), fsync: false })
  return root
}

/** A copy of a vault beside it, to compare what the board did with what the library does. */
export async function copyOf(vault: string): Promise<string> {
  const copy = await tempDir('vaultplan-board-copy-')
  await mkdir(copy, { recursive: true })
  await cp(vault, copy, { recursive: true })
  return copy
}

/** A board on `root` and a browser page that opened its URL (so it holds the token's cookie). */
export async function openBoard(browser: Browser, root: string): Promise<{ board: Board; page: Page; close(): Promise<void> }> {
  const board = await startBoard({ root })
  const context = await browser.newContext({ viewport: { width: 1200, height: 900 } })
  const page = await context.newPage()
  await page.goto(board.url)
  return {
    board,
    page,
    close: async () => {
      await context.close()
      await board.close()
    },
  }
}

/** The cookie a board's token travels in, as a request header: `vaultplan_board_<port>=<token>`. */
export function cookieOf(board: Board, token = 'secret'): string {
  return `vaultplan_board_${new URL(board.origin).port}=${token}`
}

/** A raw HTTP request, so that `Host` can be anything (fetch sets it from the URL). */
export function send(
  url: string,
  options: { method?: string; headers?: Record<string, string>; body?: string } = {},
): Promise<{ status: number; text: string }> {
  return new Promise((done, fail) => {
    const call = request(url, { method: options.method ?? 'GET', headers: options.headers ?? {} }, (response) => {
      let text = ''
      response.setEncoding('utf8')
      response.on('data', (chunk: string) => (text += chunk))
      response.on('end', () => done({ status: response.statusCode ?? 0, text }))
    })
    call.on('error', fail)
    call.end(options.body)
  })
}

/**
 * `vaultplan board <args>` in a child process (the built CLI, or `options.script` that runs it, from `options.cwd`), once it printed its first line
 * `board: <url>`: that URL, what it wrote to stderr by then, and a way to stop it.
 */
export async function boardCli(
  args: string[],
  options: { cwd?: string; script?: string } = {},
): Promise<{ url: URL; stderr: () => string; child: ChildProcess; stop(): void }> {
  const child = spawn(process.execPath, [options.script ?? bin, 'board', ...args], { stdio: ['ignore', 'pipe', 'pipe'], cwd: options.cwd })
  let stderr = ''
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk: string) => (stderr += chunk))
  const first = await new Promise<string>((done, fail) => {
    let text = ''
    child.stdout.setEncoding('utf8')
    child.stdout.on('data', (chunk: string) => {
      text += chunk
      if (text.includes('\n')) done(text.slice(0, text.indexOf('\n')))
    })
    child.once('exit', (code) => fail(new Error(`vaultplan board exited (${code}) before printing its address: ${stderr}`)))
  })
  if (!first.startsWith('board: ')) throw new Error(`vaultplan board printed ${first}`)
  return { url: new URL(first.slice('board: '.length)), stderr: () => stderr, child, stop: () => child.kill('SIGTERM') }
}
