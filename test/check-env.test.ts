import { readdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, beforeEach, describe, expect, it } from 'vitest'
import { runPlan, type CheckDefinition } from 'vaultplan'
import { CHECK_ENV } from '../src/run/core/check-env.js'
import { startChatServer, stepOf } from './support/chat-server.js'
import { vaultplan } from './helpers/cli.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { note, tempDir, writeVault } from './helpers/vault.js'

/*
 * A check runs with a minimal environment, never the model's key, and what
 * it prints is kept (in the output note, for the next worker) without the
 * runner's secrets.
 */

const KEY = 'sk-live-0123456789abcdef'
const TOKEN = 'npm_tokenvalue987654'
const options = { query: 'Ship the fix', fsync: false, llm: noJudge(), work: scriptedWorker() } as const
const plan = {
  'code.md': note({ front: { type: 'start', check: 'test' }, title: 'Write the code', next: ['[[ship]]'] }),
  'ship.md': note({ title: 'Ship it' }),
}

/** A check that runs node on a script. */
function script(code: string, extra: Partial<CheckDefinition> = {}): CheckDefinition {
  return { command: [process.execPath, '-e', code], ...extra }
}

/** What the first output note of a vault's run holds: the worker's output and its checks' report. */
async function firstOutput(vault: string): Promise<string> {
  const folder = join(vault, '00_plan-trace', 'outputs')
  const [first] = (await readdir(folder)).sort()
  return readFile(join(folder, first!), 'utf8')
}

/** The variable names a check printed as `env: A,B,C`. */
function namesIn(output: string): string[] {
  return /env: (.*)/.exec(output)![1]!.split(',').sort()
}

const PRINT_ENV = "console.log('env: ' + Object.keys(process.env).join(','))"
const saved = { ...process.env }
beforeEach(() => {
  Object.assign(process.env, { LLM_API_KEY: KEY, LLM_JUDGE_API_KEY: `${KEY}-judge`, NPM_TOKEN: TOKEN, DATABASE_URL: 'postgres://x', LC_ALL: 'C' })
})
afterEach(() => {
  for (const name of Object.keys(process.env)) if (!(name in saved)) delete process.env[name]
  Object.assign(process.env, saved)
})

describe('the environment of a check', () => {
  it('is a minimal one: no model key, nothing the runner did not pass', async () => {
    const dir = await writeVault(plan)
    await runPlan(dir, { ...options, checks: { test: script(PRINT_ENV) } })
    const names = namesIn(await firstOutput(dir))
    expect(names).toContain('PATH')
    expect(names).toContain('LC_ALL')
    expect(names.filter((name) => !(CHECK_ENV as readonly string[]).includes(name) && !name.startsWith('LC_'))).toEqual([])
  })

  it('passes through what the definition names, and sets what it sets', async () => {
    const dir = await writeVault(plan)
    await runPlan(dir, { ...options, checks: { test: script(PRINT_ENV, { inheritEnv: ['NPM_TOKEN'], env: { MODE: 'ci' } }) } })
    const names = namesIn(await firstOutput(dir))
    expect(names).toEqual(expect.arrayContaining(['NPM_TOKEN', 'MODE']))
    expect(names).not.toContain('LLM_API_KEY')
    expect(names).not.toContain('DATABASE_URL')
  })

  it('keeps no secret in what it printed: the model keys always, a passed-through secret, one cut by the 4 KB tail', async () => {
    const dir = await writeVault(plan)
    const secrets = join(await tempDir(), 'secrets.txt')
    // Read from a file, not the environment: the key is still taken out.
    await writeFile(secrets, `${KEY}\n${KEY}-judge\n`)
    const print = `const fs = require('fs'); process.stdout.write(fs.readFileSync(${JSON.stringify(secrets)}, 'utf8') + 'token=' + process.env.NPM_TOKEN + '\\n'); process.stdout.write('x'.repeat(5000) + ${JSON.stringify(KEY)} + 'y'.repeat(4096 - 10))`
    await runPlan(dir, { ...options, checks: { test: script(print, { inheritEnv: ['NPM_TOKEN'] }) } })
    const output = await firstOutput(dir)
    expect(output).toContain('y'.repeat(100))
    // The last 4 KB begin 10 characters before the key's end: those are taken out too.
    expect(output).toContain(`***${'y'.repeat(4096 - 10)}`)
    expect(output).not.toContain(KEY.slice(-10))
    for (const secret of [KEY, TOKEN]) expect(output).not.toContain(secret)
  })

  it("on the command line: --check-env and the config file's checkEnv pass a variable through, redacted when it looks secret", async () => {
    const model = await startChatServer((request) => `work for ${stepOf(request)}`)
    try {
      const dir = await writeVault(plan)
      const cwd = await tempDir()
      const print = `test=${process.execPath} -e "console.log('env: ' + Object.keys(process.env).join(',') + ' ' + process.env.NPM_TOKEN)"`
      const env = { LLM_MODEL: 'm', LLM_BASE_URL: model.url, LLM_API_KEY: KEY, NPM_TOKEN: TOKEN, OTHER: 'x' }
      const run = await vaultplan(['run', dir, '--query', 'q', '--no-fsync', '--check', print, '--check-env', 'NPM_TOKEN'], { cwd, env })
      expect(run.stderr).toBe('')
      const output = await firstOutput(dir)
      expect(namesIn(output.replace(/ \*\*\*\n[\s\S]*/, ''))).toEqual(expect.arrayContaining(['NPM_TOKEN', 'PATH']))
      expect(output).not.toContain('LLM_API_KEY')
      expect(output).not.toContain('OTHER')
      expect(output).not.toContain(TOKEN)
      const again = await writeVault(plan)
      await writeFile(
        join(cwd, 'vaultplan.config.json'),
        JSON.stringify({ checkEnv: ['OTHER'], checks: { test: { command: [process.execPath, '-e', PRINT_ENV] } } }),
      )
      expect((await vaultplan(['run', again, '--query', 'q', '--no-fsync'], { cwd, env })).code).toBe(0)
      expect(namesIn(await firstOutput(again))).toContain('OTHER')
      expect((await vaultplan(['run', again, '--check-env', 'NOT A NAME'], { cwd, env })).stderr).toContain(
        "--check-env takes a variable name, such as NPM_TOKEN, got 'NOT A NAME'",
      )
    } finally {
      await model.close()
    }
  })
})
