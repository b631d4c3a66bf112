import { rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { completeStep, nextStep } from 'vaultplan'
import { traceOf } from '../src/mcp/trace-reader.js'
import { note, read, writeVault } from './helpers/vault.js'
import { work } from './helpers/plans.js'

// The MCP server keeps each vault's trace parsed between calls: a trace changed on disk in between
// (by another process's hop, or by a person) is what the next call reads.

const options = { fsync: false }

describe('the traces the MCP server keeps parsed', () => {
  it('follow the trace on disk: appended to, cut by hand, removed', async () => {
    const dir = await writeVault({
      'a.md': note({ front: { type: 'start' }, title: 'A', body: 'Do a.', next: ['[[b]]'] }),
      'b.md': note({ title: 'B', body: 'Do b.', next: ['[[c]]'] }),
      'c.md': note({ title: 'C', body: 'Do c.' }),
    })
    const a = work(await nextStep(dir, { ...options, query: 'q' }))
    const b = work(await completeStep(dir, a.key, { output: 'one' }, options))
    expect((await traceOf(dir))?.records.map((record) => record.node)).toEqual(['a'])
    work(await completeStep(dir, b.key, { output: 'two' }, options))
    expect((await traceOf(dir))?.records.map((record) => record.node)).toEqual(['a', 'b'])
    const trace = await read(dir, '00_plan-trace/trace.md')
    await writeFile(join(dir, '00_plan-trace/trace.md'), trace.slice(0, trace.indexOf('\n', trace.indexOf('vaultplan:hop')) + 1))
    expect((await traceOf(dir))?.records.map((record) => record.node)).toEqual(['a'])
    await rm(join(dir, '00_plan-trace/trace.md'))
    expect(await traceOf(dir)).toBeUndefined()
  })
})
