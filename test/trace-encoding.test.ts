import { readFile, truncate, writeFile } from 'node:fs/promises'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseTrace, TraceAppender, tracePaths, writeTraceHeader, type HopRecord } from '../src/store/trace.js'
import { tempDir } from './helpers/vault.js'

const MARKER = '<!-- vaultplan:hop '
const header = { run: 'r1', format: 2, query: 'q', started: '2026-12-01T00:00:00.000Z' }

/** Text that tries to break out: line breaks of every kind, markers, comment ends, headings, quotes, control characters. */
const hostile = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 40 }),
  fc
    .array(
      fc.constantFrom(
        '\n',
        '\r',
        '\r\n',
        '\u2028',
        '\u0085',
        '\v',
        '\f',
        '-->',
        '<!--',
        MARKER,
        '{"kind":"hop","step":9,"node":"x","visit":1,"edge":null,"decidedBy":"terminal","next":null,"output":"x"} -->',
        '## Step 9 · [[x]] · visit 1',
        '> ',
        '- Decided by: a person',
        ']]',
        '|',
        '`',
        '\u001b]52;c;aGk=\u0007',
        'text',
      ),
      { maxLength: 12 },
    )
    .map((parts) => parts.join('')),
)

const hop = fc.record({
  node: hostile,
  label: hostile,
  target: hostile,
  output: hostile,
  choice: fc.option(hostile, { nil: undefined }),
  rationale: hostile,
})

function record(step: number, values: { node: string; label: string; target: string; output: string; choice: string | undefined }): HopRecord {
  return {
    kind: 'hop',
    step,
    node: values.node,
    visit: 1,
    edge: { label: values.label, target: values.target, conditional: true },
    decidedBy: values.choice === undefined ? 'llm' : 'agent',
    next: values.target,
    output: values.output,
    ...(values.choice !== undefined && { choice: values.choice }),
  }
}

async function traceWith(entries: { record: HopRecord; rationale: string }[], vault?: string): Promise<string> {
  const dir = vault ?? (await tempDir())
  if (!vault) await writeTraceHeader(dir, header, { fsync: false })
  const appender = await TraceAppender.open(dir, { fsync: false })
  for (const entry of entries) await appender.append(entry.record, entry.rationale)
  await appender.close()
  return dir
}

describe('every value that reaches the trace is encoded (the class: names, labels, outputs, choices, model text)', () => {
  it('any values read back as the records written, and render as one heading, list lines, quoted lines and one marker per entry', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(hop, { minLength: 1, maxLength: 4 }), async (hops) => {
        const entries = hops.map((values, index) => ({ record: record(index + 1, values), rationale: values.rationale }))
        const dir = await traceWith(entries)
        const text = await readFile(tracePaths(dir).trace, 'utf8')
        expect(parseTrace(dir, text).trace.records).toEqual(entries.map((entry) => entry.record))
        const intro = 'One section per hop, appended as the run goes.\n'
        const body = text.slice(text.indexOf(intro) + intro.length)
        const lines = body.split(/\r\n|[\r\n\v\f\u0085\u2028\u2029]/)
        expect(lines.filter((line) => line.startsWith('#'))).toHaveLength(entries.length)
        expect(lines.filter((line) => line.startsWith('<!--'))).toHaveLength(entries.length)
        expect(lines.filter((line) => line.startsWith(MARKER) && line.endsWith(' -->'))).toHaveLength(entries.length)
        for (const line of lines) expect(line === '' || /^(## |- |> |<!-- vaultplan:hop \{)/.test(line)).toBe(true)
        // No raw control character reaches a line a person reads (the marker's JSON escapes its own).
        // eslint-disable-next-line no-control-regex
        expect(body).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/)
      }),
      { numRuns: 150 },
    )
  })

  it('a marker line cut at any byte by a power cut hides nothing appended after it, and is never read as a record', async () => {
    const first = { record: record(1, { node: 'a', label: 'yes', target: 'b', output: 'outputs/0001-a.md', choice: undefined }), rationale: 'Fine.' }
    const second = { record: record(2, { node: 'b', label: 'yes', target: 'c', output: 'outputs/0002-b.md', choice: undefined }), rationale: 'Good.' }
    const dir = await traceWith([first, second])
    const path = tracePaths(dir).trace
    const whole = await readFile(path, 'utf8')
    const markerAt = whole.lastIndexOf(MARKER)
    const end = Buffer.byteLength(whole.slice(0, whole.lastIndexOf(' -->')))
    // Every cut inside the second entry's marker line, short of its ` -->`.
    for (let cut = Buffer.byteLength(whole.slice(0, markerAt)) + 4; cut < end; cut++) {
      await writeFile(path, whole)
      await truncate(path, cut)
      const resumed = { record: record(2, { node: 'b', label: 'no', target: 'd', output: 'outputs/0002-b.md', choice: undefined }), rationale: 'Again.' }
      await traceWith([resumed], dir)
      const text = await readFile(path, 'utf8')
      expect(parseTrace(dir, text).trace.records).toEqual([first.record, resumed.record])
      // The resumed entry's heading stands outside any open HTML comment.
      const before = text.slice(0, text.lastIndexOf('## Step 2'))
      expect(before.lastIndexOf('<!--') < before.lastIndexOf('-->')).toBe(true)
    }
  })
})
