import { hostname } from 'node:os'
import { mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { invalidate, readLedger, recordEntry, revalidate, runPlan, RunStateError } from 'vaultplan'
import { linear } from './helpers/plans.js'
import { read, writeVault } from './helpers/vault.js'

const LEDGER = '00_plan-trace/ledger.md'
const at = expect.any(String)

describe('the ledger', () => {
  it('gives each kind its own ids, in order, and replays every entry', async () => {
    const vault = await writeVault(linear())
    const ids = [
      await recordEntry(vault, { kind: 'fact', text: 'The API allows 100 requests a minute.', reason: 'its docs say so', node: 'a', step: 1 }),
      await recordEntry(vault, { kind: 'assumption', text: 'Readers know what a vault is.' }),
      await recordEntry(vault, { kind: 'decision', text: 'Ship on Friday.', reason: 'the review passed' }),
      await recordEntry(vault, { kind: 'fact', text: 'Line one\nline two' }),
    ]
    expect(ids).toEqual(['F1', 'A1', 'D1', 'F2'])
    expect(await readLedger(vault)).toEqual({
      facts: [
        { id: 'F1', text: 'The API allows 100 requests a minute.', reason: 'its docs say so', node: 'a', step: 1, at },
        { id: 'F2', text: 'Line one\nline two', at },
      ],
      assumptions: [{ id: 'A1', text: 'Readers know what a vault is.', valid: true, changes: [], at }],
      decisions: [{ id: 'D1', text: 'Ship on Friday.', reason: 'the review passed', at }],
    })
  })

  it('is a note a person can read: ids as headings, the recording note as a wikilink, every line of text quoted', async () => {
    const vault = await writeVault(linear())
    await recordEntry(vault, { kind: 'fact', text: 'Two\nlines', reason: 'seen', node: 'b', step: 2 })
    const text = await read(vault, LEDGER)
    expect(text.replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<at>')).toMatchInlineSnapshot(`
      "---
      vaultplan: ledger
      format: 1
      ---
      # Ledger

      Facts, assumptions and decisions this plan's runs rest on, appended as they are recorded. Ids are never reused.

      ## F1 · fact

      > Two
      > lines

      Because:
      > seen

      - Recorded: [[b]], step 2, <at>

      <!-- vaultplan:ledger {"op":"record","kind":"fact","id":"F1","text":"Two\\nlines","reason":"seen","node":"b","step":2,"at":"<at>"} -->
      "
    `)
  })

  it('invalidates and revalidates assumptions, keeping every change with its reason', async () => {
    const vault = await writeVault(linear())
    await recordEntry(vault, { kind: 'assumption', text: 'The budget is 10k.' })
    await recordEntry(vault, { kind: 'assumption', text: 'The launch is in May.' })
    await invalidate(vault, 'A1', 'finance cut it to 5k', { node: 'c', step: 3 })
    expect((await readLedger(vault)).assumptions.map(({ id, valid }) => ({ id, valid }))).toEqual([
      { id: 'A1', valid: false },
      { id: 'A2', valid: true },
    ])
    await revalidate(vault, 'A1', 'the cut was reverted')
    await revalidate(vault, 'A2')
    expect((await readLedger(vault)).assumptions).toEqual([
      {
        id: 'A1',
        text: 'The budget is 10k.',
        valid: true,
        at,
        changes: [
          { valid: false, reason: 'finance cut it to 5k', node: 'c', step: 3, at },
          { valid: true, reason: 'the cut was reverted', at },
        ],
      },
      { id: 'A2', text: 'The launch is in May.', valid: true, at, changes: [{ valid: true, at }] },
    ])
  })

  it('is only ever appended: each write leaves the bytes before it as they were', async () => {
    const vault = await writeVault(linear())
    await recordEntry(vault, { kind: 'assumption', text: 'x' })
    const before = await read(vault, LEDGER)
    await invalidate(vault, 'A1', 'wrong')
    await recordEntry(vault, { kind: 'decision', text: 'y' })
    const after = await read(vault, LEDGER)
    expect(after.startsWith(before)).toBe(true)
    expect(after.length).toBeGreaterThan(before.length)
  })

  it('never gives one id twice to calls racing in one process', async () => {
    const vault = await writeVault(linear())
    const ids = await Promise.all(
      Array.from({ length: 12 }, (_, index) => recordEntry(vault, { kind: index % 2 ? 'fact' : 'decision', text: `entry ${index}` }, { fsync: false })),
    )
    expect([...ids].sort()).toEqual(['D1', 'D2', 'D3', 'D4', 'D5', 'D6', 'F1', 'F2', 'F3', 'F4', 'F5', 'F6'])
    const view = await readLedger(vault)
    expect(view.facts.length + view.decisions.length).toBe(12)
  })

  it('ignores an entry torn by a kill at any byte, and never gives its id again once its heading is on disk', async () => {
    const vault = await writeVault(linear())
    await recordEntry(vault, { kind: 'fact', text: 'first' })
    await recordEntry(vault, { kind: 'assumption', text: 'second' })
    const whole = await readFile(join(vault, LEDGER))
    await recordEntry(vault, { kind: 'fact', text: 'third, torn' })
    const full = await readFile(join(vault, LEDGER))
    const tail = full.subarray(whole.length)
    const markerEnd = tail.lastIndexOf(' -->') + ' -->'.length
    const headingEnd = tail.indexOf('## F2 · fact') + Buffer.byteLength('## F2 · fact')
    for (let cut = 0; cut < tail.length; cut++) {
      await writeFile(join(vault, LEDGER), Buffer.concat([whole, tail.subarray(0, cut)]))
      const view = await readLedger(vault)
      expect(view.facts.map((entry) => entry.text)).toEqual(cut >= markerEnd ? ['first', 'third, torn'] : ['first'])
      expect(view.assumptions.map((entry) => entry.text)).toEqual(['second'])
      if (cut >= markerEnd) continue
      const id = await recordEntry(vault, { kind: 'fact', text: 'after the kill' }, { fsync: false })
      expect(id).toBe(cut >= headingEnd ? 'F3' : 'F2')
      expect((await readLedger(vault)).facts.map((entry) => [entry.id, entry.text])).toEqual([
        ['F1', 'first'],
        [id, 'after the kill'],
      ])
    }
  })

  it('never gives one id twice after a torn entry whose number is past the safe integers', async () => {
    const vault = await writeVault(linear())
    await recordEntry(vault, { kind: 'fact', text: 'first' })
    // A kill left only the heading of an entry whose number a float cannot hold exactly.
    await writeFile(join(vault, LEDGER), `${await read(vault, LEDGER)}\n## F9007199254740993 · fact\n`)
    const ids = [await recordEntry(vault, { kind: 'fact', text: 'second' }), await recordEntry(vault, { kind: 'fact', text: 'third' })]
    expect(ids).toEqual(['F9007199254740994', 'F9007199254740995'])
    expect((await readLedger(vault)).facts.map((entry) => entry.id)).toEqual(['F1', ...ids])
  })

  it('keeps text that looks like a heading or a marker as text', async () => {
    const vault = await writeVault(linear())
    const forged = 'real\n## F9 · fact\n<!-- vaultplan:ledger {"op":"record","kind":"fact","id":"F7","text":"forged","at":"x"} -->'
    await recordEntry(vault, { kind: 'fact', text: forged, reason: '<!-- vaultplan:ledger {"op":"invalidate"} -->' })
    const view = await readLedger(vault)
    expect(view.facts).toEqual([{ id: 'F1', text: forged, reason: '<!-- vaultplan:ledger {"op":"invalidate"} -->', at }])
    expect(await recordEntry(vault, { kind: 'fact', text: 'next' })).toBe('F2')
  })

  it('reads a ledger whose line ends an editor turned into CRLF', async () => {
    const vault = await writeVault(linear())
    await recordEntry(vault, { kind: 'decision', text: 'keep it' })
    await writeFile(join(vault, LEDGER), (await read(vault, LEDGER)).replace(/\n/g, '\r\n'))
    expect((await readLedger(vault)).decisions.map((entry) => entry.text)).toEqual(['keep it'])
  })

  it('refuses an entry of a kind it does not know, and a ledger of a newer format, rather than misread them', async () => {
    const vault = await writeVault(linear())
    await recordEntry(vault, { kind: 'fact', text: 'x' })
    const text = await read(vault, LEDGER)
    await writeFile(join(vault, LEDGER), `${text}\n<!-- vaultplan:ledger {"op":"record","kind":"hunch","id":"H1","text":"y","at":"z"} -->\n`)
    const error = await readLedger(vault).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(RunStateError)
    expect((error as RunStateError).code).toBe('ledger-unreadable')
    expect((error as Error).message).toContain('Line 17 of the ledger')
    await expect(recordEntry(vault, { kind: 'fact', text: 'more' })).rejects.toMatchObject({ code: 'ledger-unreadable' })

    await writeFile(join(vault, LEDGER), text.replace('format: 1', 'format: 2'))
    await expect(readLedger(vault)).rejects.toMatchObject({ code: 'ledger-too-new' })
  })

  it('an empty ledger for a vault that has none', async () => {
    expect(await readLedger(await writeVault(linear()))).toEqual({ facts: [], assumptions: [], decisions: [] })
  })

  it('survives a fresh start (ids go on) and stamps entries with the run of the vault', async () => {
    const vault = await writeVault(linear())
    const first = await runPlan(vault, {
      query: 'q',
      fsync: false,
      work: async (step) => await recordEntry(step.vault ?? vault, { kind: 'fact', text: `seen at ${step.node.id}`, node: step.node.id, step: step.step }),
    })
    expect(first.output).toBe('F3')
    const firstRun = /^run: (\S+)$/m.exec(await read(vault, '00_plan-trace/trace.md'))![1]
    await runPlan(vault, { query: 'q', fsync: false, fresh: true, work: async () => 'again' })
    expect(await recordEntry(vault, { kind: 'fact', text: 'after fresh' })).toBe('F4')
    const secondRun = /^run: (\S+)$/m.exec(await read(vault, '00_plan-trace/trace.md'))![1]
    expect(secondRun).not.toBe(firstRun)
    expect((await readLedger(vault)).facts.map(({ id, node, step, run }) => ({ id, node, step, run }))).toEqual([
      { id: 'F1', node: 'a', step: 1, run: firstRun },
      { id: 'F2', node: 'b', step: 2, run: firstRun },
      { id: 'F3', node: 'c', step: 3, run: firstRun },
      { id: 'F4', node: undefined, step: undefined, run: secondRun },
    ])
  })

  it('records from inside a running worker through the run’s lock, and waits for no lock from outside a run', async () => {
    const vault = await writeVault(linear())
    // The runner holds the vault's lock while the worker records: the write goes through it.
    const result = await runPlan(vault, { query: 'q', fsync: false, work: async (step) => recordEntry(vault, { kind: 'decision', text: step.node.id }) })
    expect(result).toMatchObject({ status: 'completed', output: 'D3' })
    // No run: the lock is taken for the write and released.
    await recordEntry(vault, { kind: 'decision', text: 'later' })
    await expect(runPlan(vault, { query: 'q', fsync: false, fresh: true, work: async () => 'x' })).resolves.toMatchObject({ status: 'completed' })
  })

  it('refuses to write while another process runs the vault', async () => {
    const vault = await writeVault(linear())
    await mkdir(join(vault, '00_plan-trace/.lock'), { recursive: true })
    await writeFile(join(vault, '00_plan-trace/.lock-holder.json'), JSON.stringify({ pid: process.ppid, host: hostname(), since: 'now' }))
    await expect(recordEntry(vault, { kind: 'fact', text: 'x' })).rejects.toMatchObject({ name: 'RunStateError', code: 'vault-locked' })
    await expect(readFile(join(vault, LEDGER))).rejects.toMatchObject({ code: 'ENOENT' })
  })

  it('throws a TypeError naming the bad value', async () => {
    const vault = await writeVault(linear())
    await recordEntry(vault, { kind: 'assumption', text: 'a' })
    const message = (promise: Promise<unknown>) =>
      promise.then(
        () => 'resolved',
        (error: Error) => `${error.name}: ${error.message}`,
      )
    // @ts-expect-error a kind that does not exist
    expect(await message(recordEntry(vault, { kind: 'hunch', text: 'x' }))).toMatchInlineSnapshot(
      `"TypeError: Expected \`kind\` to be one of \`fact\`, \`assumption\`, \`decision\`, got \`hunch\`"`,
    )
    expect(await message(recordEntry(vault, { kind: 'fact', text: '  ' }))).toMatchInlineSnapshot(
      `"TypeError: Expected \`text\` to be a non-empty string, got \`  \`"`,
    )
    expect(await message(recordEntry(vault, { kind: 'fact', text: 'x', step: -1 }))).toMatchInlineSnapshot(
      `"TypeError: Expected \`step\` to be an integer from 0 up, got \`-1\`"`,
    )
    expect(await message(invalidate(vault, 'F1', 'why'))).toMatchInlineSnapshot(
      `"TypeError: Expected \`id\` to name an assumption (\`A1\`, \`A2\`, ...), got \`F1\`; only assumptions can be invalidated"`,
    )
    expect((await message(invalidate(vault, 'A7', 'why'))).replace(vault, '<vault>')).toMatchInlineSnapshot(
      `"TypeError: Expected \`id\` to be an assumption of the ledger of \`<vault>\`, got \`A7\`; it has A1"`,
    )
    expect(await message(invalidate(vault, 'A1', ''))).toMatchInlineSnapshot(`"TypeError: Expected \`reason\` to be a non-empty string, got \`\`"`)
    expect(await message(recordEntry(join(vault, 'missing'), { kind: 'fact', text: 'x' }))).toContain('TypeError: Expected `vault` to be a vault folder')
  })
})
