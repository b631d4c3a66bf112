import { describe, expect, test } from 'vitest'
import { vaultplan } from './helpers/cli.js'

// What the queue commands say before they touch a database (the queue itself is tested in test/queue*.test.ts).
describe('vaultplan worker and queue, on a wrong command line', () => {
  test('worker without a queue URL is a usage error naming the option and the variable', async () => {
    const run = await vaultplan(['worker'], { env: { LLM_MODEL: 'm', LLM_BASE_URL: 'http://127.0.0.1:9' } })
    expect(run.code).toBe(2)
    expect(run.stderr).toBe(
      "vaultplan: missing --queue <postgres url> (or set VAULTPLAN_QUEUE)\nUsage: vaultplan worker --queue <postgres url> [--concurrency N] [options]\nRun 'vaultplan worker --help' for details.\n",
    )
  })

  test('a concurrency that is no whole number from 1 up is refused', async () => {
    const run = await vaultplan(['worker', '--queue', 'postgres://127.0.0.1:9/x', '--concurrency', '0'], { env: {} })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("vaultplan: --concurrency takes an integer from 1 up, got '0'\n")
  })

  test('a queue that is no postgres URL is refused, its password not shown', async () => {
    const run = await vaultplan(['queue', 'status', '--queue', 'mysql://me:secret@host/db'], { env: {} })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("vaultplan: --queue takes a postgres:// URL, got 'mysql://me:***@host/db'\n")
  })

  test('without a model in the environment the worker stops at once and says which variables to set', async () => {
    const run = await vaultplan(['worker', '--queue', 'postgres://127.0.0.1:9/x'], { env: {} })
    expect(run.code).toBe(2)
    expect(run.stderr).toMatch(/^vaultplan: .*LLM_MODEL/)
  })

  test("'queue' wants its subcommand", async () => {
    const run = await vaultplan(['queue', '--queue', 'postgres://127.0.0.1:9/x'], { env: {} })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain("vaultplan: missing subcommand: 'queue status'\n")
  })

  test('the help lists both commands', async () => {
    const run = await vaultplan(['--help'], { env: {} })
    expect(run.stdout).toMatch(/\n {2}worker {9}work hops of queued runs/)
    expect(run.stdout).toMatch(/\n {2}queue {10}show the run queue/)
  })
})

describe('vaultplan worker and queue, without a database to reach', () => {
  test('a queue nobody listens on is one line, exit 1, without the password', async () => {
    const run = await vaultplan(['queue', 'status', '--queue', 'postgres://me:secret@127.0.0.1:9/none'], { env: {} })
    expect(run).toEqual({
      code: 1,
      stdout: '',
      stderr: expect.stringMatching(/^vaultplan: cannot use the queue at postgres:\/\/me:\*\*\*@127\.0\.0\.1:9\/none: .*ECONNREFUSED.*\n$/),
    })
  })
})
