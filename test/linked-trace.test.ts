import { cp, mkdir, rm, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { observeRun, readRunStatus, runPlan, RunStateError, searchRuns } from 'vaultplan'
import { startBoard } from 'vaultplan/board'
import { cookieOf, send } from './helpers/board.js'
import { linear } from './helpers/plans.js'
import { memoryClient } from './helpers/mcp.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { tempDir, writeVault } from './helpers/vault.js'

/*
 * A vault under a board's or an MCP server's root whose `00_plan-trace` is a
 * symlink to the run folder of a run elsewhere: `runPlan` refuses it
 * (`trace-outside-vault`), and so must every reader, or the other run's
 * query and outputs show through the root.
 */

const SECRET = 'zanzibar'

/**
 * A root holding `plain` (a run of its own) and `linked`, the same plan whose
 * `00_plan-trace` links to the run folder of a run outside the root (`where`:
 * `outside`), or of the vault `plain` inside it (`inside`).
 */
async function rootWithLinkedTrace(where: 'outside' | 'inside'): Promise<{ root: string; linked: string }> {
  const options = { fsync: false, llm: noJudge() }
  const elsewhere = await writeVault(linear(), join(await tempDir(), 'private'))
  // Stopped by its budget: no final note, only the trace and the outputs tell of it.
  await runPlan(elsewhere, { ...options, maxSteps: 2, query: `The ${SECRET} plan`, work: scriptedWorker(() => `the ${SECRET} figures`) })
  const root = await tempDir()
  const plain = await writeVault(linear(), join(root, 'plain'))
  await runPlan(plain, { ...options, query: 'An open plan', work: scriptedWorker(() => `the ${SECRET} figures, shared`) })
  const linked = await writeVault(linear(), join(root, 'linked'))
  await symlink(join(where === 'outside' ? elsewhere : plain, '00_plan-trace'), join(linked, '00_plan-trace'))
  return { root, linked }
}

/** What a call refused with: its code, or `undefined` when it went through. */
async function refusalOf(call: Promise<unknown>): Promise<string | undefined> {
  return call.then(
    () => undefined,
    (error: unknown) => (error instanceof RunStateError ? error.code : String(error)),
  )
}

/** The vaults whose runs a search for the secret finds. */
async function vaultsFound(root: string): Promise<string[]> {
  return [...new Set((await searchRuns(root, SECRET)).map((hit) => hit.vault))].sort()
}

describe('a vault whose 00_plan-trace links to another run', () => {
  test.each(['outside', 'inside'] as const)('(%s the root) is refused by observeRun and readRunStatus as runPlan refuses it', async (where) => {
    const { linked } = await rootWithLinkedTrace(where)
    expect(await refusalOf(runPlan(linked, { fsync: false, query: 'q', work: scriptedWorker(), llm: noJudge() }))).toBe('trace-outside-vault')
    expect(await refusalOf(observeRun(linked))).toBe('trace-outside-vault')
    expect(await refusalOf(readRunStatus(linked))).toBe('trace-outside-vault')
  })

  test('the search finds nothing of the run outside the root through it', async () => {
    const { root, linked } = await rootWithLinkedTrace('outside')
    expect(await vaultsFound(root)).toEqual(['plain'])
    // Also once the index knows the vault as a real run, and its run folder is swapped for a link.
    const real = join(await tempDir(), 'real')
    await cp(join(linked, '00_plan-trace'), real, { recursive: true, dereference: true })
    await rm(join(linked, '00_plan-trace'))
    await cp(real, join(linked, '00_plan-trace'), { recursive: true })
    expect(await vaultsFound(root)).toEqual(['linked', 'plain'])
    await rm(join(linked, '00_plan-trace'), { recursive: true })
    await symlink(real, join(linked, '00_plan-trace'))
    expect(await vaultsFound(root)).toEqual(['plain'])
  })

  test("the board shows none of it: the runs page, the run's page, the picture and the search", async () => {
    const { root } = await rootWithLinkedTrace('outside')
    const board = await startBoard({ root, token: 'secret' })
    const get = (path: string) => send(`${board.origin}${path}`, { headers: { cookie: cookieOf(board) } })
    try {
      const runs = await get(`/`)
      expect(runs.status).toBe(200)
      expect(runs.text).not.toContain(SECRET)
      const run = await get(`/run?vault=linked`)
      expect(run.status).toBe(400)
      expect(run.text).toContain('is a symlink')
      expect(run.text).not.toContain(SECRET)
      expect((await get(`/plan.svg?vault=linked`)).status).toBe(400)
      const search = await get(`/search?q=${SECRET}`)
      expect(search.text).not.toContain('vault=linked')
    } finally {
      await board.close()
    }
  })

  test('plan_status refuses it, and plan_list shows none of its run', async () => {
    const { root } = await rootWithLinkedTrace('outside')
    const agent = await memoryClient(root)
    const refused = await agent.refuse('plan_status', { vault: 'linked' })
    expect(refused).not.toContain(SECRET)
    expect(refused).toMatch(/symlink/)
    const listed = await agent.call('plan_list')
    expect(JSON.stringify(listed)).not.toContain(SECRET)
  })

  test('a subplan folder whose 00_plan-trace links out is refused as well', async () => {
    const root = await tempDir()
    const elsewhere = await writeVault(linear(), join(await tempDir(), 'private'))
    await runPlan(elsewhere, { fsync: false, llm: noJudge(), query: `The ${SECRET} plan`, work: scriptedWorker() })
    const vault = await writeVault(
      { 'start.md': '---\ntype: start\nplan: inner\n---\n# Start\n', 'inner/a.md': '---\ntype: start\n---\n# A\n' },
      join(root, 'nested'),
    )
    await runPlan(vault, { fsync: false, llm: noJudge(), query: 'Nest', work: scriptedWorker() })
    await rm(join(vault, 'inner', '00_plan-trace'), { recursive: true })
    await mkdir(join(vault, 'inner'), { recursive: true })
    await symlink(join(elsewhere, '00_plan-trace'), join(vault, 'inner', '00_plan-trace'))
    expect(await refusalOf(observeRun(vault))).toBe('trace-outside-vault')
  })
})
