import { spawn } from 'node:child_process'
import { readFile, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { startChatServer, stepOf } from './support/chat-server.js'
import { note, tempDir, writeVault } from './helpers/vault.js'
import { bin, vaultplan } from './helpers/cli.js'

const servers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

const template = {
  'collect.md': note({ front: { type: 'start' }, title: 'Collect the news', next: ['[[digest]]'] }),
  'digest.md': note({ title: 'Write the digest' }),
}

describe('vaultplan schedule', () => {
  test('add, list and remove keep the schedules in vaultplan.config.json', async () => {
    const cwd = await tempDir()
    await writeVault(template, join(cwd, 'plan'))
    const add = ['schedule', 'add', 'digest', '--template', 'plan', '--cron', '0 9 * * 1-5', '--query', 'Todays digest', '--runs', 'runs']
    expect(await vaultplan(add, { cwd })).toEqual({
      code: 0,
      stdout: "added schedule digest to vaultplan.config.json: '0 9 * * 1-5'; 'vaultplan schedule run' runs it\n",
      stderr: '',
    })
    expect(JSON.parse(await readFile(join(cwd, 'vaultplan.config.json'), 'utf8'))).toEqual({
      schedules: { digest: { template: join(cwd, 'plan'), cron: '0 9 * * 1-5', query: 'Todays digest', runs: join(cwd, 'runs') } },
    })
    expect((await vaultplan(['schedule', 'list'], { cwd })).stdout).toBe(
      `digest  '0 9 * * 1-5'  ${join(cwd, 'plan')} -> ${join(cwd, 'runs')}  query: Todays digest\n`,
    )
    expect(await vaultplan(['schedule', 'add', 'x', '--template', 'plan', '--cron', 'daily', '--query', 'q', '--runs', 'runs'], { cwd })).toMatchObject({
      code: 2,
    })
    expect(await vaultplan(['schedule', 'remove', 'digest'], { cwd })).toEqual({ code: 0, stdout: 'removed schedule digest\n', stderr: '' })
    expect((await vaultplan(['schedule', 'list'], { cwd })).stdout).toBe('No schedules.\n')
    expect((await vaultplan(['schedule', 'remove', 'digest'], { cwd })).code).toBe(2)
  })

  test('schedule run runs the schedules in this process: a tick every second, each a new run vault, until Ctrl-C', async () => {
    const model = await startChatServer((request) => `work for ${stepOf(request)}`)
    servers.push(model)
    const cwd = await tempDir()
    await writeVault(template, join(cwd, 'plan'))
    const add = ['schedule', 'add', 'digest', '--template', 'plan', '--cron', '* * * * * *', '--query', 'Todays digest', '--runs', 'runs']
    expect((await vaultplan(add, { cwd })).code).toBe(0)
    const child = spawn(process.execPath, [bin, 'schedule', 'run', '--no-fsync'], {
      cwd,
      env: { PATH: process.env.PATH ?? '', LLM_MODEL: 'm', LLM_BASE_URL: model.url },
    })
    let stdout = ''
    const twice = new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString()
        if (stdout.split('\n').length > 2) resolve()
      }),
    )
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)))
    const asleep = setTimeout(() => child.kill('SIGKILL'), 90_000)
    await Promise.race([twice, exited])
    child.kill('SIGINT')
    expect(await exited).toBe(0)
    clearTimeout(asleep)
    const lines = stdout.trim().split('\n')
    expect(lines.length).toBeGreaterThanOrEqual(2)
    for (const line of lines) expect(line).toMatch(new RegExp(`^digest: ${join(cwd, 'runs')}/digest-\\d{8}-\\d{6} completed at digest$`))
    expect((await readdir(join(cwd, 'runs'))).length).toBeGreaterThanOrEqual(2)
  })
})
