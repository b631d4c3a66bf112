import { spawn } from 'node:child_process'
import { readFileSync, statSync } from 'node:fs'
import { readFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runPlan } from 'vaultplan'
import { plantLock } from './helpers/locks.js'
import { until } from './helpers/until.js'
import { writeVault } from './helpers/vault.js'

// A runner alive on this machine keeps its vault, even while it is stopped (Ctrl-Z, SIGSTOP) or its event loop
// is blocked: only a dead holder's lock is taken over. The runner here stops itself at the worst moment, right
// after the lock's folder comes into being (however it is made); a second runner then tries for longer than the
// orphan time, after which a lock with no live holder would be taken over, and must be refused every time.

const plan = { 'a.md': '---\ntype: start\n---\n# Only step\n' }
/** The orphan time of this test: short, so that it passes within the test. */
const ORPHAN_MS = 1_500
const dist = new URL('../dist/index.js', import.meta.url).href

/** A runner in a process of its own (the built package) that SIGSTOPs itself the moment the vault's lock folder exists. */
const runner = `
  import fs from 'node:fs'
  import { syncBuiltinESMExports } from 'node:module'
  const vault = process.argv[1]
  const lock = vault + '/00_plan-trace/.lock'
  let stopped = false
  const stopAt = (path) => {
    if (stopped || String(path) !== lock) return
    stopped = true
    process.kill(process.pid, 'SIGSTOP')
  }
  const { mkdirSync, renameSync } = fs
  fs.mkdirSync = (path, ...rest) => { const made = mkdirSync(path, ...rest); stopAt(path); return made }
  fs.renameSync = (from, to, ...rest) => { renameSync(from, to, ...rest); stopAt(to) }
  syncBuiltinESMExports()
  const { runPlan } = await import(${JSON.stringify(dist)})
  const result = await runPlan(vault, { query: 'q', work: async () => 'worked by the stopped runner', fsync: false })
  console.log(JSON.stringify({ status: result.status, output: result.output }))`

/** Whether process `pid` is stopped (state `T` in /proc). */
function isStopped(pid: number): boolean {
  try {
    return /^\d+ \(.*\) T/.test(readFileSync(`/proc/${pid}/stat`, 'utf8'))
  } catch {
    return false
  }
}

/** Stops a runner right after it took the lock of `vault`, has a second runner try past the orphan time, then lets the first go on. */
async function stoppedRunnerKeepsItsVault(vault: string): Promise<void> {
  const child = spawn(process.execPath, ['--input-type=module', '-e', runner, vault], {
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, VAULTPLAN_LOCK_ORPHAN_MS: String(ORPHAN_MS) },
  })
  let printed = ''
  child.stdout!.on('data', (chunk: Buffer) => (printed += chunk.toString()))
  const exited = new Promise<number | null>((done) => child.on('exit', done))
  const lock = join(vault, '00_plan-trace/.lock')
  const before = process.env.VAULTPLAN_LOCK_ORPHAN_MS
  try {
    await until(() => isStopped(child.pid!), 'the runner to stop itself holding the lock', 30_000)
    // The lock as the stopped runner left it: nobody refreshes it from here on.
    const taken = statSync(lock).mtimeMs
    process.env.VAULTPLAN_LOCK_ORPHAN_MS = String(ORPHAN_MS)
    const refusals: number[] = []
    let worked = 0
    // Attempts until one began well past the orphan time (the lock unrefreshed for twice as long).
    for (;;) {
      const began = Date.now()
      const outcome = await runPlan(vault, {
        query: 'q',
        fsync: false,
        work: async () => {
          worked++
          return 'worked by the second runner'
        },
      }).catch((error: unknown) => error)
      expect(outcome).toMatchObject({ name: 'RunStateError', code: 'vault-locked', data: { holder: { pid: child.pid, host: hostname() } } })
      refusals.push(began - taken)
      if (began - taken > 2 * ORPHAN_MS) break
      await new Promise((resolve) => setTimeout(resolve, 100))
    }
    expect(worked).toBe(0)
    expect(Math.max(...refusals)).toBeGreaterThan(2 * ORPHAN_MS)
  } finally {
    if (before === undefined) delete process.env.VAULTPLAN_LOCK_ORPHAN_MS
    else process.env.VAULTPLAN_LOCK_ORPHAN_MS = before
    child.kill('SIGCONT')
  }
  // Woken, the runner goes on and finishes its run: its vault was kept for it.
  expect(await exited).toBe(0)
  expect(JSON.parse(printed)).toEqual({ status: 'completed', output: 'worked by the stopped runner' })
  const trace = await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8')
  expect(trace.match(/^## Step /gm)).toHaveLength(1)
}

describe.skipIf(process.platform !== 'linux')('a runner stopped right after it took the lock keeps its vault', () => {
  it('on a vault nobody held', async () => {
    await stoppedRunnerKeepsItsVault(await writeVault(plan))
  }, 60_000)

  it('on a vault whose lock it took over from a killed runner (that runner’s name still beside the lock)', async () => {
    const vault = await writeVault(plan)
    // A killed runner of an earlier version named itself beside its lock folder.
    await plantLock(vault, { pid: 999_999_999, host: hostname(), since: 'yesterday' }, { beside: true, ageMs: 60_000 })
    await stoppedRunnerKeepsItsVault(vault)
  }, 60_000)
})
