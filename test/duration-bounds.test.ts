import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, nextStep, observeRun, PlanValidationError, proposePlan, readRunStatus, runPlan } from 'vaultplan'
import { startBoard } from 'vaultplan/board'
import { cookieOf, send } from './helpers/board.js'
import { deadlinePlan as plan } from './helpers/plans.js'
import { noJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { note, tempDir, writeVault } from './helpers/vault.js'

/*
 * Every duration vaultplan takes is bounded where it is given, with the
 * largest allowed in the message, and no date reckoned from one throws at
 * run time: `wait: 999999999d` once passed validation, and the note that
 * waited then made runPlan, nextStep, observeRun and readRunStatus throw
 * `RangeError: Invalid time value`, and the board answer 500.
 */

const query = 'Announce the release'
const options = { query, fsync: false, llm: noJudge() } as const

describe('durations are bounded', () => {
  it('a `wait:` longer than a year is a plan error that says the longest allowed; a year is fine', async () => {
    const issues = (await loadPlan(await writeVault(plan('999999999d')))).check().issues
    expect(issues.map(({ code, severity, message }) => ({ code, severity, message }))).toEqual([
      {
        code: 'invalid-frontmatter',
        severity: 'error',
        message: '`wait` must be a duration such as `45s`, `30m`, `4h` or `2d`, at most `365d` (a year), got `"999999999d"`',
      },
    ])
    await expect(runPlan(await writeVault(plan('999999999d')), { ...options, work: scriptedWorker() })).rejects.toThrow(PlanValidationError)
    for (const wait of ['365d', '8760h', '525600m', '31536000s']) expect((await loadPlan(await writeVault(plan(wait)))).check().issues).toEqual([])
    expect((await loadPlan(await writeVault(plan('366d')))).check().errors).toHaveLength(1)
  })

  it('a proposal waits at most a year, and a lease lasts at most a year', async () => {
    const document = '## research\ntype: start\nFind sources.\n'
    await expect(
      proposePlan(query, { into: join(await tempDir(), 'post'), wait: '999999999d', llm: scriptedJudge(() => document), fsync: false }),
    ).rejects.toThrow('Expected `options.wait` to be a duration such as `45s`, `30m`, `4h` or `2d`, at most `365d` (a year), got `999999999d`')
    const dir = await writeVault(plan('1h'))
    await expect(nextStep(dir, { ...options, agent: 'ada', leaseMs: 1e15 })).rejects.toThrow(
      'Expected `leaseMs` to be milliseconds from 1 up to 31536000000 (a year), got `1000000000000000`',
    )
    // Refused before anything was written.
    await expect(readFile(join(dir, '00_plan-trace', 'trace.md'))).rejects.toThrow()
  })

  it('a wait whose deadline no date can hold (a trace edited by hand) has none: nothing throws, the board answers', async () => {
    const dir = await writeVault(plan('365d'))
    expect((await runPlan(dir, { ...options, work: scriptedWorker() })).status).toBe('waiting')
    const trace = join(dir, '00_plan-trace', 'trace.md')
    // The last day a Date holds: a year after it is none.
    await writeFile(trace, (await readFile(trace, 'utf8')).replace(/("kind":"waiting".*"at":")[^"]+/, '$1+275760-09-12T00:00:00.000Z'))
    const waiting = { kind: 'human', node: 'approve', file: 'approve.md', choices: ['approved', 'timeout'] }
    expect((await observeRun(dir)).waiting).toEqual([waiting])
    expect((await readRunStatus(dir)).waiting).toEqual([waiting])
    expect(await runPlan(dir, { ...options, work: scriptedWorker() })).toMatchObject({ status: 'waiting', waiting: [waiting] })
    expect(await nextStep(dir, options)).toMatchObject({ kind: 'waiting', waiting: [waiting] })
    const board = await startBoard({ root: join(dir, '..'), token: 'secret' })
    const get = async (path: string) => (await send(`${board.origin}${path}`, { headers: { cookie: cookieOf(board) } })).status
    try {
      expect(await get(`/run?vault=${encodeURIComponent(dir.split('/').at(-1)!)}`)).toBe(200)
      expect(await get(`/`)).toBe(200)
    } finally {
      await board.close()
    }
  })

  it('a timeout a timer cannot wait is refused where it is given', async () => {
    const dir = await writeVault({ 'a.md': note({ front: { type: 'start', check: 'test' }, title: 'A' }) })
    const checks = { test: { command: ['true'], timeoutMs: 2 ** 31 } }
    await expect(runPlan(dir, { ...options, checks, work: scriptedWorker() })).rejects.toThrow(
      'Expected `checks.test.timeoutMs` to be milliseconds from 1 up to 2147483647 (about 24.8 days, the longest a timer waits), got `2147483648`',
    )
    await expect(nextStep(dir, { ...options, checks })).rejects.toThrow('`checks.test.timeoutMs`')
  })
})
