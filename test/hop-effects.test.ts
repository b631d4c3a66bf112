import { describe, expect, it } from 'vitest'
import { PlanGraph } from 'vaultplan'
import { effectsOf, type Effect, type HopEvent } from '../src/run/core/hop-effects.js'
import { standOf, type VaultRecords } from '../src/run/core/vault-stand.js'
import type { OutputMeta } from '../src/store/output-note.js'
import type { HopRecord, TraceHeader, TraceRecord } from '../src/store/trace.js'
import { hop, vault, type NoteSpec } from './helpers/records.js'

/*
 * What a hop writes, decided by a pure function (SPEC section 15, "The
 * decision is pure"), by tables: the effects of each event, and every crash
 * point between two of them. A crash is modelled by applying the first k
 * effects to the records as they would be read off disk; the next call must
 * then resume the same visit (never a second visit, never a lost tick) and,
 * with its recovery's effects, reach what the hop would have written whole.
 */

const header: TraceHeader = { run: 'run1', format: 2, query: 'q', started: 't0' }
const meta = (node: string, step: number): OutputMeta => ({ run: 'run1', step, node, visit: 1 })
const file = (node: string, step: number) => `outputs/${String(step).padStart(4, '0')}-${node}.md`

/** The disk, modelled: each effect changes the records a later call reads, as its write changes the files. */
function apply(records: VaultRecords, effect: Effect): VaultRecords {
  switch (effect.kind) {
    case 'header':
      return { ...records, trace: { header: effect.header, records: [] } }
    case 'claim':
      return { ...records, trace: { ...records.trace!, claims: [...(records.trace!.claims ?? []), effect.claim] } }
    case 'status':
    case 'empty-boxes': {
      const nodes = [...records.graph.nodes.values()].map((each) =>
        each.id !== effect.node
          ? each
          : effect.kind === 'status'
            ? { ...each, status: effect.status }
            : { ...each, edges: each.edges.map((edge) => ({ ...edge })) },
      )
      return { ...records, graph: new PlanGraph(nodes) }
    }
    case 'output':
      return { ...records, pending: { ...effect.meta, output: effect.output, whole: true, file: effect.file } }
    case 'record':
      return { ...records, trace: { header: records.trace!.header, records: [...records.trace!.records, effect.record] } }
    case 'final':
      return { ...records, final: effect.output }
  }
}

const applyAll = (records: VaultRecords, effects: Effect[]) => effects.reduce(apply, records)
const statusOf = (records: VaultRecords, id: string) => records.graph.nodes.get(id)?.status
const positionOf = (records: VaultRecords) => {
  const position = standOf(records, 50).position
  if (!position) return undefined
  if (position.kind === 'work') return { kind: position.kind, node: position.node, visit: position.visit, claimed: position.claimed }
  if (position.kind === 'judge' || position.kind === 'decide') return { kind: position.kind, node: position.node, visit: position.visit }
  return { kind: position.kind }
}

/** The events of one hop of `node` (visit 1, step `step`) to `next` (`null`: the terminal), as the driver tells them. */
function hopEvents(records: VaultRecords, node: string, step: number, next: string | null, waits = false): HopEvent[] {
  const record: TraceRecord = waits ? { kind: 'waiting', step, node, visit: 1 } : hop(step, node, next)
  return [
    {
      type: 'claim',
      node,
      header: records.trace ? undefined : header,
      claim: { kind: 'claim', step, node, visit: 1 },
      active: statusOf(records, node) === 'active',
    },
    { type: 'worked', node, file: file(node, step), meta: meta(node, step), output: `out ${node}` },
    { type: 'judged', record, rationale: 'why', waits, output: `out ${node}` },
  ]
}

/** The effects of a series of events, each decided where the run then stands. */
function effectsOfAll(records: VaultRecords, events: HopEvent[]): Effect[] {
  const effects: Effect[] = []
  for (const event of events) {
    const stand = standOf(records, 50)
    const next = effectsOf(stand.position, stand.replay.lastRecord, event)
    effects.push(...next)
    records = applyAll(records, next)
  }
  return effects
}

/** A call after a crash: the recovery effects where the run stands (as `RunDriver.next` performs them). */
function recover(records: VaultRecords): VaultRecords {
  const stand = standOf(records, 50)
  const last = stand.replay.lastRecord
  const node = stand.position && 'node' in stand.position ? stand.position.node : last?.node
  const status = last?.kind === 'hop' && last.decidedBy === 'human' ? statusOf(records, last.node) : node === undefined ? undefined : statusOf(records, node)
  return applyAll(records, effectsOf(stand.position, last, { type: 'recover', status }))
}

const path = { a: { start: true, next: ['b'] }, b: { next: ['c'] }, c: {} } satisfies Record<string, NoteSpec>

describe('effectsOf: what each event of a hop writes, in order', () => {
  it.each([
    {
      name: 'the first claim of a run: the header, then `active`',
      event: { type: 'claim', node: 'a', header, active: false } as HopEvent,
      expected: [
        { kind: 'header', header },
        { kind: 'status', node: 'a', status: 'active' },
      ],
    },
    {
      name: 'a claim of a note already `active` (a crash, or a person set it): nothing',
      event: { type: 'claim', node: 'a', active: true } as HopEvent,
      expected: [],
    },
    {
      name: 'a visit worked: its output, then `done`',
      event: { type: 'worked', node: 'a', file: file('a', 1), meta: meta('a', 1), output: 'x' } as HopEvent,
      expected: [
        { kind: 'output', node: 'a', file: file('a', 1), meta: meta('a', 1), output: 'x' },
        { kind: 'status', node: 'a', status: 'done' },
      ],
    },
    {
      name: 'a transition judged: its record',
      event: { type: 'judged', record: hop(1, 'a', 'b'), rationale: 'r', waits: false, output: 'x' } as HopEvent,
      expected: [{ kind: 'record', record: hop(1, 'a', 'b'), rationale: 'r', output: 'x' }],
    },
    {
      name: 'the terminal judged: its record, then the final answer',
      event: { type: 'judged', record: hop(3, 'c', null), rationale: 'r', waits: false, output: 'x' } as HopEvent,
      expected: [
        { kind: 'record', record: hop(3, 'c', null), rationale: 'r', output: 'x' },
        { kind: 'final', node: 'c', output: 'x' },
      ],
    },
    {
      name: 'a note that waits for a person: boxes cleared, `waiting`, then the record',
      event: { type: 'judged', record: { kind: 'waiting', step: 1, node: 'a', visit: 1 }, rationale: '', waits: true, output: 'x' } as HopEvent,
      expected: [
        { kind: 'empty-boxes', node: 'a' },
        { kind: 'status', node: 'a', status: 'waiting' },
        { kind: 'record', record: { kind: 'waiting', step: 1, node: 'a', visit: 1 }, rationale: '', output: 'x' },
      ],
    },
    {
      name: 'a person’s decision: the record first (a tick is never lost), then boxes cleared and `done`',
      event: {
        type: 'decided',
        record: hop(1, 'a', 'b', { decidedBy: 'human' } as Partial<HopRecord>) as HopRecord,
        rationale: 'r',
        output: 'x',
        handed: '',
      } as HopEvent,
      expected: [
        { kind: 'record', record: hop(1, 'a', 'b', { decidedBy: 'human' } as Partial<HopRecord>), rationale: 'r', output: 'x' },
        { kind: 'empty-boxes', node: 'a' },
        { kind: 'status', node: 'a', status: 'done' },
      ],
    },
    {
      name: 'a person’s decision with feedback: the boxes cleared and the feedback marked handed on at the decision’s step, in one edit',
      event: {
        type: 'decided',
        record: hop(3, 'a', 'b', { decidedBy: 'human', feedback: 'Ship it.' } as Partial<HopRecord>) as HopRecord,
        rationale: 'Feedback:\nShip it.',
        output: 'x',
        handed: 'Ship it.',
      } as HopEvent,
      expected: [
        {
          kind: 'record',
          record: hop(3, 'a', 'b', { decidedBy: 'human', feedback: 'Ship it.' } as Partial<HopRecord>),
          rationale: 'Feedback:\nShip it.',
          output: 'x',
        },
        { kind: 'empty-boxes', node: 'a', handed: { text: 'Ship it.', step: 3 } },
        { kind: 'status', node: 'a', status: 'done' },
      ],
    },
    {
      name: 'a budget stop not recorded yet: its record',
      event: { type: 'stopped', record: { kind: 'stop', step: 2, node: 'c', visit: 1, budget: 'maxSteps', reason: 'no steps' }, recorded: false } as HopEvent,
      expected: [{ kind: 'record', record: { kind: 'stop', step: 2, node: 'c', visit: 1, budget: 'maxSteps', reason: 'no steps' }, rationale: 'no steps' }],
    },
    {
      name: 'a budget stop the trace records already: nothing',
      event: { type: 'stopped', record: { kind: 'stop', step: 2, node: 'c', visit: 1, budget: 'maxSteps', reason: 'no steps' }, recorded: true } as HopEvent,
      expected: [],
    },
    {
      name: 'the run finished, `final.md` missing: it is written',
      event: { type: 'finished', node: 'c', output: 'x', written: false } as HopEvent,
      expected: [{ kind: 'final', node: 'c', output: 'x' }],
    },
    { name: 'the run finished, `final.md` there: nothing', event: { type: 'finished', node: 'c', output: 'x', written: true } as HopEvent, expected: [] },
  ])('$name', ({ event, expected }) => {
    expect(effectsOf(undefined, undefined, event)).toEqual(expected)
  })

  it('a claim that takes a number: `active` first, then the number (a number in the trace is always a claimed visit’s)', () => {
    const claim = { kind: 'claim' as const, step: 3, node: 'a', visit: 1 }
    expect(effectsOf(undefined, undefined, { type: 'claim', node: 'a', claim, active: false })).toEqual([
      { kind: 'status', node: 'a', status: 'active' },
      { kind: 'claim', claim },
    ])
  })

  it('recovery: a decision recorded while its note still waits is finished; an output saved while its note is `active` marks it `done`', () => {
    const decided = hop(1, 'a', 'b', { decidedBy: 'human' } as Partial<HopRecord>)
    expect(effectsOf(undefined, decided, { type: 'recover', status: 'waiting' })).toEqual([
      { kind: 'empty-boxes', node: 'a' },
      { kind: 'status', node: 'a', status: 'done' },
    ])
    expect(effectsOf(undefined, decided, { type: 'recover', status: 'done' })).toEqual([])
    const saved = { kind: 'judge' as const, node: 'a', visit: 1, step: 1, saved: { ...meta('a', 1), output: 'x', whole: true, file: file('a', 1) } }
    expect(effectsOf(saved, undefined, { type: 'recover', status: 'active' })).toEqual([{ kind: 'status', node: 'a', status: 'done' }])
    expect(effectsOf(saved, undefined, { type: 'recover', status: 'done' })).toEqual([])
  })
})

describe('a crash between any two effects of a hop: the next call resumes the same visit', () => {
  /** Every prefix of a hop's effects: where the next call stands, and what its recovery and the rest of the hop leave. */
  function crashPoints(start: VaultRecords, events: HopEvent[]) {
    const effects = effectsOfAll(start, events)
    const whole = applyAll(start, effects)
    return effects.map((_, k) => {
      const crashed = applyAll(start, effects.slice(0, k))
      return { k, after: effects[k - 1]?.kind ?? 'nothing', at: positionOf(crashed), crashed, whole }
    })
  }

  it('a plain hop `a -> b`: before its output is saved the visit is worked again (claimed once it is `active`); after, it is judged, never worked twice', () => {
    const start = vault(path)
    const table = crashPoints(start, hopEvents(start, 'a', 1, 'b')).map(({ after, at }) => [after, at])
    expect(table).toEqual([
      ['nothing', { kind: 'work', node: 'a', visit: 1, claimed: false }],
      ['header', { kind: 'work', node: 'a', visit: 1, claimed: false }],
      ['status', { kind: 'work', node: 'a', visit: 1, claimed: true }],
      ['claim', { kind: 'work', node: 'a', visit: 1, claimed: true }],
      ['output', { kind: 'judge', node: 'a', visit: 1 }],
      ['status', { kind: 'judge', node: 'a', visit: 1 }],
    ])
    const done = applyAll(start, effectsOfAll(start, hopEvents(start, 'a', 1, 'b')))
    expect(positionOf(done)).toEqual({ kind: 'work', node: 'b', visit: 1, claimed: false })
  })

  it('a crash with the output saved and the note still `active`: recovery marks it `done` and judging it writes what the whole hop writes', () => {
    const start = vault(path)
    for (const { k, crashed, whole } of crashPoints(start, hopEvents(start, 'a', 1, 'b'))) {
      const at = positionOf(crashed)
      if (at?.kind !== 'judge') continue
      const recovered = recover(crashed)
      const finished = applyAll(recovered, effectsOfAll(recovered, [hopEvents(start, 'a', 1, 'b')[2]!]))
      expect({ k, statuses: [...finished.graph.nodes.values()].map((each) => each.status), records: finished.trace?.records }).toEqual({
        k,
        statuses: [...whole.graph.nodes.values()].map((each) => each.status),
        records: whole.trace?.records,
      })
    }
  })

  it('a note that waits for a person: every crash before its `waiting` record is judged again, never worked again; after it, it waits', () => {
    const start = vault({ ...path, a: { ...path.a, judge: 'human', status: 'done' }, b: { ...path.b } }, { records: [] })
    const positions = crashPoints(start, hopEvents(start, 'a', 1, 'b', true)).map(({ after, at }) => [after, at])
    expect(positions).toEqual([
      ['nothing', { kind: 'work', node: 'a', visit: 1, claimed: false }],
      ['status', { kind: 'work', node: 'a', visit: 1, claimed: true }],
      ['claim', { kind: 'work', node: 'a', visit: 1, claimed: true }],
      ['output', { kind: 'judge', node: 'a', visit: 1 }],
      ['status', { kind: 'judge', node: 'a', visit: 1 }],
      ['empty-boxes', { kind: 'judge', node: 'a', visit: 1 }],
      ['status', { kind: 'judge', node: 'a', visit: 1 }],
    ])
    const waiting = applyAll(start, effectsOfAll(start, hopEvents(start, 'a', 1, 'b', true)))
    expect(positionOf(waiting)).toEqual({ kind: 'decide', node: 'a', visit: 1 })
    expect(statusOf(waiting, 'a')).toBe('waiting')
  })

  it('a person’s decision cut short after its record: the next call finishes it (boxes cleared, `done`) and goes on to the target', () => {
    const waiting = vault({ ...path, a: { ...path.a, judge: 'human', status: 'waiting' } }, { records: [{ kind: 'waiting', step: 1, node: 'a', visit: 1 }] })
    const decided: HopEvent = {
      type: 'decided',
      record: hop(1, 'a', 'b', { decidedBy: 'human' } as Partial<HopRecord>) as HopRecord,
      rationale: 'r',
      output: 'x',
      handed: '',
    }
    const effects = effectsOfAll(waiting, [decided])
    const whole = applyAll(waiting, effects)
    for (let k = 1; k < effects.length; k++) {
      const recovered = recover(applyAll(waiting, effects.slice(0, k)))
      expect({ k, a: statusOf(recovered, 'a'), at: positionOf(recovered) }).toEqual({ k, a: 'done', at: positionOf(whole) })
    }
    expect(positionOf(whole)).toEqual({ kind: 'work', node: 'b', visit: 1, claimed: false })
  })

  it('inside a subplan: a crash after the branch’s output was saved is judged in the branch, the parent note still working through it', () => {
    const key = 'run1:research:1'
    const branch = vault({ find: { start: true, next: ['sum'], status: 'active' }, sum: {} }, { folder: 'web', records: [], source: key })
    const saved = apply(branch, { kind: 'output', node: 'find', file: file('find', 2), meta: { run: 'sub-web', step: 2, node: 'find', visit: 1 }, output: 'x' })
    const top = vault(
      { a: { start: true, next: ['research'], status: 'done' }, research: { next: ['c'], plan: ['web'], status: 'active' }, c: {} },
      { records: [hop(1, 'a', 'research')], subplans: { web: saved } },
    )
    const stand = standOf(top, 50)
    expect(stand.position).toMatchObject({ kind: 'work', node: 'research', claimed: true })
    expect(stand.items).toEqual([{ kind: 'judge', node: 'web/find', visit: 1, step: 2, plan: 'web' }])
  })
})
