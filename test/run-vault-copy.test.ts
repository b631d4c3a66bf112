import { spawnSync } from 'node:child_process'
import { existsSync } from 'node:fs'
import { lstat, mkdir, readdir, readlink, rename, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, PlanValidationError, runPlan } from 'vaultplan'
import { draftReview, linear } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { read, statusOf, tempDir, writeVault } from './helpers/vault.js'

const options = { query: 'Ship it', fsync: false, llm: noJudge() } as const

describe('the copy of a template into a run vault is the plan it was', () => {
  it('a note that is a symlink to another file of the vault: copied as a symlink to the same file of the copy', async () => {
    const plan = await writeVault(linear())
    await mkdir(join(plan, 'shared'))
    await rename(join(plan, 'c.md'), join(plan, 'shared/c-real.md'))
    await symlink('shared/c-real.md', join(plan, 'c.md'))
    expect((await loadPlan(plan)).check().errors).toEqual([])

    const runVault = join(await tempDir(), 'run')
    const result = await runPlan(plan, { ...options, runVault, work: scriptedWorker() })
    expect(result).toMatchObject({ status: 'completed', output: 'c v1', visits: { a: 1, b: 1, c: 1 } })
    expect((await lstat(join(runVault, 'c.md'))).isSymbolicLink()).toBe(true)
    expect(await readlink(join(runVault, 'c.md'))).toBe(join('shared', 'c-real.md'))
    // The status went to the copy's file, and the template is untouched.
    expect(statusOf(await read(runVault, 'shared/c-real.md'))).toBe('done')
    expect(statusOf(await read(plan, 'shared/c-real.md'))).toBe('pending')
  })

  it('a symlink that leads out of the vault is left out of the copy, as the plan in place does not read it', async () => {
    const plan = await writeVault(linear())
    const outside = await writeVault({ 'secret.md': 'not the plan\n' })
    await symlink(join(outside, 'secret.md'), join(plan, 'secret.md'))
    const runVault = join(await tempDir(), 'run')
    await runPlan(plan, { ...options, runVault, work: scriptedWorker() })
    await expect(lstat(join(runVault, 'secret.md'))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it("a killed copy's temporary folder is removed at the next copy beside it; a live process's copy is left alone", async () => {
    const plan = await writeVault(linear())
    const parent = await tempDir()
    const runVault = join(parent, 'run')
    // A pid that was alive a moment ago and is gone now: a copy killed mid-way.
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' }).stdout
    for (const pid of [dead, String(process.ppid)]) {
      await mkdir(join(parent, `run.vaultplan-tmp-${pid}`))
      await writeFile(join(parent, `run.vaultplan-tmp-${pid}`, 'a.md'), 'half a copy')
    }
    await runPlan(plan, { ...options, runVault, work: scriptedWorker() })
    expect((await readdir(parent)).sort()).toEqual(['run', `run.vaultplan-tmp-${process.ppid}`])
  })
})

describe('a broken template is not copied into its run vault', () => {
  const predicates = { approved: () => true, 'needs revision': () => false }

  it('a typo in a link, fixed after the first run: the next run runs the fixed plan, not a stale copy of the broken one', async () => {
    const plan = await writeVault(draftReview())
    await writeFile(join(plan, 'review.md'), (await read(plan, 'review.md')).replace('[[send]]', '[[sned]]'))
    const runVault = join(await tempDir(), 'runs/announce')
    const first = await runPlan(plan, { ...options, runVault, predicates, work: scriptedWorker() }).catch((error: unknown) => error)
    expect(first).toBeInstanceOf(PlanValidationError)
    expect((first as PlanValidationError).issues.map(({ code, file }) => [code, file])).toContainEqual(['dangling-edge', 'review.md'])
    expect(existsSync(runVault)).toBe(false)

    await writeFile(join(plan, 'review.md'), (await read(plan, 'review.md')).replace('[[sned]]', '[[send]]'))
    const second = await runPlan(plan, { ...options, runVault, predicates, work: scriptedWorker() })
    expect(second).toMatchObject({ status: 'completed', output: 'send v1' })
  })

  it('a note missing on the first run and added later: the next run copies the whole plan (no run-vault-not-empty)', async () => {
    const { 'send.md': send, ...rest } = draftReview()
    const plan = await writeVault(rest)
    const runVault = join(await tempDir(), 'runs/announce')
    await expect(runPlan(plan, { ...options, runVault, predicates, work: scriptedWorker() })).rejects.toBeInstanceOf(PlanValidationError)

    await writeFile(join(plan, 'send.md'), send!)
    const second = await runPlan(plan, { ...options, runVault, predicates, work: scriptedWorker() })
    expect(second).toMatchObject({ status: 'completed', output: 'send v1' })
  })
})
