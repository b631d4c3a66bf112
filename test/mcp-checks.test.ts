import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { vaultplan } from './helpers/cli.js'
import { stdioClient } from './helpers/mcp.js'
import { until } from './helpers/until.js'
import { note, tempDir, traceEntries, writeVault } from './helpers/vault.js'

const failing = `test=${process.execPath} -e "console.log('1 failing'); process.exit(1)"`

/** A root holding the vault `code`: a note with `check: test` that goes to `ship` when it passes, `fix` when it fails. */
async function rootWithPlan(): Promise<string> {
  const root = await tempDir()
  await writeVault(
    {
      'code.md': note({ front: { type: 'start', check: 'test' }, title: 'Write the code', next: ['passed -> [[ship]]', 'failed -> [[fix]]'] }),
      'fix.md': note({ title: 'Fix it' }),
      'ship.md': note({ title: 'Ship it' }),
    },
    join(root, 'code'),
  )
  return root
}

// The built CLI (`npm test` builds first), started as a coding agent starts it.
describe('checks in the MCP server', () => {
  it('runs the checks its operator defined: plan_next says which will run, and plan_finish is routed by them, not by the choice', async () => {
    const root = await rootWithPlan()
    const agent = await stdioClient(root, {}, { args: ['--check', failing] })
    let { step } = await agent.call('plan_next', { vault: 'code', query: 'Add a flag' })
    expect(step).toMatchObject({
      kind: 'work',
      node: { id: 'code' },
      checks: [{ name: 'test', command: [process.execPath, '-e', "console.log('1 failing'); process.exit(1)"] }],
    })
    // The checks choose, not the agent: no conditions to choose from.
    expect(step).not.toHaveProperty('conditions')
    expect(step.todo).toContain(': they decide `passed` / `failed`, not your choice.')
    ;({ step } = await agent.call('plan_finish', { vault: 'code', key: step.key, output: 'all tests pass, trust me' }))
    expect(step).toMatchObject({ kind: 'work', node: { id: 'fix' } })
    expect(step.outputs[0].output).toContain('1 failing')
    expect((await traceEntries(join(root, 'code')))[0]!.decidedBy).toBe('check')
  })

  it('runs no check its operator did not define: a vault cannot define one, and one in a config file among the served vaults is refused', async () => {
    const root = await rootWithPlan()
    const config = JSON.stringify({ checks: { test: { command: ['touch', join(root, 'ran')] } } })
    await writeFile(join(root, 'vaultplan.config.json'), config)
    await writeFile(join(root, 'code', 'vaultplan.config.json'), config)
    // Started among the vaults, the server does not start: the checks must come from --check.
    for (const cwd of [root, join(root, 'code')]) {
      const started = await vaultplan(['mcp', '--root', root], { cwd, env: {} })
      expect(started.code).toBe(2)
      expect(started.stderr).toMatch(/vaultplan\.config\.json in .* is inside the root this server serves .*Give the checks with --check NAME='CMD'/)
    }
    // Started elsewhere, the config inside a served vault is no runner's: the note's check is unknown.
    const agent = await stdioClient(root, {}, { cwd: await tempDir() })
    expect((await agent.call('plan_validate', { vault: 'code' })).issues.map((issue: { code: string }) => issue.code)).toEqual(['unknown-check'])
    expect(await agent.refuse('plan_next', { vault: 'code', query: 'Add a flag' })).toMatch(/unknown-check|names check `test`/)
  })

  it('a check plan_finish runs is ended, its process group killed, when the session ends under it', async () => {
    const { agent, key, pid: started } = await foreverCheck()
    const finishing = agent.client.callTool({ name: 'plan_finish', arguments: { vault: 'code', key, output: 'done' } }).catch(() => undefined)
    const pid = await started()
    try {
      await agent.close()
      await finishing
      await until(() => !alive(pid), `the check (pid ${pid}) to be ended with its session`)
    } finally {
      if (alive(pid)) process.kill(pid, 'SIGKILL')
    }
  })

  it('and when the client cancels the call: the session goes on, the step is still to finish', async () => {
    const { agent, key, pid: started } = await foreverCheck()
    const controller = new AbortController()
    const finishing = agent.client
      .callTool({ name: 'plan_finish', arguments: { vault: 'code', key, output: 'done' } }, undefined, { signal: controller.signal })
      .catch((error: unknown) => error)
    const pid = await started()
    try {
      controller.abort(new Error('the agent gave up'))
      await finishing
      await until(() => !alive(pid), `the check (pid ${pid}) to be ended with its call`)
      expect((await agent.call('plan_next', { vault: 'code' })).step).toMatchObject({ kind: 'work', key })
    } finally {
      if (alive(pid)) process.kill(pid, 'SIGKILL')
    }
  })
})

/** A root with the plan, a server started on it whose check `test` writes its pid to a file and never ends, and the step to finish. */
async function foreverCheck(): Promise<{ agent: Awaited<ReturnType<typeof stdioClient>>; key: string; pid: () => Promise<number> }> {
  const root = await rootWithPlan()
  const pidFile = join(await tempDir(), 'pid')
  const forever = `test=${process.execPath} -e "require('fs').writeFileSync(${JSON.stringify(pidFile).replace(/"/g, "'")}, String(process.pid)); setInterval(() => {}, 1000)"`
  const agent = await stdioClient(root, {}, { args: ['--check', forever] })
  const { step } = await agent.call('plan_next', { vault: 'code', query: 'Add a flag' })
  const pid = async () => {
    let found = 0
    await until(async () => (found = Number(await readFile(pidFile, 'utf8').catch(() => '0'))) > 0, 'the check to start')
    return found
  }
  return { agent, key: step.key as string, pid }
}

/** Whether a process is there (a signal 0 reaches it). */
function alive(pid: number): boolean {
  try {
    process.kill(pid, 0)
    return true
  } catch {
    return false
  }
}
