import { cp, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { root, vaultplan } from './helpers/cli.js'
import { tempDir } from './helpers/vault.js'

interface StandIn {
  url: string
  close(): Promise<void>
}
const models: StandIn[] = []
afterEach(async () => {
  await Promise.all(models.splice(0).map((model) => model.close()))
})

// The built CLI with the demo's stand-in model on 127.0.0.1, as the README shows it.
describe('vaults/research-fanout', () => {
  it('fans out into two branches, waits for the approval inside one, and completes after the tick', async () => {
    const { startStandInModel } = (await import('../examples/stand-in-model.mjs' as string)) as { startStandInModel(): Promise<StandIn> }
    const model = await startStandInModel()
    models.push(model)
    const cwd = await tempDir()
    await cp(join(root, 'vaults/research-fanout'), join(cwd, 'plan'), { recursive: true })
    const env = { LLM_BASE_URL: model.url, LLM_MODEL: 'stand-in', NO_COLOR: '1' }
    const first = await vaultplan(['run', 'plan', '--run-vault', 'run', '--query', 'How do heat pumps perform in cold climates?'], { cwd, env })
    expect(first.code).toBe(4)
    expect(first.stdout).toContain('Waiting: papers/approve.md (choices: approved, more)')
    // The other branch went on to its end meanwhile.
    expect(first.stdout).toMatch(/web\/notes \(visit 1\)\s+end/)

    const approve = join(cwd, 'run/papers/approve.md')
    await writeFile(approve, (await readFile(approve, 'utf8')).replace('- [ ] approved', '- [x] approved'))
    const second = await vaultplan(['run', 'run'], { cwd, env })
    expect(second).toMatchObject({ code: 0 })
    expect(second.stdout).toContain('completed after 7 steps at report')
    // The note that ran the branches has the step of their last work: the whole run's sixth.
    const gathered = await readFile(join(cwd, 'run/00_plan-trace/outputs/0006-gather.md'), 'utf8')
    expect(gathered.indexOf('## web')).toBeLessThan(gathered.indexOf('## papers'))
    // The template is untouched.
    expect(await readFile(join(root, 'vaults/research-fanout/papers/approve.md'), 'utf8')).toContain('- [ ] approved')
  })
})
