import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { invalidate, recordEntry } from 'vaultplan'
import { vaultplan } from './helpers/cli.js'
import { linear } from './helpers/plans.js'
import { writeVault } from './helpers/vault.js'

describe('vaultplan ledger', () => {
  it('lists facts, assumptions with their standing, and decisions, each with where it was recorded', async () => {
    const vault = await writeVault(linear())
    await recordEntry(vault, { kind: 'fact', text: 'The venue holds 200.\nIt has a stage.', reason: 'booking page', node: 'a', step: 1 })
    await recordEntry(vault, { kind: 'assumption', text: 'The launch is in May.' })
    await recordEntry(vault, { kind: 'assumption', text: 'Guests come by train.' })
    await invalidate(vault, 'A1', 'moved to June', { node: 'b', step: 2 })
    await recordEntry(vault, { kind: 'decision', text: 'Use the small room.', reason: 'few guests' })
    const run = await vaultplan(['ledger', '.'], { cwd: vault })
    expect(run).toEqual({
      code: 0,
      stderr: '',
      stdout: `.: 1 fact, 2 assumptions (1 valid), 1 decision

Facts:
  F1  The venue holds 200.
      It has a stage.  (a, step 1)
      because: booking page

Assumptions:
  A1  [invalid] The launch is in May.
      invalidated: moved to June  (b, step 2)
  A2  [valid] Guests come by train.

Decisions:
  D1  Use the small room.
      because: few guests
`,
    })
    const json = await vaultplan(['ledger', vault, '--json'])
    expect(json.code).toBe(0)
    const view = JSON.parse(json.stdout) as { facts: { id: string }[]; assumptions: { id: string; valid: boolean }[]; decisions: { id: string }[] }
    expect([view.facts.map((e) => e.id), view.assumptions.map((e) => [e.id, e.valid]), view.decisions.map((e) => e.id)]).toEqual([
      ['F1'],
      [
        ['A1', false],
        ['A2', true],
      ],
      ['D1'],
    ])
  })

  it('says when nothing is recorded, exits 1 for an unreadable ledger and 2 for a folder that is not there', async () => {
    const vault = await writeVault(linear())
    const empty = await vaultplan(['ledger', vault])
    expect(empty.code).toBe(0)
    expect(empty.stdout).toContain('0 facts, 0 assumptions (0 valid), 0 decisions')
    await writeVault({ '00_plan-trace/ledger.md': '# my own notes\n' }, vault)
    const unreadable = await vaultplan(['ledger', vault])
    expect(unreadable.code).toBe(1)
    expect(unreadable.stderr).toContain('has no vaultplan header')
    const missing = await vaultplan(['ledger', join(vault, 'nope')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain('does not exist')
  })
})
