import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { startChatServer, stepOf } from './support/chat-server.js'
import { tempDir, writeVault } from './helpers/vault.js'
import { vaultplan } from './helpers/cli.js'

const servers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

const plan = {
  'code.md': '---\ntype: start\ncheck: test\n---\n# Write the code\n\n## Next\n- passed -> [[ship]]\n- failed -> [[fix]]\n',
  'fix.md': '# Fix it\n',
  'ship.md': '# Ship it\n',
}

/** The `decidedBy` and `checks` of the first hop of a vault's trace. */
async function firstHop(vault: string): Promise<{ decidedBy: string; next: string; checks?: unknown }> {
  const trace = await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8')
  return JSON.parse(/^<!-- vaultplan:hop (.*) -->$/m.exec(trace)![1]!) as { decidedBy: string; next: string; checks?: unknown }
}

describe('checks on the command line', () => {
  test('validate: a note naming a check nobody defined is an error; --check or vaultplan.config.json defines it', async () => {
    const vault = await writeVault(plan)
    const cwd = await tempDir()
    const bare = await vaultplan(['validate', vault, '--json'], { cwd })
    expect(bare.code).toBe(1)
    expect((JSON.parse(bare.stdout) as { issues: { code: string; node: string }[] }).issues).toMatchObject([{ code: 'unknown-check', node: 'code' }])
    expect((await vaultplan(['validate', vault, '--check', "test='npm test'"], { cwd })).code).toBe(0)
    await writeFile(join(cwd, 'vaultplan.config.json'), JSON.stringify({ checks: { test: { command: ['npm', 'test'] } } }))
    expect((await vaultplan(['validate', vault], { cwd })).code).toBe(0)
    // A config file inside the vault defines nothing: the vault cannot give itself programs to run.
    await writeFile(join(vault, 'vaultplan.config.json'), JSON.stringify({ checks: { test: { command: ['npm', 'test'] } } }))
    expect((await vaultplan(['validate', vault], { cwd: await tempDir() })).code).toBe(1)
  })

  test('run: --check runs the command as words, never through a shell, and the check decides', async () => {
    const model = await startChatServer((request) => `work for ${stepOf(request)}`)
    servers.push(model)
    const vault = await writeVault(plan)
    const cwd = await tempDir()
    // Quoted like a shell would; `;` and `$HOME` reach the program as they are, so it exits 4, not 0.
    const check = `test="${process.execPath}" -e 'process.exit(process.argv[1] === "a b; exit 0 $HOME" ? 4 : 0)' "a b; exit 0 \\$HOME"`
    const run = await vaultplan(['run', vault, '--query', 'ship it', '--no-fsync', '--check', check], { cwd, env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(await firstHop(vault)).toMatchObject({ decidedBy: 'check', next: 'fix', checks: [{ name: 'test', exit: 4 }] })
  })

  test('run: --check wins over vaultplan.config.json', async () => {
    const model = await startChatServer((request) => `work for ${stepOf(request)}`)
    servers.push(model)
    const vault = await writeVault(plan)
    const cwd = await tempDir()
    await writeFile(join(cwd, 'vaultplan.config.json'), JSON.stringify({ checks: { test: { command: [process.execPath, '-e', 'process.exit(1)'] } } }))
    const run = await vaultplan(['run', vault, '--query', 'ship it', '--no-fsync', '--check', `test='${process.execPath}' -e ''`], {
      cwd,
      env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url },
    })
    expect(run.code).toBe(0)
    expect(await firstHop(vault)).toMatchObject({ decidedBy: 'check', next: 'ship', checks: [{ name: 'test', exit: 0 }] })
  })
})
