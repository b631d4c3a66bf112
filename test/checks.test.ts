import { existsSync, readFileSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { completeStep, nextStep, PlanValidationError, runPlan, StepError, type CheckDefinition } from 'vaultplan'
import { noJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { note, read, statuses, tempDir, traceEntries, writeVault } from './helpers/vault.js'

const query = 'Ship the fix'
const options = { query, fsync: false, llm: noJudge() } as const
const node = process.execPath

/** A check that runs node on a script: no shell, the same on every machine. */
function script(code: string, extra: Partial<CheckDefinition> = {}): CheckDefinition {
  return { command: [node, '-e', code], ...extra }
}

const passing = script("console.log('12 tests passed')")
const failing = script("console.error('1 test failed: adds'); process.exit(3)")

function plan(code: Record<string, unknown> = {}, next = ['passed -> [[ship]]', 'failed -> [[fix]]']): Record<string, string> {
  return {
    'code.md': note({ front: { type: 'start', check: 'test', ...code } as Record<string, string | number>, title: 'Write the code', next }),
    'fix.md': note({ title: 'Fix it' }),
    'ship.md': note({ title: 'Ship it' }),
  }
}

/** The JSON of the trace's hop records. */
async function hops(dir: string): Promise<Record<string, unknown>[]> {
  const text = await read(dir, '00_plan-trace/trace.md')
  return [...text.matchAll(/<!-- vaultplan:hop (.*) -->/g)]
    .map((match) => JSON.parse(match[1]!) as Record<string, unknown>)
    .filter((record) => record.kind === 'hop')
}

describe('check:', () => {
  it('a passing check takes the `passed` edge, decided by the check, no model called', async () => {
    const dir = await writeVault(plan())
    const result = await runPlan(dir, { ...options, work: scriptedWorker(), checks: { test: passing } })
    expect(result).toMatchObject({ status: 'completed', lastNode: 'ship', visits: { code: 1, ship: 1 } })
    const [first] = await hops(dir)
    expect(first).toMatchObject({ node: 'code', decidedBy: 'check', next: 'ship', checks: [{ name: 'test', exit: 0 }] })
    expect((await traceEntries(dir))[0]!.decidedBy).toBe('check')
  })

  it('a failing check takes the `failed` edge; its exit code and output reach the trace and the next worker', async () => {
    const dir = await writeVault(plan())
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work, checks: { test: failing } })
    expect(result).toMatchObject({ status: 'completed', lastNode: 'fix' })
    const [first] = await hops(dir)
    expect(first).toMatchObject({ decidedBy: 'check', next: 'fix', checks: [{ name: 'test', exit: 3 }] })
    const seen = work.calls[1]!.outputs.at(-1)!.output
    expect(seen).toContain('- `test`: failed (exit 3,')
    expect(seen).toContain('1 test failed: adds')
    expect(await read(dir, '00_plan-trace/trace.md')).toContain('- Checks: test: exit 3,')
  })

  it('a passing check with no `passed` edge leaves the other edges to the judge, who sees the check', async () => {
    const dir = await writeVault(plan({}, ['failed -> [[fix]]', 'looks good -> [[ship]]']))
    const llm = scriptedJudge(() => '1: YES')
    const result = await runPlan(dir, { ...options, llm, work: scriptedWorker(), checks: { test: passing } })
    expect(result).toMatchObject({ status: 'completed', lastNode: 'ship' })
    expect(llm.calls).toHaveLength(1)
    // Only the judge's own condition is asked; the check decided the rest.
    expect(llm.calls[0]!.prompt).toContain('1. looks good')
    expect(llm.calls[0]!.prompt).not.toContain('2. ')
    expect(llm.calls[0]!.prompt).toContain('12 tests passed')
  })

  it('with no `failed` edge, a failing check works the note again with the failure handed on, bounded by max_visits', async () => {
    const dir = await writeVault(plan({ max_visits: 2 }, ['passed -> [[ship]]']))
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work, checks: { test: failing } })
    expect(result).toMatchObject({ status: 'stopped', stop: { budget: 'max_visits', node: 'code', visit: 3 }, visits: { code: 2 } })
    expect(work.calls.map((call) => `${call.node} ${call.visit}`)).toEqual(['code 1', 'code 2'])
    expect(work.calls[1]!.outputs.at(-1)!.output).toContain('1 test failed: adds')
    expect((await hops(dir)).map((hop) => [hop.decidedBy, hop.next])).toEqual([
      ['check', 'code'],
      ['check', 'code'],
    ])
  })

  it('a vault naming a check the runner does not define is refused before anything runs', async () => {
    const sentinel = join(await tempDir(), 'sentinel')
    const dir = await writeVault(plan({ check: `touch ${sentinel}` }))
    const work = scriptedWorker()
    const error = await runPlan(dir, { ...options, work, checks: { test: script(`require('fs').writeFileSync(${JSON.stringify(sentinel)}, '')`) } }).catch(
      (caught: unknown) => caught,
    )
    expect(error).toBeInstanceOf(PlanValidationError)
    expect((error as PlanValidationError).issues.map((issue) => [issue.code, issue.node, issue.line])).toEqual([['unknown-check', 'code', 3]])
    expect(work.calls).toEqual([])
    expect(existsSync(sentinel)).toBe(false)
    expect(await statuses(dir)).toEqual({ code: 'pending', fix: 'pending', ship: 'pending' })
  })

  it('a check past its timeout is killed with its children, and fails', async () => {
    const pidFile = join(await tempDir(), 'child.pid')
    // The check starts a grandchild that would outlive it, then hangs.
    const hang = script(
      `const { spawn } = require('child_process'); const c = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });` +
        `require('fs').writeFileSync(${JSON.stringify(pidFile)}, String(c.pid)); setInterval(() => {}, 1000)`,
      { timeoutMs: 1500 },
    )
    const dir = await writeVault(plan())
    const result = await runPlan(dir, { ...options, work: scriptedWorker(), checks: { test: hang } })
    expect(result).toMatchObject({ status: 'completed', lastNode: 'fix' })
    expect((await hops(dir))[0]).toMatchObject({ decidedBy: 'check', checks: [{ name: 'test', exit: null, timedOut: true }] })
    const child = Number(await readFile(pidFile, 'utf8'))
    expect(alive(child)).toBe(false)
  })

  it('runs the command as an argument vector, never through a shell', async () => {
    const dir = await writeVault(plan())
    const echo = script('console.log(process.argv.slice(1).join("|")); process.exit(1)')
    echo.command.push('$HOME; exit 0', '*')
    const work = scriptedWorker()
    await runPlan(dir, { ...options, work, checks: { test: echo } })
    expect(work.calls[1]!.outputs.at(-1)!.output).toContain('$HOME; exit 0|*')
  })

  it('in stepping, `passed` and `failed` are not among the conditions, and completeStep runs the check', async () => {
    const dir = await writeVault(plan({}, ['passed -> [[ship]]', 'failed -> [[fix]]', 'needs review -> [[fix]]']))
    const checks = { test: failing }
    const step = await nextStep(dir, { query, fsync: false, checks, llm: noJudge() })
    expect(step).toMatchObject({ kind: 'work', conditions: ['needs review'] })
    if (step.kind !== 'work') return
    const next = await completeStep(dir, step.key, { output: 'done' }, { fsync: false, checks, llm: noJudge() })
    expect(next).toMatchObject({ kind: 'work', node: { id: 'fix' } })
  })
})

describe('retries:', () => {
  it('retries a worker that throws under the same key, then goes on', async () => {
    const dir = await writeVault(plan({ retries: 2 }, ['[[ship]]']))
    const work = scriptedWorker((step, call) => {
      if (step.node.id === 'code' && call < 1) throw new Error('flaky network')
    })
    const result = await runPlan(dir, { ...options, work, checks: { test: passing } })
    expect(result).toMatchObject({ status: 'completed', lastNode: 'ship', visits: { code: 1, ship: 1 } })
    expect(work.calls.slice(0, 2).map((call) => call.key)).toEqual([work.calls[0]!.key, work.calls[0]!.key])
  })

  it('after the last retry, takes the `failed` edge (decided by failure, the error in the trace)', async () => {
    const dir = await writeVault({
      'fetch.md': note({ front: { type: 'start', retries: 1 }, title: 'Fetch', next: ['failed -> [[report]]', '[[use]]'] }),
      'report.md': note({ title: 'Report' }),
      'use.md': note({ title: 'Use' }),
    })
    const work = scriptedWorker((step) => {
      if (step.node.id === 'fetch') throw new Error('503 from the server')
    })
    const result = await runPlan(dir, { ...options, work })
    expect(result).toMatchObject({ status: 'completed', lastNode: 'report', visits: { fetch: 1, report: 1 } })
    expect(work.calls.map((call) => call.node)).toEqual(['fetch', 'fetch', 'report'])
    expect((await hops(dir))[0]).toMatchObject({ decidedBy: 'failure', next: 'report', error: '503 from the server' })
    expect(work.calls[2]!.outputs[0]!.output).toBe('The worker failed (tried 2 times): 503 from the server')
  })

  it('after the last retry, with no `failed` edge, rejects with StepError and the note stays active', async () => {
    const dir = await writeVault({
      'fetch.md': note({ front: { type: 'start', retries: 1 }, title: 'Fetch', next: ['[[use]]'] }),
      'use.md': note({ title: 'Use' }),
    })
    const work = scriptedWorker(() => {
      throw new Error('503 from the server')
    })
    await expect(runPlan(dir, { ...options, work })).rejects.toBeInstanceOf(StepError)
    expect(work.calls).toHaveLength(2)
    expect(await statuses(dir)).toEqual({ fetch: 'active', use: 'pending' })
  })
})

/** Whether a process runs: a zombie (killed, not yet reaped by a container's init) does not. */
function alive(pid: number): boolean {
  if (existsSync('/proc')) {
    if (!existsSync(`/proc/${pid}/stat`)) return false
    return !/^\d+ \(.*\) Z/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  }
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
