import { access, mkdir, readFile, writeFile } from 'node:fs/promises'
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

  describe('a config file inside the vault being run defines no check', () => {
    /** A vault that brings its own vaultplan.config.json, whose check would leave a file `ran` beside the vault. */
    async function sentVault(): Promise<{ vault: string; ran: string }> {
      const base = await tempDir()
      const vault = await writeVault({ ...plan, 'sub/notes.txt': 'a folder of the vault\n' }, join(base, 'sent'))
      const ran = join(base, 'ran')
      const command = [process.execPath, '-e', `require('fs').writeFileSync(${JSON.stringify(ran)}, 'ran')`]
      await writeFile(join(vault, 'vaultplan.config.json'), JSON.stringify({ checks: { test: { command } } }))
      await writeFile(join(vault, 'sub', 'vaultplan.config.json'), JSON.stringify({ checks: { test: { command } } }))
      return { vault, ran }
    }
    const env = (url: string) => ({ LLM_MODEL: 'm', LLM_BASE_URL: url })
    const refused =
      /vaultplan\.config\.json in .* is inside the vault being run .*, so its checks are not read: a vault must not define the commands it runs\. Give the checks with --check NAME='CMD'/

    test.each([
      ['run .', (vault: string) => ({ args: ['run', '.', '--query', 'ship it', '--no-fsync'], cwd: vault })],
      ['run from a folder of the vault', (vault: string) => ({ args: ['run', '..', '--query', 'ship it', '--no-fsync'], cwd: join(vault, 'sub') })],
      ['run --dry-run', (vault: string) => ({ args: ['run', '.', '--query', 'ship it', '--dry-run'], cwd: vault })],
      ['validate', (vault: string) => ({ args: ['validate', '.'], cwd: vault })],
    ])('%s: refused, saying how to give the checks, and nothing runs or is written', async (_name, command) => {
      const model = await startChatServer((request) => `work for ${stepOf(request)}`)
      servers.push(model)
      const { vault, ran } = await sentVault()
      const { args, cwd } = command(vault)
      const result = await vaultplan(args, { cwd, env: env(model.url) })
      expect({ code: result.code, stdout: result.stdout }).toEqual({ code: 2, stdout: '' })
      expect(result.stderr).toMatch(refused)
      await expect(access(ran)).rejects.toThrow()
      await expect(access(join(vault, '00_plan-trace'))).rejects.toThrow()
    })

    test('with --check the file is left alone and the check of the flag runs', async () => {
      const model = await startChatServer((request) => `work for ${stepOf(request)}`)
      servers.push(model)
      const { vault, ran } = await sentVault()
      const run = await vaultplan(['run', '.', '--query', 'ship it', '--no-fsync', '--check', `test='${process.execPath}' -e ''`], {
        cwd: vault,
        env: env(model.url),
      })
      expect(run.code).toBe(0)
      await expect(access(ran)).rejects.toThrow()
      expect(await firstHop(vault)).toMatchObject({ decidedBy: 'check', next: 'ship', checks: [{ name: 'test', exit: 0 }] })
    })

    test('schedule run: refused when the working folder is the template or the runs folder of a schedule', async () => {
      const { vault, ran } = await sentVault()
      const runs = join(vault, '..', 'runs')
      await mkdir(runs)
      const config = JSON.parse(await readFile(join(vault, 'vaultplan.config.json'), 'utf8')) as object
      const schedules = { nightly: { template: vault, cron: '* * * * *', query: 'ship it', runs } }
      await writeFile(join(vault, 'vaultplan.config.json'), JSON.stringify({ ...config, schedules }))
      await writeFile(join(runs, 'vaultplan.config.json'), JSON.stringify({ ...config, schedules }))
      for (const cwd of [vault, runs]) {
        const result = await vaultplan(['schedule', 'run'], { cwd, env: {} })
        expect(result.code).toBe(2)
        expect(result.stderr).toMatch(refused)
      }
      await expect(access(ran)).rejects.toThrow()
    })
  })
})
