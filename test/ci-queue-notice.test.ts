import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { root } from './helpers/cli.js'
import { requireQueueUnderCi } from './setup/queue-notice.js'

// The queue tests need PostgreSQL. A developer without one is told they did not run; CI without one fails.
describe('a test run that cannot reach PostgreSQL', () => {
  test('fails under CI=true, before any test runs', () => {
    expect(() => requireQueueUnderCi({ CI: 'true' })).toThrow(/CI=true, and the queue tests cannot run/)
    expect(() => requireQueueUnderCi({ CI: '1' })).toThrow(/queue tests cannot run/)
  })

  test('runs on a developer machine (no CI, or CI=false), and under CI with a database', () => {
    expect(() => requireQueueUnderCi({})).not.toThrow()
    expect(() => requireQueueUnderCi({ CI: 'false' })).not.toThrow()
    expect(() => requireQueueUnderCi({ CI: 'true', VAULTPLAN_TEST_PG: 'postgres://127.0.0.1:5432/test' })).not.toThrow()
  })

  test('npm test under CI=true without a database fails, as vitest runs its global setup', async () => {
    const env: Record<string, string> = Object.fromEntries(
      Object.entries(process.env).filter((entry): entry is [string, string] => entry[1] !== undefined && entry[0] !== 'VAULTPLAN_TEST_PG'),
    )
    const ran = await new Promise<{ code: number | null; output: string }>((done) => {
      const args = [join(root, 'node_modules/vitest/vitest.mjs'), 'run', '--project', 'fast', 'test/docs.test.ts']
      execFile(process.execPath, args, { cwd: root, env: { ...env, CI: 'true', NO_COLOR: '1' } }, (error, stdout, stderr) => {
        done({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, output: stdout + stderr })
      })
    })
    expect(ran.code).not.toBe(0)
    expect(ran.output).toContain('CI=true, and the queue tests cannot run')
  }, 60_000)
})
