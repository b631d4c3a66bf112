import { execFile, spawn } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { promisify } from 'node:util'
import { afterEach, describe, expect, test } from 'vitest'
import { splitWords } from '../src/cli/cli-checks.js'
import { startChatServer } from './support/chat-server.js'
import { bin, vaultplan } from './helpers/cli.js'
import { edit, tempDir, writeVault } from './helpers/vault.js'

/*
 * The commands the CLI suggests for going on with a run work as written. A run's checks come from
 * whoever runs it, so a suggestion that drops `--check` fails `unknown-check` ("the plan is
 * invalid; fix the notes above") although the notes are fine.
 */

const servers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

const plan = {
  'code.md': '---\ntype: start\ncheck: test\n---\n# Write the code\n\n## Next\n- passed -> [[review]]\n- failed -> [[code]]\n',
  'review.md': '---\njudge: human\n---\n# Review\n\n## Next\n- [ ] approved -> [[ship]]\n- [ ] rework -> [[code]]\n',
  'ship.md': '# Ship it\n',
}
const check = `test=${process.execPath} -e 0`

/** The command a line of output names between backticks after `prefix`. */
function named(text: string, prefix: string): string {
  const found = new RegExp(`${prefix}\`([^\`]+)\``).exec(text)?.[1]
  if (found === undefined) throw new Error(`no \`command\` after "${prefix}" in:\n${text}`)
  return found
}

describe('the commands that go on with a run give its checks again', () => {
  test('waiting: the command it prints goes on; status names the check to give; without it, a run that ran before says to pass --check again', async () => {
    const model = await startChatServer(() => 'done')
    servers.push(model)
    const env = { LLM_MODEL: 'm', LLM_BASE_URL: model.url }
    const vault = await writeVault(plan)
    const cwd = await tempDir()
    const first = await vaultplan(['run', vault, '--query', 'Add a flag', '--no-fsync', '--check', check], { cwd, env })
    expect(first.code).toBe(4)
    const again = named(first.stdout, 'Then go on: ')
    expect(again).toBe(`vaultplan run ${vault} --check '${check}'`)

    const status = await vaultplan(['status', vault], { cwd })
    expect(named(status.stdout, 'then ')).toBe(`vaultplan run ${vault} --check test='...'`)
    expect(status.stdout).toContain("The notes name the check `test`: put its command in place of '...'")

    await edit(vault, 'review.md', (text) => text.replace('- [ ] rework', '- [x] rework'))
    const bare = await vaultplan(['run', vault, '--no-fsync'], { cwd, env })
    expect(bare.code).toBe(1)
    expect(bare.stderr).not.toContain('fix the notes above')
    expect(bare.stderr.split('\n').at(-2)).toBe(
      `vaultplan: the notes are fine, but this run was not given the check \`test\` they name: checks come from whoever runs the plan, never from the vault, so pass it again as the run that started it did: \`vaultplan run ${vault} --check test='...'\` (or define it in vaultplan.config.json in the folder you run from).`,
    )

    const words = splitWords(again)
    const resumed = await vaultplan(words.slice(1), { cwd, env })
    expect({ code: resumed.code, stderr: resumed.stderr }).toEqual({ code: 4, stderr: '' })
    expect(await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8')).toMatch(
      /## Step 3 · \[\[code\]\] · visit 2\n\n- Edge: passed → \[\[review\]\]\n- Decided by: check/,
    )
  })

  test('Ctrl-C: the command it prints goes on, the check given again', async () => {
    let reached: () => void = () => {}
    const held = new Promise<void>((resolve) => (reached = resolve))
    const model = await startChatServer(async (request) => {
      if (request.kind === 'work' && request.prompt.includes('Write the code')) {
        reached()
        await new Promise(() => {}) // Held until the run is interrupted.
      }
      return 'done'
    })
    servers.push(model)
    const vault = await writeVault(plan)
    const cwd = await tempDir()
    const env = { PATH: process.env.PATH ?? '', LLM_MODEL: 'm', LLM_BASE_URL: model.url }
    const child = spawn(process.execPath, [bin, 'run', vault, '--query', 'Add a flag', '--check', check, '--check-env', 'CI'], { cwd, env })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)))
    await held
    child.kill('SIGINT')
    expect(await exited).toBe(130)
    const again = named(stderr, 'Interrupted. The vault is resumable: run ')
    expect(again).toBe(`node ${bin} run ${vault} --check '${check}' --check-env CI`)

    const other = await startChatServer(() => 'done')
    servers.push(other)
    const [node, ...args] = splitWords(again)
    expect(node).toBe('node')
    const resumed = await promisify(execFile)(process.execPath, args, { cwd, env: { ...env, LLM_BASE_URL: other.url } }).catch(
      (error: { code: number }) => error,
    )
    expect((resumed as { code?: number }).code).toBe(4)
    expect(await readFile(join(vault, 'code.md'), 'utf8')).toContain('status: done')
  })
})
