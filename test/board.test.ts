import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import * as boardModule from 'vaultplan/board'
import { blockStep, completeStep, decide, nextStep, observeRun, proposePlan, runPlan, type Step } from 'vaultplan'
import { startBoard, type Board } from 'vaultplan/board'
import { lineDiff } from '../src/board/line-diff.js'
import { safeHtml } from '../src/board/safe-html.js'
import { boardCli, cookieOf, copyOf, send, teamRoot } from './helpers/board.js'
import { noJudge } from './helpers/scripted.js'
import { note, tempDir, writeVault } from './helpers/vault.js'
import { clockPast } from './helpers/until.js'

describe('vaultplan/board', () => {
  test('exports startBoard and nothing else', () => {
    expect(Object.keys(boardModule).sort()).toEqual(['startBoard'])
  })

  test('listens on 127.0.0.1 unless told, and its URL carries the token', async () => {
    const board = await startBoard({ root: await teamRoot(), token: 'secret' })
    try {
      expect(board.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=secret$/)
      expect(board.origin).toBe(board.url.replace('/?token=secret', ''))
    } finally {
      await board.close()
    }
  })
})

describe('vaultplan board', () => {
  test("prints 'board: <url>' first, and the URL opens the runs page", async () => {
    const board = await boardCli(['--root', await teamRoot(), '--http', '127.0.0.1:0'])
    try {
      const url = board.url
      expect(url.href).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/\?token=[0-9a-f]{64}$/)
      const opened = await fetch(url, { redirect: 'manual' })
      const page = await fetch(new URL(opened.headers.get('location')!, url), { headers: { cookie: opened.headers.get('set-cookie')!.split(';')[0]! } })
      expect({ status: page.status, title: /<title>(.*)<\/title>/.exec(await page.text())?.[1] }).toEqual({ status: 200, title: 'Runs · vaultplan board' })
    } finally {
      board.stop()
    }
  })
})

describe("a long run's page", () => {
  test('shows every hop and the latest 50 outputs, with a link to all of them', async () => {
    const root = await tempDir('vaultplan-board-')
    const vault = join(root, 'long')
    await mkdir(vault)
    await writeFile(join(vault, 'draft.md'), '---\ntype: start\nmax_visits: 40\n---\n# Draft\n\n## Next\n- [[review]]\n')
    await writeFile(join(vault, 'review.md'), '---\nmax_visits: 40\n---\n# Review\n\n## Next\n- approved -> [[send]]\n- again -> [[draft]]\n')
    await writeFile(join(vault, 'send.md'), '# Send\n')
    await runPlan(vault, { query: 'Loop', fsync: false, maxSteps: 60, work: async (step) => `output of step ${step.step}`, llm: async () => '1: NO\n2: YES' })
    const board = await startBoard({ root, token: 'secret' })
    try {
      const shown = async (path: string) => {
        const { text } = await send(`${board.origin}${path}`, { headers: { cookie: cookieOf(board) } })
        const hops = text.slice(text.indexOf('<table class="hops">')).match(/<tr><td>/g)?.length
        const outputs = [...text.matchAll(/<article class="output" id="output-(\d+)"/g)].map((match) => Number(match[1]))
        return {
          hops,
          outputs: outputs.length,
          first: outputs[0],
          last: outputs.at(-1),
          all: text.includes('href="/run?vault=long&amp;outputs=all">Show all 60</a>'),
        }
      }
      expect(await shown('/run?vault=long')).toEqual({ hops: 60, outputs: 50, first: 11, last: 60, all: true })
      expect(await shown('/run?vault=long&outputs=all')).toEqual({ hops: 60, outputs: 60, first: 1, last: 60, all: false })
    } finally {
      await board.close()
    }
  })
})

describe('many hands on the board', () => {
  const base = { fsync: false, llm: noJudge() } as const
  const hostile = '<img src=x onerror=alert(1)>'
  /** start -> research, which runs `web` and `papers` at once -> report. */
  const branched = {
    'start.md': note({ front: { type: 'start' }, title: 'Start', body: 'Frame the survey.', next: ['[[research]]'] }),
    'research.md': note({ front: { plan: '[web, papers]' }, title: 'Research', body: 'Research both ways.', next: ['[[report]]'] }),
    'report.md': note({ title: 'Report', body: 'Write it up.' }),
    'web/search.md': note({ front: { type: 'start' }, title: 'Search', body: 'Search the web.' }),
    'papers/find.md': note({ front: { type: 'start' }, title: 'Find', body: 'Find papers.' }),
  }
  const keyOf = (step: Step) => {
    if (step.kind !== 'work') throw new Error(`expected work, got ${step.kind}`)
    return step.key
  }
  const get = async (board: Board, path: string) => (await send(`${board.origin}${path}`, { headers: { cookie: cookieOf(board) } })).text

  test("a run's frontier shows who holds each claim and until when, an expired lease as expired, and an agent's name as text", async () => {
    const root = await tempDir('vaultplan-board-')
    const vault = await writeVault(branched, join(root, 'survey'))
    const start = keyOf(await nextStep(vault, { ...base, query: 'Survey the field', agent: hostile }))
    keyOf(await completeStep(vault, start, { output: 'framed' }, { ...base, agent: hostile }))
    keyOf(await nextStep(vault, { ...base, agent: 'bob', leaseMs: 1 }))
    await clockPast((await observeRun(vault)).frontier.find((item) => item.claim?.agent === 'bob')!.claim!.until)
    const board = await startBoard({ root, token: 'secret' })
    try {
      const text = await get(board, '/run?vault=survey')
      const items = [...text.matchAll(/<li>(work <strong>.*?)<\/li>/g)].map((match) => match[1]!.replace(/<time datetime="([^"]*)">[^<]*<\/time>/g, '[$1]'))
      expect(items).toHaveLength(2)
      expect(items[0]).toMatch(
        /^work <strong>web\/search<\/strong> · visit 1 · step 2 · <span class="claim">claimed by <b class="agent">&#60;img src=x onerror=alert\(1\)&#62;<\/b> until \[\d{4}-[^\]]+\]<\/span>$/,
      )
      expect(items[1]).toMatch(
        /^work <strong>papers\/find<\/strong> · visit 1 · step 3 · <span class="claim expired">claimed by <b class="agent">bob<\/b>, lease expired \[[^\]]+\]: another agent may take it<\/span>$/,
      )
      expect(text).not.toContain('<img src=x')
    } finally {
      await board.close()
    }
  })

  test('a blocked step waits on a person: listed under "Needs you", its reason shown as text with since when, and unblocked through /decide as decide does', async () => {
    const root = await teamRoot()
    const vault = await writeVault(branched, join(root, 'survey'))
    const start = keyOf(await nextStep(vault, { ...base, query: 'Survey the field', agent: 'ada' }))
    await blockStep(vault, start, { reason: 'Which field? <script>alert(1)</script>' }, { ...base, agent: 'ada' })
    const expected = await copyOf(vault)
    await decide(expected, 'start', { edge: 'unblock', feedback: 'Solar power.' })
    const board = await startBoard({ root, token: 'secret' })
    try {
      const runs = await get(board, '/')
      expect(runs).toContain('Needs you <span class="count">2</span>')
      expect([...runs.matchAll(/<td>([^<]*)<\/td><\/tr>/g)].map((match) => match[1])).toEqual(['review', 'start (blocked)'])

      const text = await get(board, '/run?vault=survey')
      const from = text.indexOf('<form class="decision"')
      const form = text.slice(from, text.indexOf('</form>', from))
      expect(form.replace(/<time datetime="([^"]*)">[^<]*<\/time>/, '[time]')).toContain(
        '<h3>An agent blocked start</h3><p class="reason">Its reason: <q>Which field? &#60;script&#62;alert(1)&#60;/script&#62;</q></p><p class="since">Blocked since [time].</p>',
      )
      expect([...form.matchAll(/<button[^>]*>([^<]*)<\/button>/g)].map((match) => match[0])).toEqual([
        '<button type="submit" name="edge" value="unblock">unblock</button>',
      ])
      expect(text).not.toContain('<script>alert')

      const form$ = { 'content-type': 'application/x-www-form-urlencoded', origin: board.origin, cookie: cookieOf(board) }
      const body = 'vault=survey&node=start&edge=unblock&feedback=Solar+power.&back=run&visit=1'
      expect((await send(`${board.origin}/decide`, { method: 'POST', headers: { ...form$, origin: 'http://evil.example' }, body })).status).toBe(403)
      const made = await send(`${board.origin}/decide`, { method: 'POST', headers: form$, body })
      expect(made.status).toBe(303)
      expect(await readFile(join(vault, 'start.md'), 'utf8')).toBe(await readFile(join(expected, 'start.md'), 'utf8'))
      expect(await readFile(join(vault, 'start.md'), 'utf8')).toMatch(/status: pending[\s\S]*## Feedback\n+> Solar power\./)
      expect(await get(board, '/run?vault=survey')).not.toContain('<form class="decision"')
    } finally {
      await board.close()
    }
  })
})

describe('search over past runs', () => {
  test("a word of a run's output finds that run, its hit linking to the run's page, with the words as typed shown back as text", async () => {
    const root = await teamRoot('The tide pools at Point Lobos, counted by hand.')
    const board = await startBoard({ root, token: 'secret' })
    try {
      const { status, text } = await send(`${board.origin}/search?q=${encodeURIComponent('lobos <b>')}`, { headers: { cookie: cookieOf(board) } })
      expect(status).toBe(200)
      expect(text).toContain('href="/run?vault=release')
      expect(text).not.toContain('href="/run?vault=chores')
      expect(text).toContain('value="lobos &#60;b&#62;"')
    } finally {
      await board.close()
    }
  })
})

describe('what the board refuses', () => {
  const decision = 'vault=release&node=review&edge=approved&feedback=yes&visit=1'
  const form = { 'content-type': 'application/x-www-form-urlencoded' }

  test('a POST without the token, from a foreign Origin, without an Origin, or to a foreign Host changes nothing', async () => {
    const root = await teamRoot()
    const note = join(root, 'release', 'review.md')
    const before = await readFile(note, 'utf8')
    const board = await startBoard({ root, token: 'secret' })
    try {
      const cookie = cookieOf(board)
      const host = new URL(board.origin).host
      const refused = await Promise.all([
        send(`${board.origin}/decide`, { method: 'POST', headers: { ...form, origin: board.origin }, body: decision }),
        send(`${board.origin}/decide`, { method: 'POST', headers: { ...form, origin: board.origin, cookie: cookieOf(board, 'guess') }, body: decision }),
        send(`${board.origin}/decide`, { method: 'POST', headers: { ...form, origin: 'http://evil.example', cookie }, body: decision }),
        send(`${board.origin}/decide`, { method: 'POST', headers: { ...form, cookie }, body: decision }),
        send(`${board.origin}/decide`, {
          method: 'POST',
          headers: { ...form, host: `evil.example:${host.split(':')[1]}`, origin: board.origin, cookie },
          body: decision,
        }),
      ])
      expect(refused.map(({ status }) => status)).toEqual([401, 401, 403, 403, 403])
      expect(await readFile(note, 'utf8')).toBe(before)
      // The same request with the token, from the board's own origin, is the decision.
      const made = await send(`${board.origin}/decide`, { method: 'POST', headers: { ...form, origin: board.origin, cookie }, body: decision })
      expect(made.status).toBe(303)
      expect(await readFile(note, 'utf8')).not.toBe(before)
    } finally {
      await board.close()
    }
  })

  test('a GET without the token is refused, and the URL with it sets an HttpOnly, SameSite=Strict cookie', async () => {
    const board = await startBoard({ root: await teamRoot(), token: 'secret' })
    try {
      expect((await fetch(`${board.origin}/run?vault=release`)).status).toBe(401)
      const first = await fetch(board.url, { redirect: 'manual' })
      expect({ status: first.status, location: first.headers.get('location'), cookie: first.headers.get('set-cookie') }).toEqual({
        status: 303,
        location: '/',
        cookie: `${cookieOf(board)}; Path=/; HttpOnly; SameSite=Strict`,
      })
    } finally {
      await board.close()
    }
  })

  test('the proposal page of a vault with no proposal says so (404), and one outside the root is refused', async () => {
    const board = await startBoard({ root: await teamRoot(), token: 'secret' })
    try {
      const none = await send(`${board.origin}/proposal?vault=release`, { headers: { cookie: cookieOf(board) } })
      expect({ status: none.status, says: none.text.includes('`release` has no proposal') }).toEqual({ status: 404, says: true })
      expect((await send(`${board.origin}/proposal?vault=..%2Fx`, { headers: { cookie: cookieOf(board) } })).status).toBe(400)
    } finally {
      await board.close()
    }
  })

  test("an agent's proposal sent back: the page says the agent writes the next version, and asks nobody to decide", async () => {
    const root = await tempDir()
    const vault = await proposePlan('Write a post', { into: join(root, 'post'), document: '## draft\ntype: start\nWrite it.\n', fsync: false })
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Shorter.' })
    const board = await startBoard({ root, token: 'secret' })
    try {
      const page = await send(`${board.origin}/proposal?vault=post`, { headers: { cookie: cookieOf(board) } })
      expect(page.status).toBe(200)
      expect(page.text).toContain('the agent that proposed this version writes the next one from the feedback')
      expect(page.text).not.toContain('Needs you')
    } finally {
      await board.close()
    }
  })

  test('a vault outside the root is refused, through the check the MCP server uses', async () => {
    const board = await startBoard({ root: await teamRoot(), token: 'secret' })
    try {
      const outside = await send(`${board.origin}/run?vault=..%2F..%2Fetc`, { headers: { cookie: cookieOf(board) } })
      expect(outside.status).toBe(400)
      expect(outside.text).toContain('climbs out with `..`; the vault must stay inside the root')
    } finally {
      await board.close()
    }
  })
})

describe('safeHtml: text from models and notes, as HTML that shows and never runs', () => {
  test.each([
    ['**bold** and `code`', '<p><strong>bold</strong> and <code>code</code></p>'],
    ['<script>alert(1)</script>', '&#x3C;script>alert(1)&#x3C;/script>'],
    ['<img src="x" onerror="alert(1)">', '&#x3C;img src="x" onerror="alert(1)">'],
    ['[click](javascript:alert(1))', '<p><a>click</a></p>'],
    ['<div>\n\nblock\n\n</div>', '&#x3C;div>\n<p>block</p>\n&#x3C;/div>'],
  ])('%s', (markdown, html) => {
    expect(safeHtml(markdown)).toBe(html)
  })
})

describe('lineDiff: what changed between two versions of a note, as the proposal page shows it', () => {
  test('keeps the lines both have, in order, and marks the rest removed or added', () => {
    const short = (lines: ReturnType<typeof lineDiff>) => lines.map(({ kind, text }) => `${{ same: ' ', added: '+', removed: '-' }[kind]}${text}`)
    expect(
      short(
        lineDiff('# Draft\nWrite it.\nCheck facts.\n## Next\n- [[send]]\n', '# Draft\nOutline first.\nCheck facts.\nCut to 800 words.\n## Next\n- [[send]]\n'),
      ),
    ).toEqual([' # Draft', '-Write it.', '+Outline first.', ' Check facts.', '+Cut to 800 words.', ' ## Next', ' - [[send]]'])
    expect(short(lineDiff('', 'new\n'))).toEqual(['+new'])
    expect(short(lineDiff('gone\r\n', ''))).toEqual(['-gone'])
    expect(short(lineDiff('same\n', 'same'))).toEqual([' same'])
  })
})
