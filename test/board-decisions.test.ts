import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { decide, readProposal, runPlan } from 'vaultplan'
import { startBoard, type Board } from 'vaultplan/board'
import { cookieOf, proposalRoot, send, teamRoot, V2 } from './helpers/board.js'
import { noJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'

/*
 * A decision names what it was made on (the proposal's version, the
 * waiting note's visit), and the board refuses it when that moved on.
 */

const form = (board: Board) => ({ 'content-type': 'application/x-www-form-urlencoded', origin: board.origin, cookie: cookieOf(board) })
const page = async (board: Board, path: string) => (await send(`${board.origin}${path}`, { headers: { cookie: cookieOf(board) } })).text
/** The hidden field of the decision form that names what it was made on. */
const madeOn = (html: string) => /<input type="hidden" name="(version|visit)" value="(\d+)"/.exec(html)?.slice(1)

describe('a decision on the board names what it was made on', () => {
  test("a proposal's approval made on version 1 is refused once version 2 was written, showing version 2; made on version 2, it is taken", async () => {
    const root = await proposalRoot()
    const vault = join(root, 'post')
    const board = await startBoard({ root, token: 'secret' })
    try {
      expect(madeOn(await page(board, '/proposal?vault=post'))).toEqual(['version', '1'])
      expect(madeOn(await page(board, '/run?vault=post'))).toEqual(['version', '1'])
      // Meanwhile, someone sent version 1 back, and the next run had the planner write version 2.
      await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
      await runPlan(vault, { fsync: false, llm: scriptedJudge(() => V2) })
      const before = await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')
      const stale = await send(`${board.origin}/decide`, {
        method: 'POST',
        headers: form(board),
        body: 'vault=post&node=proposal&edge=approve&version=1&back=proposal&feedback=Looks+good.',
      })
      expect(stale.status).toBe(409)
      expect(stale.text).toContain(
        '<p class="notice" role="alert">Nothing was decided: you decided on version 1 of the proposal, and it is at version 2 now. Here it is; decide again.</p>',
      )
      expect(madeOn(stale.text)).toEqual(['version', '2'])
      // What was typed comes back in the feedback box, so nothing the reviewer wrote is lost.
      expect(stale.text).toContain('name="feedback" rows="3">Looks good.</textarea>')
      expect(await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')).toBe(before)

      const taken = await send(`${board.origin}/decide`, {
        method: 'POST',
        headers: form(board),
        body: 'vault=post&node=proposal&edge=approve&version=2&back=proposal',
      })
      expect(taken.status).toBe(303)
      await runPlan(vault, { fsync: false, work: scriptedWorker(), llm: scriptedJudge(() => 'next') })
      expect(await readProposal(vault)).toMatchObject({ version: 2, status: 'approved' })
    } finally {
      await board.close()
    }
  })

  test("a waiting note's choice made on its first visit is refused once it waits at its second, showing that one", async () => {
    const root = await teamRoot()
    const vault = join(root, 'release')
    const board = await startBoard({ root, token: 'secret' })
    try {
      expect(madeOn(await page(board, '/run?vault=release'))).toEqual(['visit', '1'])
      // Meanwhile, someone sent the draft back, and the next run drafted again: `review` waits at its visit 2.
      await decide(vault, 'review', { edge: 'needs revision' })
      await runPlan(vault, { fsync: false, llm: noJudge(), work: scriptedWorker() })
      const before = await readFile(join(vault, 'review.md'), 'utf8')
      const stale = await send(`${board.origin}/decide`, {
        method: 'POST',
        headers: form(board),
        body: 'vault=release&node=review&edge=approved&visit=1&back=run',
      })
      expect(stale.status).toBe(409)
      expect(stale.text).toContain(
        '<p class="notice" role="alert">Nothing was decided: you decided on visit 1 of review, and it waits at its visit 2 now. Here it is; decide again.</p>',
      )
      expect(madeOn(stale.text)).toEqual(['visit', '2'])
      expect(await readFile(join(vault, 'review.md'), 'utf8')).toBe(before)
      const taken = await send(`${board.origin}/decide`, {
        method: 'POST',
        headers: form(board),
        body: 'vault=release&node=review&edge=approved&visit=2&back=run',
      })
      expect(taken.status).toBe(303)
      expect(await readFile(join(vault, 'review.md'), 'utf8')).toContain('- [x] approved')
    } finally {
      await board.close()
    }
  })

  test('a decision that names nothing it was made on is refused (400), changing nothing', async () => {
    const root = await teamRoot()
    const note = join(root, 'release', 'review.md')
    const before = await readFile(note, 'utf8')
    const board = await startBoard({ root, token: 'secret' })
    try {
      const refused = await send(`${board.origin}/decide`, { method: 'POST', headers: form(board), body: 'vault=release&node=review&edge=approved&back=run' })
      expect(refused.status).toBe(400)
      expect(refused.text).toContain('names no `visit`')
      expect(await readFile(note, 'utf8')).toBe(before)
    } finally {
      await board.close()
    }
  })
})
