import { mkdir, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { RunStateError, runPlan } from 'vaultplan'
import { writeVault } from './helpers/vault.js'

const plan = { 'a.md': '---\ntype: start\n---\n# Only step\n' }
const work = async () => 'done'

describe('one runner per vault', () => {
  it('takes over a lock whose runner was killed before it wrote its name, once nobody refreshes it', async () => {
    const vault = await writeVault(plan)
    await mkdir(join(vault, '00_plan-trace/.lock'), { recursive: true })
    const result = await runPlan(vault, { query: 'q', work, fsync: false })
    expect(result.status).toBe('completed')
  })

  it('takes over a lock from another machine that nobody has refreshed for over 10 s', async () => {
    const vault = await writeVault(plan)
    const lock = join(vault, '00_plan-trace/.lock')
    await mkdir(lock, { recursive: true })
    await writeFile(join(vault, '00_plan-trace/.lock-holder.json'), JSON.stringify({ pid: 999_999_999, host: 'elsewhere', since: 'yesterday' }))
    const old = new Date(Date.now() - 60_000)
    await utimes(lock, old, old)
    await expect(runPlan(vault, { query: 'q', work, fsync: false })).resolves.toMatchObject({ status: 'completed' })
  })

  it('refuses at once while the holder lives, naming it', async () => {
    const vault = await writeVault(plan)
    let release = () => {}
    const holding = runPlan(vault, { query: 'q', work: () => new Promise<string>((resolve) => (release = () => resolve('x'))), fsync: false })
    await new Promise((resolve) => setTimeout(resolve, 300))
    const second = await runPlan(vault, { query: 'q', work, fsync: false }).catch((error: unknown) => error)
    release()
    await holding
    expect(second).toBeInstanceOf(RunStateError)
    expect((second as RunStateError).code).toBe('vault-locked')
    expect((second as Error).message).toContain(`process ${process.pid} on `)
  })
})
