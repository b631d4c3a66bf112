import { spawn, type ChildProcess } from 'node:child_process'
import { mkdir, readdir, readFile, rename, writeFile } from 'node:fs/promises'
import { hostname } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { RunStateError, runPlan } from 'vaultplan'
import { lockVault } from '../src/vault/lock.js'
import { plantLock } from './helpers/locks.js'
import { until } from './helpers/until.js'
import { persistedStatuses, writeVault } from './helpers/vault.js'

const plan = { 'a.md': '---\ntype: start\n---\n# Only step\n' }
const work = async () => 'done'

describe('one runner per vault', () => {
  it('takes over a lock whose runner was killed before it wrote its name, once nobody refreshed it for the orphan time', async () => {
    const vault = await writeVault(plan)
    await mkdir(join(vault, '00_plan-trace/.lock'), { recursive: true })
    const started = Date.now()
    const lock = await lockVault(vault, { orphanMs: 1_100 })
    // Not before the orphan time: a runner that has just taken the lock may not have named itself yet.
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000)
    await lock.release()
    expect(await runPlan(vault, { query: 'q', work, fsync: false })).toMatchObject({ status: 'completed' })
  })

  it('refuses an orphan time that the refresh could not beat, naming the value', async () => {
    const vault = await writeVault(plan)
    await expect(lockVault(vault, { orphanMs: 500 })).rejects.toThrow(/over 1000, the refresh interval, got `500`/)
  })

  it('takes over a lock from another machine that nobody has refreshed for over 10 s', async () => {
    const vault = await writeVault(plan)
    await plantLock(vault, { pid: 999_999_999, host: 'elsewhere', since: 'yesterday' }, { ageMs: 60_000 })
    await expect(runPlan(vault, { query: 'q', work, fsync: false })).resolves.toMatchObject({ status: 'completed' })
  })
})

describe('takeovers: only of a holder that is gone, by one runner only', () => {
  it('two runners started together on an abandoned lock: exactly one takes it, the other is refused naming the vault', async () => {
    const vault = await writeVault(plan)
    await plantLock(vault, { pid: 999_999_999, host: hostname(), since: 'yesterday' }, { ageMs: 60_000 })
    let refusals = 0
    // The runner that took the lock holds it, working, until the other was refused.
    const slow = async () => {
      await until(() => refusals > 0, 'the other runner to be refused')
      return 'done'
    }
    const run = () =>
      runPlan(vault, { query: 'q', work: slow, fsync: false }).catch((error: unknown) => {
        refusals += 1
        throw error
      })
    const outcomes = await Promise.allSettled([run(), run()])
    expect(outcomes.map((outcome) => outcome.status).sort()).toEqual(['fulfilled', 'rejected'])
    const refused = outcomes.find((outcome) => outcome.status === 'rejected') as PromiseRejectedResult
    expect(refused.reason).toBeInstanceOf(RunStateError)
    expect(refused.reason).toMatchObject({ code: 'vault-locked' })
    // The hop was worked and recorded once.
    const trace = await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8')
    expect(trace.match(/^## Step /gm)).toHaveLength(1)
  })

  it('a live holder on this machine keeps its lock however old its refresh (a paused runner), and is named, in either layout', async () => {
    // A process that lives (our parent), as a runner paused by SIGSTOP would; named inside its lock, or beside it as an earlier version did.
    for (const beside of [false, true]) {
      const vault = await writeVault(plan)
      await plantLock(vault, { pid: process.ppid, host: hostname(), since: 'an hour ago' }, { beside, ageMs: 60_000 })
      await expect(runPlan(vault, { query: 'q', work, fsync: false })).rejects.toMatchObject({
        name: 'RunStateError',
        code: 'vault-locked',
        message: expect.stringContaining(`process ${process.ppid}`),
      })
    }
  })

  it('a runner whose lock was taken over stops before its next write', async () => {
    const vault = await writeVault({ 'a.md': '---\ntype: start\n---\n# A\n\n## Next\n- [[b]]\n', 'b.md': '# B\n' })
    const holder = join(vault, '00_plan-trace/.lock/holder.json')
    const stolen = async () => {
      // What a takeover from another machine leaves: another holder's name.
      await writeFile(holder, `${JSON.stringify({ pid: 1, host: 'elsewhere', since: 'now' })}\n`)
      return 'done'
    }
    await expect(runPlan(vault, { query: 'q', work: stolen, fsync: false })).rejects.toMatchObject({ name: 'RunStateError', code: 'vault-lock-lost' })
    const trace = await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8')
    expect(trace).not.toMatch(/^## Step /m)
    // Nor the work's output, nor the note's `done`: what the run wrote after the work is the new holder's to write.
    expect(await readdir(join(vault, '00_plan-trace/outputs'))).toEqual([])
    // The claim it persisted before the work stands (in the run's journal, for the new holder to write into the note).
    expect((await persistedStatuses(vault)).a).toBe('active')
    // Letting go, it leaves the new holder's name in place (removing it would stop the new holder's run).
    expect(JSON.parse(await readFile(holder, 'utf8'))).toMatchObject({ host: 'elsewhere' })
  })

  it('a runner whose lock was taken over while its judge decided records no hop', async () => {
    const vault = await writeVault({ 'a.md': '---\ntype: start\n---\n# A\n\n## Next\n- approved -> [[b]]\n- [[c]]\n', 'b.md': '# B\n', 'c.md': '# C\n' })
    const holder = join(vault, '00_plan-trace/.lock/holder.json')
    const judge = async () => {
      await writeFile(holder, `${JSON.stringify({ pid: 1, host: 'elsewhere', since: 'now' })}\n`)
      return 'YES'
    }
    await expect(runPlan(vault, { query: 'q', work, llm: judge, fsync: false })).rejects.toMatchObject({ name: 'RunStateError', code: 'vault-lock-lost' })
    expect(await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8')).not.toMatch(/^## Step /m)
  })

  it('a takeover whose holder file has the same size as ours is still found (a new file renamed into place)', async () => {
    const vault = await writeVault({ 'a.md': '---\ntype: start\n---\n# A\n\n## Next\n- [[b]]\n', 'b.md': '# B\n' })
    const holder = join(vault, '00_plan-trace/.lock/holder.json')
    const stolen = async () => {
      const ours = await readFile(holder, 'utf8')
      // Another runner's holder, byte for byte as long as ours: only the file's identity tells them apart.
      const theirs = ours.replace(/"pid":\d+/, (pid) => pid.replace(/\d/g, '7'))
      expect(theirs).not.toBe(ours)
      expect(theirs.length).toBe(ours.length)
      await writeFile(`${holder}.new`, theirs)
      await rename(`${holder}.new`, holder)
      return 'done'
    }
    await expect(runPlan(vault, { query: 'q', work: stolen, fsync: false })).rejects.toMatchObject({ name: 'RunStateError', code: 'vault-lock-lost' })
    expect(await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8')).not.toMatch(/^## Step /m)
  })

  it('a file named 00_plan-trace is named as the problem, never a raw EEXIST', async () => {
    const vault = await writeVault({ ...plan, '00_plan-trace': 'not a folder' })
    await expect(runPlan(vault, { query: 'q', work, fsync: false })).rejects.toMatchObject({ name: 'RunStateError', code: 'trace-not-folder' })
    expect(await readFile(join(vault, '00_plan-trace'), 'utf8')).toBe('not a folder')
  })
})

describe('a runner on a vault and a runner on one of its folders exclude each other', () => {
  const nested = {
    'a.md': '---\ntype: start\n---\n# A\n\n## Next\n- [[sub/b]]\n',
    'sub/b.md': '# B\n\n## Next\n- [[sub/c]]\n',
    'sub/c.md': '# C\n',
  }

  /** A lock held by a live process that is not this one: what a runner in another process leaves while it runs. */
  async function heldByAnotherProcess(vault: string): Promise<ChildProcess> {
    const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' })
    await plantLock(vault, { pid: other.pid!, host: hostname(), since: 'a minute ago' })
    return other
  }

  it('the vault is being run: a run of its subfolder is refused, naming the vault and its holder, and writes nothing', async () => {
    const top = await writeVault(nested)
    const other = await heldByAnotherProcess(top)
    try {
      const error = await runPlan(join(top, 'sub'), { query: 'q', work, fsync: false }).catch((caught: unknown) => caught)
      expect(error).toMatchObject({ name: 'RunStateError', code: 'vault-locked', message: expect.stringContaining(`is inside \`${top}\``) })
      expect((error as Error).message).toContain(`process ${other.pid} on ${hostname()}`)
      expect(await readFile(join(top, 'sub/b.md'), 'utf8')).toBe(nested['sub/b.md'])
    } finally {
      other.kill()
    }
  })

  it('a subfolder is being run: a run of the vault is refused, and writes nothing', async () => {
    const top = await writeVault(nested)
    const other = await heldByAnotherProcess(join(top, 'sub'))
    try {
      await expect(runPlan(top, { query: 'q', work, fsync: false })).rejects.toMatchObject({
        name: 'RunStateError',
        code: 'vault-locked',
        message: expect.stringContaining(`holds \`${join(top, 'sub')}\``),
      })
      expect(await readFile(join(top, 'a.md'), 'utf8')).toBe(nested['a.md'])
    } finally {
      other.kill()
    }
  })

  it('a lock left in a subfolder by a process that is gone does not stand in the way', async () => {
    const top = await writeVault(nested)
    const other = await heldByAnotherProcess(join(top, 'sub'))
    other.kill()
    await new Promise((resolve) => other.once('exit', resolve))
    await expect(runPlan(top, { query: 'q', work, fsync: false })).resolves.toMatchObject({ status: 'completed' })
  })
})

describe('what a finished run leaves in 00_plan-trace', () => {
  const twoSteps = {
    'a.md': '---\ntype: start\n---\n# First\n\n## Next\n- [[b]]\n',
    'b.md': '# Second\n',
  }

  /** Runs `vault` in a process of its own (the built package) and kills it with SIGKILL once it works `node`. */
  async function killedWhileWorking(vault: string, node: string): Promise<void> {
    const script = `
      const { runPlan } = await import(${JSON.stringify(new URL('../dist/index.js', import.meta.url).href)})
      await runPlan(process.argv[1], { query: 'q', work: async (step) => {
        if (step.node.id === ${JSON.stringify(node)}) { console.log('working'); await new Promise(() => setInterval(() => {}, 1000)) }
        return 'done'
      } })`
    const child = spawn(process.execPath, ['--input-type=module', '-e', script, vault], { stdio: ['ignore', 'pipe', 'inherit'] })
    await new Promise<void>((done) => child.stdout!.on('data', (chunk: Buffer) => chunk.toString().includes('working') && done()))
    const exited = new Promise((done) => child.on('exit', done))
    child.kill('SIGKILL')
    await exited
  }

  it('after `kill -9` of a run and a run that completes it: no lock, no holder naming the dead process, no journal', async () => {
    const vault = await writeVault(twoSteps)
    // Killed while it works `b`: its lock, holder and journal stay behind.
    await killedWhileWorking(vault, 'b')
    expect((await readdir(join(vault, '00_plan-trace'))).filter((name) => !name.startsWith('.vaultplan-tmp-')).sort()).toEqual([
      '.journal',
      '.lock',
      'outputs',
      'trace.md',
    ])
    // The lock folder holds the name of the runner that made it.
    expect(await readdir(join(vault, '00_plan-trace/.lock'))).toEqual(['holder.json'])

    expect(await runPlan(vault, { work })).toMatchObject({ status: 'completed', steps: 2 })
    expect((await readdir(join(vault, '00_plan-trace'))).sort()).toEqual(['final.md', 'outputs', 'trace.md'])
  }, 20_000)

  it('a run killed after its subplan: the subplan folder’s lock and holder of the dead process are gone once the run completes', async () => {
    const vault = await writeVault({
      'a.md': '---\ntype: start\nplan: research\n---\n# Research\n\n## Next\n- [[c]]\n',
      'c.md': '# Report\n',
      'research/x.md': '---\ntype: start\n---\n# Find\n\n## Next\n- [[y]]\n',
      'research/y.md': '# Summarise\n',
    })
    // Killed while it works `c`, with the subplan `research/` done but its lock still held.
    await killedWhileWorking(vault, 'c')
    expect((await readdir(join(vault, 'research/00_plan-trace'))).filter((name) => name.startsWith('.lock')).sort()).toEqual(['.lock'])

    // The resumed run goes on at `c`: it never enters `research/` again.
    expect(await runPlan(vault, { work })).toMatchObject({ status: 'completed', steps: 3 })
    expect((await readdir(join(vault, 'research/00_plan-trace'))).sort()).toEqual(['final.md', 'outputs', 'trace.md'])
    expect((await readdir(join(vault, '00_plan-trace'))).sort()).toEqual(['final.md', 'outputs', 'trace.md'])
  }, 20_000)

  it('a lock folder a killed runner was making (not renamed into place yet) is removed by the next runner', async () => {
    const vault = await writeVault(twoSteps)
    // Killed between making the folder with its record and renaming it: it never held the lock.
    const unborn = join(vault, '00_plan-trace/.lock.new-999999999')
    await mkdir(unborn, { recursive: true })
    await writeFile(join(unborn, 'holder.json'), JSON.stringify({ pid: 999_999_999, host: hostname(), since: 'yesterday' }))
    expect(await runPlan(vault, { query: 'q', work })).toMatchObject({ status: 'completed', steps: 2 })
    expect((await readdir(join(vault, '00_plan-trace'))).sort()).toEqual(['final.md', 'outputs', 'trace.md'])
  })

  it('a run that waits for a person keeps its journal: a later save of the note is still protected', async () => {
    const vault = await writeVault({
      'a.md': '---\ntype: start\n---\n# First\n\n## Next\n- [[b]]\n',
      'b.md': '---\njudge: human\n---\n# Approve\n\n## Next\n- [ ] approved -> [[c]]\n',
      'c.md': '# Send\n',
    })
    expect(await runPlan(vault, { query: 'q', work })).toMatchObject({ status: 'waiting' })
    expect((await readdir(join(vault, '00_plan-trace'))).sort()).toEqual(['.journal', 'outputs', 'trace.md'])
  })
})
