import { randomBytes } from 'node:crypto'
import { readFile, realpath } from 'node:fs/promises'
import type { HttpBindings } from '@hono/node-server'
import { Hono } from 'hono'
import { getCookie, setCookie } from 'hono/cookie'
import { allowedHosts, foreignHostOrOrigin, hostWithPort, isWildcard, originHost, sameSecret } from '../core/host-check.js'
import { searchRuns } from '../memory/search-runs.js'
import { RunStateError } from '../core/errors.js'
import { decide } from '../run/decide/decide.js'
import { PROPOSAL_NODE } from '../vault/proposal-note.js'
import { forkRun } from '../run/forks/fork.js'
import { assertFolder } from '../vault/fs-atomic.js'
import { confine, refuseInsideVault, vaultPath } from '../mcp/paths.js'
import { listen } from '../mcp/listen.js'
import { DEFAULT_GO_ON, planSvg, runDetail, runRows, type GoOn } from './board-data.js'
import { page, problemPage, proposalHref, runHref, runPage, runsPage, searchPage, type KeptDecision } from './board-pages.js'
import { proposalHistory } from './proposal-data.js'
import { proposalPage } from './proposal-page.js'
import { RootWatch } from './root-watch.js'
import { eventStreams } from './event-streams.js'

/** Options of `startBoard`. */
export interface BoardOptions {
  /** The folder whose vaults the board shows; nothing outside it is read or written. */
  root: string
  /**
   * The address to listen on. Anything but loopback lets other machines
   * reach the board (they still need the token).
   *
   * @default '127.0.0.1'
   */
  host?: string
  /**
   * The port; `0` picks a free one.
   *
   * @default 0
   */
  port?: number
  /**
   * The secret every request must carry (the URL's `?token=` sets the cookie `vaultplan_board_<port>`).
   *
   * @default 32 random bytes, hex
   */
  token?: string
  /**
   * How many open pages follow the files at once (each holds one stream of `/events`); one more gets 503 and
   * shows what was on disk when it loaded.
   *
   * @default 64
   */
  maxEventStreams?: number
  /**
   * How many bytes of change notices may wait for one page that does not read them; past it, its connection is
   * closed (a browser's page reads them as they come).
   *
   * @default 1048576 (1 MiB)
   */
  maxEventQueueBytes?: number
  /**
   * More `Host` values to accept (`name` or `name:port`; a name alone gets the bound port): the names a
   * browser reaches the board by when it listens on `0.0.0.0` (a teammate's laptop opens
   * `http://my-machine.lan:PORT`), or a proxy's. Bound to every address, the board's `url` and
   * `origin` name the first of them.
   */
  allowedHosts?: string[]
  /**
   * The command a run's page names for going on with the run once a person
   * decided, given the vault's path (`vaultplan board` names the CLI as it
   * was typed where the board started, the path from there, and the checks
   * the notes name).
   *
   * @default `vaultplan run <path>`
   */
  goOnCommand?: (vault: string) => string | Promise<string>
}

/** A running board. */
export interface Board {
  /** The board's address with its token: open it in a browser. */
  url: string
  /** The board's own origin (`http://127.0.0.1:PORT`): what a request that changes something must carry as `Origin`. */
  origin: string
  /** Stops the server, its watcher and every open page's stream. */
  close(): Promise<void>
}

const DEFAULTS = { host: '127.0.0.1', port: 0, maxEventStreams: 64, maxEventQueueBytes: 1_048_576 }
/**
 * The cookie that carries the token after the first visit, named after the
 * board's port: a browser keeps one cookie of a name per host whatever the
 * port, so two boards on one machine would each replace the other's.
 */
const cookieName = (port: number) => `vaultplan_board_${port}`
/** No inline script or style, nothing from elsewhere: text from a model can never run in the page. */
const CSP =
  "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; form-action 'self'; base-uri 'none'; frame-ancestors 'none'"
/** The page's script and styles, served from the package as they are: no build step. */
const ASSETS: Record<string, string> = { 'board.js': 'text/javascript; charset=utf-8', 'board.css': 'text/css; charset=utf-8' }
const ASSET_FOLDER = new URL('../../assets/', import.meta.url)

/**
 * Serves the board of the vaults under `options.root`: a web page for the
 * people around a plan. The runs (tabs by phase, those that wait on a
 * person first), each run (the plan drawn with statuses and visits, what
 * comes next and who claimed it, the hops with who decided and why, the
 * latest outputs rendered, the ledger), a waiting note's choices as buttons with a
 * feedback box (`decide`), a step an agent blocked with its reason and an
 * unblock button (`decide` with the edge `unblock`), a proposal's versions side by side with what
 * changed and its approve / revise / decline (a revision is written by the
 * vault's next run: the board calls no model), a fork
 * from any step (`forkRun`), and search over past runs (`searchRuns`).
 * A change on disk reaches open pages within a second through server-sent
 * events from one watch of the root (at most `maxEventStreams` pages at
 * once; one that falls `maxEventQueueBytes` behind is disconnected).
 *
 * Safe by default: it listens on 127.0.0.1; a request whose `Host` or
 * `Origin` is not the board's is refused (403); every request needs the
 * token (401 without it), and one that changes something must also carry
 * the board's own `Origin`; text from notes, models and outputs is shown,
 * never run (sanitized HTML, raw HTML as text, a Content-Security-Policy
 * without inline script); nothing outside the root is read or written.
 *
 * @returns the board's URL (with the token) and what stops it
 * @throws `VaultPathError` when `root` is not a folder
 * @throws `TypeError` when `port` is not an integer from 0 to 65535, or `maxEventStreams` or `maxEventQueueBytes` is not one from 1 up
 */
export async function startBoard(options: BoardOptions): Promise<Board> {
  const { host, port, maxEventStreams, maxEventQueueBytes } = { ...DEFAULTS, ...definedOf(options) }
  const token = options.token ?? randomBytes(32).toString('hex')
  if (!Number.isInteger(port) || port < 0 || port > 65535) throw new TypeError(`Expected \`port\` to be an integer from 0 to 65535, got \`${port}\``)
  if (token === '') throw new TypeError('Expected `token` to be a non-empty string, got ``')
  for (const [name, value] of Object.entries({ maxEventStreams, maxEventQueueBytes }))
    if (!Number.isSafeInteger(value) || value < 1) throw new TypeError(`Expected \`${name}\` to be an integer from 1 up, got \`${value}\``)
  await assertFolder(options.root, options.root)
  const root = await realpath(options.root)
  const goOn = options.goOnCommand ?? DEFAULT_GO_ON
  const watch = new RootWatch(root)
  let allowed = new Set<string>()
  let cookie = ''
  const app = new Hono<{ Bindings: HttpBindings }>()

  app.use(async (c, next) => {
    const foreign = foreignHostOrOrigin({ host: c.req.header('host'), origin: c.req.header('origin') }, allowed)
    if (foreign)
      return c.text(`Forbidden: ${foreign.message}${foreign.header === 'Host' ? '; start the board with --allowed-host to accept another name' : ''}`, 403)
    const given = c.req.query('token')
    if (given !== undefined && sameSecret(given, token)) {
      setCookie(c, cookie, token, { httpOnly: true, sameSite: 'Strict', path: '/' })
      const url = new URL(c.req.url)
      url.searchParams.delete('token')
      return c.redirect(`${url.pathname}${url.search}`, 303)
    }
    if (!sameSecret(getCookie(c, cookie), token)) return c.text('Unauthorized: open the address `vaultplan board` printed (it carries the token)', 401)
    // A request that changes something must come from the board's own page: same-site cookies alone do not say so.
    const origin = c.req.header('origin')
    if (c.req.method !== 'GET' && c.req.method !== 'HEAD' && (origin === undefined || !allowed.has(originHost(origin))))
      return c.text("Forbidden: a change must come from the board's own page (no Origin, or another one)", 403)
    await next()
    c.header('content-security-policy', CSP)
    c.header('x-content-type-options', 'nosniff')
    // Not no-referrer: under it Chromium sends `Origin: null` with a form's POST, and the board could not tell its own page.
    c.header('referrer-policy', 'same-origin')
  })

  app.get('/', async (c) => {
    const { rows, truncated } = await runRows(root)
    return c.html(page('Runs', runsPage(rows, c.req.query('tab') ?? '', truncated)))
  })
  app.get('/run', async (c) => {
    const name = c.req.query('vault') ?? ''
    const detail = await runDetail(root, name, c.req.query('outputs') === 'all' ? Number.POSITIVE_INFINITY : undefined, goOn)
    return c.html(page(detail.name, runPage(detail, Date.now()), detail.name))
  })
  app.get('/proposal', async (c) => {
    const name = c.req.query('vault') ?? ''
    const history = await proposalHistory(root, name)
    if (!history) return c.html(page('No proposal', problemPage(`\`${name}\` has no proposal: its plan was not proposed by a model.`, runHref(name))), 404)
    const from = versionNumber(c.req.query('from'))
    const to = versionNumber(c.req.query('to'))
    return c.html(page(`${history.name}: proposal`, proposalPage(history, from, to), history.name))
  })
  app.get('/plan.svg', async (c) => {
    const svg = await planSvg(root, c.req.query('vault') ?? '')
    return c.body(svg, 200, { 'content-type': 'image/svg+xml; charset=utf-8', 'cache-control': 'no-store' })
  })
  app.get('/search', async (c) => {
    const query = (c.req.query('q') ?? '').trim()
    const hits = query === '' ? [] : await searchRuns(root, query, { limit: 50 })
    return c.html(page('Search', searchPage(query, hits)))
  })
  app.get('/events', eventStreams(watch, { maxStreams: maxEventStreams, maxQueuedBytes: maxEventQueueBytes }))
  app.get('/assets/:file', async (c) => {
    const file = c.req.param('file')
    const type = Object.hasOwn(ASSETS, file) ? ASSETS[file] : undefined
    if (!type) return c.text('Not found', 404)
    return c.body(await readFile(new URL(file, ASSET_FOLDER), 'utf8'), 200, { 'content-type': type })
  })
  app.post('/decide', async (c) => {
    const form = await c.req.parseBody()
    const name = String(form.vault ?? '')
    const node = String(form.node ?? '')
    const typed = String(form.feedback ?? '')
    const feedback = typed.trim()
    const back = form.back === 'proposal' ? 'proposal' : 'run'
    try {
      await decide(await vaultPath(root, name), node, { edge: String(form.edge ?? ''), ...(feedback !== '' && { feedback }), ...madeOn(form, node) })
    } catch (error) {
      // Made on what moved on since: the page as it is now, saying so, with what was typed.
      if (!(error instanceof RunStateError && error.code === 'stale-decision')) throw error
      const { madeOn: was, current } = error.data
      const notice =
        node === PROPOSAL_NODE
          ? `Nothing was decided: you decided on version ${was} of the proposal, and it is at version ${current} now. Here it is; decide again.`
          : `Nothing was decided: you decided on visit ${was} of ${node}, and it waits at its visit ${current} now. Here it is; decide again.`
      return c.html(await decisionPage(root, name, back, { node, notice, feedback: typed }, goOn), 409)
    }
    return c.redirect(back === 'proposal' ? proposalHref(name) : runHref(name), 303)
  })
  app.post('/fork', async (c) => {
    const form = await c.req.parseBody()
    const name = String(form.vault ?? '')
    const into = String(form.into ?? '')
    const source = await vaultPath(root, name)
    const target = await confine(root, into, 'the new folder')
    await refuseInsideVault(root, target.path, into, 'exists')
    await forkRun(source, { step: Number(form.step), into: target.path })
    return c.redirect(runHref(into), 303)
  })
  app.notFound((c) => c.html(page('Not found', problemPage(`There is no page \`${c.req.path}\` on the board.`, '/')), 404))
  app.onError((error, c) => {
    const message = error instanceof Error ? error.message : String(error)
    c.header('content-security-policy', CSP)
    return c.html(page('Problem', problemPage(message, '/')), isCallerMistake(error) ? 400 : 500)
  })

  const server = await listen(app, host, port)
  const bound = server.port
  allowed = allowedHosts(host, bound, options.allowedHosts ?? [])
  cookie = cookieName(bound)
  // Bound to every address, the board is reached by a name it was given: its address is that one.
  const named = isWildcard(host) ? options.allowedHosts?.find((entry) => entry.trim() !== '') : undefined
  const origin = `http://${hostWithPort(named ?? host, bound)}`
  return {
    url: `${origin}/?token=${token}`,
    origin,
    close: async () => {
      watch.close()
      await server.close()
    },
  }
}

/**
 * What a decision posted says it was made on: the proposal's `version`, a
 * waiting note's `visit` (the board's forms carry it).
 *
 * @throws `TypeError` (400) for a form that names neither, or no number from 1 up
 */
function madeOn(form: Record<string, unknown>, node: string): { version: number } | { visit: number } {
  const key = node === PROPOSAL_NODE ? 'version' : 'visit'
  const value = Number(form[key])
  if (!(typeof form[key] === 'string' && Number.isInteger(value) && value >= 1))
    throw new TypeError(`The decision names no \`${key}\` it was made on: reload the page, then decide again`)
  return key === 'version' ? { version: value } : { visit: value }
}

/** The page a decision goes back to (the run's, or its proposal's), as it is now, with a refused decision said first. */
async function decisionPage(root: string, name: string, back: 'run' | 'proposal', kept: KeptDecision, goOn: GoOn): Promise<string> {
  const history = back === 'proposal' ? await proposalHistory(root, name) : undefined
  if (history) return page(`${history.name}: proposal`, proposalPage(history, undefined, undefined, kept), history.name)
  const detail = await runDetail(root, name, undefined, goOn)
  return page(detail.name, runPage(detail, Date.now(), kept), detail.name)
}

/** An error of the request (a refused path, a decision on a note that is not waiting, a bad step): 400, not the board's fault. */
function isCallerMistake(error: unknown): boolean {
  const name = (error as { name?: unknown } | undefined)?.name
  return name === 'PathRefusal' || name === 'RunStateError' || name === 'VaultPathError' || error instanceof TypeError
}

/** A version number from the address, `undefined` for none or nonsense (the page then compares the last two). */
function versionNumber(text: string | undefined): number | undefined {
  const number = Number(text)
  return text !== undefined && Number.isInteger(number) && number >= 1 ? number : undefined
}

/** `options` without its `undefined` values, so they take the defaults. */
function definedOf<T extends object>(options: T): Partial<T> {
  return Object.fromEntries(Object.entries(options).filter(([, value]) => value !== undefined)) as Partial<T>
}
