import { execFile } from 'node:child_process'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { promisify } from 'node:util'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { codeStarter, starterPlan } from '../src/cli/cli-init.js'
import { bin, vaultplan } from './helpers/cli.js'
import { edit, readTree, statuses, tempDir } from './helpers/vault.js'

interface StandIn {
  url: string
  close(): Promise<void>
}
const models: StandIn[] = []
afterEach(async () => {
  await Promise.all(models.splice(0).map((model) => model.close()))
})

/** The demo's scripted stand-in model on 127.0.0.1 (examples/stand-in-model.mjs, plain JS). */
async function standIn(): Promise<StandIn> {
  const { startStandInModel } = (await import('../examples/stand-in-model.mjs' as string)) as { startStandInModel(): Promise<StandIn> }
  const model = await startStandInModel()
  models.push(model)
  return model
}

/** Where the run of a vault stands, from `vaultplan status --json`: phase and each note's status and visits. */
async function standing(cwd: string, vault: string) {
  const { stdout } = await vaultplan(['status', vault, '--json'], { cwd })
  const status = JSON.parse(stdout) as { phase: string; nodes: { id: string; status: string; visits: number }[] }
  return { phase: status.phase, nodes: status.nodes.map((node) => `${node.id} ${node.status} ${node.visits}`) }
}

describe('vaultplan init', () => {
  test('writes the starter plan, which validates without a warning', async () => {
    const cwd = await tempDir()
    expect(await vaultplan(['init', 'x'], { cwd })).toEqual({
      code: 0,
      stdout: [
        'wrote x/draft.md',
        'wrote x/review.md',
        'wrote x/approve.md',
        'wrote x/publish.md',
        'wrote x/00_plan-trace/README.md',
        '',
        'Next: open x in Obsidian, or run',
        '  vaultplan validate x',
        '  vaultplan run x --query "..."',
        '',
      ].join('\n'),
      stderr: '',
    })
    expect(await readTree(join(cwd, 'x'))).toEqual(starterPlan('vaultplan'))
    expect(await vaultplan(['validate', 'x'], { cwd })).toEqual({ code: 0, stdout: 'x: 4 notes, 0 errors, 0 warnings\n', stderr: '' })
  })

  test('names the command that works where it ran: `npx vaultplan` from a project that installed it, `node dist/cli.js` in a clone', async () => {
    const cwd = await tempDir()
    const init = await vaultplan(['init', 'my plan', '--code'], { cwd, installed: 'in a project' })
    expect(init.stdout.split('\n').slice(-4)).toEqual([
      'Next: open my plan in Obsidian, or run',
      "  npx vaultplan validate 'my plan' --check test='npm test'",
      "  npx vaultplan run 'my plan' --check test='npm test' --query \"...\"",
      '',
    ])
    expect(await readTree(join(cwd, 'my plan'))).toEqual(codeStarter('npx vaultplan'))
    expect(codeStarter('npx vaultplan')['00_plan-trace/README.md']).toContain("\n    npx vaultplan run <this folder> --check test='npm test'")
    // Each line it names works as written, from where it ran.
    expect(await vaultplan(['validate', 'my plan', '--check', "test='npm test'"], { cwd, installed: 'in a project' })).toMatchObject({ code: 0 })
    // The script run itself (outside the clone, so by its whole path).
    const clone = await promisify(execFile)(process.execPath, [bin, 'init', 'x'], { cwd })
    expect(clone.stdout.split('\n').slice(-3)).toEqual([`  node ${bin} validate x`, `  node ${bin} run x --query "..."`, ''])
  })

  test('runs with the stand-in model: waits for the person at approve (exit 4), completes once the box is ticked', async () => {
    const cwd = await tempDir()
    expect((await vaultplan(['init', 'x'], { cwd })).code).toBe(0)
    const model = await standIn()
    const env = { LLM_BASE_URL: model.url, LLM_MODEL: 'stand-in', NO_COLOR: '1' }
    const first = await vaultplan(['run', 'x', '--query', 'Announce our release', '--no-fsync'], { cwd, env })
    expect({ code: first.code, stderr: first.stderr }).toEqual({ code: 4, stderr: '' })
    // The stand-in sends the draft back once, then approves it; then a person decides.
    expect(await standing(cwd, 'x')).toEqual({ phase: 'waiting', nodes: ['draft done 2', 'review done 2', 'approve waiting 1', 'publish pending 0'] })

    await edit(join(cwd, 'x'), 'approve.md', (text) => text.replace('- [ ] publish -> [[publish]]', '- [x] publish -> [[publish]]'))
    const second = await vaultplan(['run', 'x', '--no-fsync'], { cwd, env })
    expect({ code: second.code, stderr: second.stderr }).toEqual({ code: 0, stderr: '' })
    expect(await standing(cwd, 'x')).toEqual({ phase: 'completed', nodes: ['draft done 2', 'review done 2', 'approve done 1', 'publish done 1'] })
    expect(await statuses(join(cwd, 'x'))).toEqual({ approve: 'done', draft: 'done', publish: 'done', review: 'done' })
    // The README note is no step: the run never touched it.
    expect(await readFile(join(cwd, 'x', '00_plan-trace', 'README.md'), 'utf8')).toBe(starterPlan('vaultplan')['00_plan-trace/README.md'])
  })

  test('--code writes the starter for code: a check the runner defines, and an approval with a deadline', async () => {
    const cwd = await tempDir()
    const init = await vaultplan(['init', 'x', '--code'], { cwd })
    expect(init.stdout.split('\n').slice(-3)).toEqual([
      "  vaultplan validate x --check test='npm test'",
      '  vaultplan run x --check test=\'npm test\' --query "..."',
      '',
    ])
    expect(await readTree(join(cwd, 'x'))).toEqual(codeStarter('vaultplan'))
    // The plan names `test`; only the runner says what it runs.
    expect(await vaultplan(['validate', 'x', '--check', "test='npm test'"], { cwd })).toEqual({
      code: 0,
      stdout: 'x: 4 notes, 0 errors, 0 warnings\n',
      stderr: '',
    })
    expect((await vaultplan(['validate', 'x'], { cwd })).stdout).toContain('unknown-check')
    const model = await standIn()
    const env = { LLM_BASE_URL: model.url, LLM_MODEL: 'stand-in', NO_COLOR: '1' }
    const check = `test=${process.execPath} -e 0`
    const run = await vaultplan(['run', 'x', '--check', check, '--query', 'Add a flag', '--no-fsync'], { cwd, env })
    expect({ code: run.code, stderr: run.stderr }).toEqual({ code: 4, stderr: '' })
    expect(await standing(cwd, 'x')).toEqual({ phase: 'waiting', nodes: ['change done 1', 'approve waiting 1', 'merge pending 0', 'remind pending 0'] })
    const status = await vaultplan(['status', 'x'], { cwd })
    expect(status.stdout).toMatch(/\n {4}deadline \d{4}-\d\d-\d\dT/)
  })

  test('into the current folder by default, also one holding only dot-folders', async () => {
    const cwd = await tempDir()
    await mkdir(join(cwd, '.obsidian'))
    const run = await vaultplan(['init'], { cwd })
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/^wrote draft\.md\n/)
    expect(Object.keys(await readTree(cwd))).toEqual(['00_plan-trace/README.md', 'approve.md', 'draft.md', 'publish.md', 'review.md'])
  })

  test('refuses a folder that is not empty, or not a folder, and writes nothing', async () => {
    const cwd = await tempDir()
    await mkdir(join(cwd, 'mine'))
    await writeFile(join(cwd, 'mine', 'draft.md'), 'my own draft\n')
    expect(await vaultplan(['init', 'mine'], { cwd })).toEqual({
      code: 2,
      stdout: '',
      stderr: "vaultplan: `mine` is not empty ('draft.md'); init writes only into a new or empty folder, so nothing of yours is overwritten\n",
    })
    expect(await readTree(join(cwd, 'mine'))).toEqual({ 'draft.md': 'my own draft\n' })
    expect(await vaultplan(['init', 'mine/draft.md'], { cwd })).toEqual({
      code: 2,
      stdout: '',
      stderr: 'vaultplan: `mine/draft.md` is not a folder; pass a new or empty folder for the starter plan\n',
    })
    expect((await vaultplan(['init', 'a', 'b'], { cwd })).code).toBe(2)
  })
})
