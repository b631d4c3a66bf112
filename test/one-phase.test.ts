import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { decide, nextStep, proposePlan, readRunStatus, runPlan, StepError, type RunPhase } from 'vaultplan'
import { startBoard } from 'vaultplan/board'
import { vaultplan } from './helpers/cli.js'
import { stdioClient } from './helpers/mcp.js'
import { draftReview, humanReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { tempDir, writeVault } from './helpers/vault.js'

/*
 * One phase: the snapshot's words are the only words for where a run stands, and every surface
 * (`readRunStatus`, `vaultplan status --json`, MCP `plan_list` and `plan_status`, the board's runs
 * page) says the same one for the same vault, in each of the seven phases.
 */

const PLAN = '## draft\ntype: start\nWrite the draft.\n### Next\n- [[send]]\n\n## send\nSend it.\n'

/** A root with one vault in each phase, named after it. */
async function rootOfPhases(): Promise<string> {
  const root = await tempDir('vaultplan-phases-')
  const at = (name: string) => join(root, name)
  const worker = scriptedWorker()
  await writeVault(draftReview(), at('fresh'))
  // Ready: the worker threw at `review`, which stays active for the next call.
  await writeVault(draftReview(), at('ready'))
  const failing = scriptedWorker((step) => {
    if (step.node.id === 'review') throw new Error('the network is down')
  })
  await expect(runPlan(at('ready'), { query: 'q', work: failing, llm: reviewJudge(), fsync: false })).rejects.toThrow(StepError)
  await writeVault(humanReview(), at('waiting'))
  await runPlan(at('waiting'), { query: 'q', work: worker, llm: reviewJudge(), fsync: false })
  await writeVault(draftReview(), at('stopped'))
  await runPlan(at('stopped'), { query: 'q', work: worker, llm: reviewJudge(), fsync: false, maxSteps: 2 })
  await writeVault(draftReview(), at('completed'))
  await runPlan(at('completed'), { query: 'q', work: worker, llm: reviewJudge('review v1'), fsync: false })
  await proposePlan('q', { into: at('declined'), document: PLAN, fsync: false })
  await decide(at('declined'), 'proposal', { edge: 'decline' })
  await writeVault({ ...draftReview(), 'review.md': '# Review\n\n## Next\n- [[nowhere]]\n' }, at('invalid'))
  return root
}

const PHASES: RunPhase[] = ['fresh', 'ready', 'waiting', 'stopped', 'completed', 'declined', 'invalid']

describe('one phase word on every surface', () => {
  it('readRunStatus, vaultplan status --json, plan_list, plan_status and the board say the same phase, in each of the seven phases', async () => {
    const root = await rootOfPhases()
    const surfaces: Record<string, Record<string, string>> = { readRunStatus: {}, 'status --json': {}, plan_list: {}, plan_status: {}, board: {} }
    for (const phase of PHASES) {
      surfaces.readRunStatus![phase] = (await readRunStatus(join(root, phase))).phase
      const cli = await vaultplan(['status', phase, '--json'], { cwd: root })
      surfaces['status --json']![phase] = JSON.parse(cli.stdout).phase
    }
    const agent = await stdioClient(root)
    try {
      for (const row of (await agent.call('plan_list')).vaults) surfaces.plan_list![row.vault] = row.phase
      for (const phase of PHASES) surfaces.plan_status![phase] = (await agent.call('plan_status', { vault: phase })).phase
    } finally {
      await agent.close()
    }
    const board = await startBoard({ root })
    try {
      // The token's address sets the board's cookie; the runs page's "All" tab lists every vault with its phase.
      const opened = await fetch(board.url, { redirect: 'manual' })
      const cookie = opened.headers.get('set-cookie')!.split(';')[0]!
      const page = await (await fetch(`${board.origin}/?tab=all`, { headers: { cookie } })).text()
      for (const [, vault, phase] of page.matchAll(/<a href="\/run\?vault=([^"&]+)">[^<]*<\/a><\/td><td><span class="phase phase-[\w-]+">([\w-]+)<\/span>/g))
        surfaces.board![decodeURIComponent(vault!)] = phase!
    } finally {
      await board.close()
    }
    const expected = Object.fromEntries(PHASES.map((phase) => [phase, phase]))
    expect(surfaces).toEqual({ readRunStatus: expected, 'status --json': expected, plan_list: expected, plan_status: expected, board: expected })
  })

  it("a live runner or an agent's claim is shown beside the phase, not as another phase", async () => {
    const dir = await writeVault(draftReview())
    const step = await nextStep(dir, { query: 'q', agent: 'ada' })
    expect(step.kind).toBe('work')
    const status = await readRunStatus(dir)
    expect({ phase: status.phase, claims: status.claims.map((item) => [item.node, item.claim?.agent]) }).toEqual({ phase: 'ready', claims: [['draft', 'ada']] })
  })
})
