import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { runPlan } from 'vaultplan'
import { TRACE_FORMAT } from '../src/store/trace.js'
import { vaultplan } from './helpers/cli.js'
import { linear } from './helpers/plans.js'
import { scriptedWorker } from './helpers/scripted.js'
import { writeVault } from './helpers/vault.js'

// These tests run the built CLI (`npm test` builds first).
describe('--json: a vault that needs a person is one error line with its code and data', () => {
  test('run --json with another query than the recorded one', async () => {
    const vault = await writeVault(linear())
    await runPlan(vault, { query: 'first', work: scriptedWorker(), fsync: false })
    const run = await vaultplan(['run', vault, '--query', 'second', '--json'], { env: {} })
    expect(run.code).toBe(1)
    expect(JSON.parse(run.stdout)).toEqual({
      name: 'RunStateError',
      code: 'query-mismatch',
      message: expect.stringContaining('fresh: true'),
      data: { recorded: 'first' },
    })
  })

  test('status --json of a trace written by a newer vaultplan, the message still on stderr', async () => {
    const vault = await writeVault(linear())
    await mkdir(join(vault, '00_plan-trace'))
    await writeFile(join(vault, '00_plan-trace/trace.md'), '---\nvaultplan: trace\nrun: r\nformat: 99\nquery: q\n---\n')
    const status = await vaultplan(['status', vault, '--json'])
    expect(status.code).toBe(1)
    expect(JSON.parse(status.stdout)).toEqual({
      name: 'RunStateError',
      code: 'trace-too-new',
      message: expect.stringContaining('format 99'),
      data: { file: join(vault, '00_plan-trace/trace.md'), format: 99, supported: TRACE_FORMAT },
    })
    expect(status.stderr).toContain('format 99')
  })

  test('ledger --json of a ledger this version cannot read', async () => {
    const vault = await writeVault({ ...linear(), '00_plan-trace/ledger.md': '# My own ledger\n' })
    const ledger = await vaultplan(['ledger', vault, '--json'])
    expect(ledger.code).toBe(1)
    expect(JSON.parse(ledger.stdout)).toEqual({
      name: 'RunStateError',
      code: 'ledger-unreadable',
      message: expect.stringContaining('no vaultplan header'),
      data: { file: join(vault, '00_plan-trace/ledger.md') },
    })
  })
})
