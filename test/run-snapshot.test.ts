import { describe, expect, it } from 'vitest'
import type { NodeStatus } from 'vaultplan'
import { snapshotOf, type RunSnapshot } from '../src/run/core/run-snapshot.js'
import type { TraceRecord } from '../src/store/trace.js'
import { hop, vault, type NoteSpec } from './helpers/records.js'

/*
 * The pure decision of where a run stands (SPEC section 15), by tables of
 * records as they would be read off disk: no disk, no clock.
 */

const options = { maxSteps: 50, hops: 5 }
const pick = (snapshot: RunSnapshot) => ({ phase: snapshot.phase, steps: snapshot.steps, frontier: snapshot.frontier, waiting: snapshot.waiting })

const path = { a: { start: true, next: ['b'] }, b: { next: ['c'] }, c: {} } satisfies Record<string, NoteSpec>

describe('snapshotOf: where a run stands, from its records alone', () => {
  it.each([
    {
      name: 'fresh: the start note is the frontier',
      records: vault(path),
      expected: { phase: 'fresh', steps: 0, frontier: [{ kind: 'work', node: 'a', visit: 1, step: 1 }], waiting: [] },
    },
    {
      name: 'ready after a hop: the target is next',
      records: vault({ ...path, a: { ...path.a, status: 'done' } }, { records: [hop(1, 'a', 'b')] }),
      expected: { phase: 'ready', steps: 1, frontier: [{ kind: 'work', node: 'b', visit: 1, step: 2 }], waiting: [] },
    },
    {
      name: 'a claimed visit (the note active) is worked again, same step',
      records: vault({ ...path, a: { ...path.a, status: 'done' }, b: { ...path.b, status: 'active' } }, { records: [hop(1, 'a', 'b')] }),
      expected: { phase: 'ready', steps: 1, frontier: [{ kind: 'work', node: 'b', visit: 1, step: 2 }], waiting: [] },
    },
    {
      name: 'completed: no frontier',
      records: vault(path, { records: [hop(1, 'a', 'b'), hop(2, 'b', 'c'), hop(3, 'c', null)] }),
      expected: { phase: 'completed', steps: 3, frontier: [], waiting: [] },
    },
    {
      name: 'waiting: a human note after its work',
      records: vault(
        { a: { start: true, next: ['b'] }, b: { judge: 'human', status: 'waiting', next: ['ok -> c', 'again -> a'] }, c: {} },
        { records: [hop(1, 'a', 'b'), { kind: 'waiting', step: 2, node: 'b', visit: 1 }] },
      ),
      expected: { phase: 'waiting', steps: 2, frontier: [], waiting: [{ kind: 'human', node: 'b', file: 'b.md', choices: ['ok', 'again'] }] },
    },
    {
      name: 'stopped: the budget refuses the next visit',
      records: vault(path, { records: [hop(1, 'a', 'b'), hop(2, 'b', 'c')] }),
      maxSteps: 2,
      expected: { phase: 'stopped', steps: 2, frontier: [], waiting: [] },
    },
    {
      name: 'a stop observed with a larger budget is ready',
      records: vault(path, {
        records: [hop(1, 'a', 'b'), hop(2, 'b', 'c'), { kind: 'stop', step: 2, node: 'c', visit: 1, budget: 'maxSteps', reason: 'Budget stop' }],
      }),
      maxSteps: 10,
      expected: { phase: 'ready', steps: 2, frontier: [{ kind: 'work', node: 'c', visit: 1, step: 3 }], waiting: [] },
    },
    {
      name: 'two active notes: invalid',
      records: vault({ ...path, b: { ...path.b, status: 'active' }, c: { status: 'active' } }, { records: [hop(1, 'a', 'b')] }),
      expected: { phase: 'invalid', steps: 1, frontier: [], waiting: [] },
    },
  ])('$name', ({ records, maxSteps, expected }) => {
    expect(pick(snapshotOf('v', records, { ...options, maxSteps: maxSteps ?? 50 }))).toEqual(expected)
  })

  it.each([
    {
      ticked: [],
      expected: {
        phase: 'waiting',
        steps: 0,
        frontier: [],
        waiting: [{ node: 'proposal', file: '00_plan-trace/proposal.md', kind: 'proposal', choices: ['approve', 'revise', 'decline'] }],
      },
    },
    { ticked: ['revise'], expected: { phase: 'ready', steps: 0, frontier: [{ kind: 'plan', node: 'proposal', visit: 1, step: 1 }], waiting: [] } },
    { ticked: ['approve'], expected: { phase: 'fresh', steps: 0, frontier: [{ kind: 'work', node: 'a', visit: 1, step: 1 }], waiting: [] } },
    { ticked: ['decline'], expected: { phase: 'declined', steps: 0, frontier: [], waiting: [] } },
  ] as const)('a proposal with $ticked ticked', ({ ticked, expected }) => {
    const records = { ...vault(path), proposal: { version: 1, status: 'pending' as const, query: 'q', notes: [], ticked: [...ticked], boxes: {} } }
    expect(pick(snapshotOf('v', records, options))).toEqual(expected)
  })

  it('lists the issue of two active notes and the notes in plan order', () => {
    const snapshot = snapshotOf('v', vault({ z: { start: true, next: ['m'] }, m: { next: ['a'], status: 'active' }, a: { status: 'active' } }), options)
    expect(snapshot.phase).toBe('invalid')
    expect(snapshot.issues.map((issue) => issue.code)).toEqual(['two-active'])
    expect(snapshot.nodes.map((each) => each.id)).toEqual(['z', 'm', 'a'])
  })

  describe('subplans', () => {
    const top = { a: { start: true, next: ['research'] }, research: { plan: ['web', 'library'], next: ['write'] }, write: {} } satisfies Record<
      string,
      NoteSpec
    >
    const key = 'run1:research:1'
    const branch = (folder: string, records: TraceRecord[], statuses: Record<string, NodeStatus> = {}) =>
      vault(
        { find: { start: true, next: ['sum'], status: statuses.find ?? 'done' }, sum: { status: statuses.sum ?? 'pending' } },
        { folder, records, source: key },
      )

    it('a note working through parallel subplans: every branch’s next visit is in the frontier, works counted across the tree', () => {
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' }, research: { ...top.research, status: 'active' } },
        {
          records: [hop(1, 'a', 'research')],
          subplans: { web: branch('web', [hop(2, 'find', 'sum')]), library: branch('library', [hop(3, 'find', 'sum')]) },
        },
      )
      const snapshot = snapshotOf('v', records, options)
      expect(pick(snapshot)).toEqual({
        phase: 'ready',
        steps: 3,
        frontier: [
          { kind: 'work', node: 'web/sum', visit: 1, step: 4, plan: 'web' },
          { kind: 'work', node: 'library/sum', visit: 1, step: 5, plan: 'library' },
        ],
        waiting: [],
      })
      expect(snapshot.nodes.find((each) => each.id === 'research')?.subplans?.map((sub) => [sub.folder, sub.nodes.map((n) => [n.id, n.visits])])).toEqual([
        [
          'web',
          [
            ['web/find', 1],
            ['web/sum', 0],
          ],
        ],
        [
          'library',
          [
            ['library/find', 1],
            ['library/sum', 0],
          ],
        ],
      ])
      expect(snapshot.hops.map((each) => each.node)).toEqual(['a', 'web/find', 'library/find'])
    })

    it('hops of parallel branches are listed in the order the run made them, by their step numbers', () => {
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' }, research: { ...top.research, status: 'active' } },
        {
          records: [hop(1, 'a', 'research')],
          subplans: {
            web: branch('web', [hop(2, 'find', 'sum'), hop(4, 'sum', null)], { sum: 'done' }),
            library: branch('library', [hop(3, 'find', 'sum')]),
          },
        },
      )
      expect(snapshotOf('v', records, options).hops.map((each) => [each.step, each.node])).toEqual([
        [1, 'a'],
        [2, 'web/find'],
        [3, 'library/find'],
        [4, 'web/sum'],
      ])
    })

    it('a budget with room for one more visit: one branch’s visit is in the frontier; none left: stopped', () => {
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' }, research: { ...top.research, status: 'active' } },
        {
          records: [hop(1, 'a', 'research')],
          subplans: { web: branch('web', [hop(2, 'find', 'sum')]), library: branch('library', [hop(3, 'find', 'sum')]) },
        },
      )
      expect(snapshotOf('v', records, { ...options, maxSteps: 4 }).frontier).toEqual([{ kind: 'work', node: 'web/sum', visit: 1, step: 4, plan: 'web' }])
      const stopped = snapshotOf('v', records, { ...options, maxSteps: 3 })
      expect(stopped.phase).toBe('stopped')
      expect(stopped.stop).toMatchObject({ budget: 'maxSteps', node: 'web/sum', visit: 1 })
    })

    it('a visit claimed in one branch holds its step: the other branch’s next visit waits when that was the last', () => {
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' }, research: { ...top.research, status: 'active' } },
        {
          records: [hop(1, 'a', 'research')],
          subplans: { web: branch('web', [hop(2, 'find', 'sum')]), library: branch('library', [hop(3, 'find', 'sum')], { sum: 'active' }) },
        },
      )
      expect(snapshotOf('v', records, { ...options, maxSteps: 4 }).frontier).toEqual([
        { kind: 'work', node: 'library/sum', visit: 1, step: 4, plan: 'library' },
      ])
    })

    it('a note about to be entered that runs subplans: the frontier holds their start notes, not the note', () => {
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' } },
        { records: [hop(1, 'a', 'research')], subplans: { web: branch('web', [], { find: 'pending' }), library: branch('library', [], { find: 'pending' }) } },
      )
      expect(snapshotOf('v', records, options).frontier).toEqual([
        { kind: 'work', node: 'web/find', visit: 1, step: 2, plan: 'web' },
        { kind: 'work', node: 'library/find', visit: 1, step: 3, plan: 'library' },
      ])
    })

    it('cut short after every branch completed: the joined output is judged next', () => {
      const done = (folder: string, first: number) => branch(folder, [hop(first, 'find', 'sum'), hop(first + 1, 'sum', null)], { sum: 'done' })
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' }, research: { ...top.research, status: 'active' } },
        { records: [hop(1, 'a', 'research')], subplans: { web: done('web', 2), library: done('library', 4) } },
      )
      expect(pick(snapshotOf('v', records, options))).toEqual({
        phase: 'ready',
        steps: 5,
        frontier: [{ kind: 'judge', node: 'research', visit: 1, step: 5 }],
        waiting: [],
      })
    })

    it('a `plan: generate` note claimed before its folder was written: the planner call is next', () => {
      const records = vault({ a: { start: true, next: ['b'], plan: ['generate'], status: 'active' }, b: {} }, { records: [] })
      expect(pick(snapshotOf('v', records, options))).toEqual({
        phase: 'ready',
        steps: 0,
        frontier: [{ kind: 'plan', node: 'a', visit: 1, step: 1 }],
        waiting: [],
      })
    })

    it('two active notes inside a subplan under way: invalid, naming them by path', () => {
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' }, research: { ...top.research, plan: ['web'], status: 'active' } },
        { records: [hop(1, 'a', 'research')], subplans: { web: branch('web', [], { find: 'active', sum: 'active' }) } },
      )
      const snapshot = snapshotOf('v', records, options)
      expect(snapshot.phase).toBe('invalid')
      expect(snapshot.issues.map((issue) => [issue.code, issue.message])).toEqual([
        [
          'two-active',
          'Two notes are `status: active` (`web/find.md`, `web/sum.md`); a run is at one node at a time. Set all but one to `done` or `pending`, then run again.',
        ],
      ])
    })

    it('the works of a subplan under way inside a branch, and the planner calls, count against the budget', () => {
      const inner = vault(
        { i1: { start: true, next: ['i2'], status: 'done' }, i2: { next: ['i3'], status: 'done' }, i3: { status: 'active' } },
        {
          folder: 's1/inner',
          records: [hop(2, 'i1', 'i2'), hop(3, 'i2', 'i3')],
          source: 'sub-s1:n:1',
        },
      )
      const s1 = vault({ n: { start: true, plan: ['inner'], status: 'active' } }, { folder: 's1', records: [], source: key, subplans: { inner } })
      const s2 = vault({ x: { start: true, next: ['y'] }, y: {} }, { folder: 's2' })
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' }, research: { ...top.research, plan: ['s1', 's2'], status: 'active' } },
        {
          records: [hop(1, 'a', 'research')],
          subplans: { s1, s2 },
        },
      )
      expect(pick(snapshotOf('v', records, { ...options, maxSteps: 4 }))).toEqual({
        phase: 'ready',
        steps: 3,
        frontier: [{ kind: 'work', node: 's1/inner/i3', visit: 1, step: 4, plan: 's1/inner' }],
        waiting: [],
      })
      expect(snapshotOf('v', { ...records, plannerCalls: 1 }, { ...options, maxSteps: 4 }).phase).toBe('stopped')
    })

    it('a subplan whose trace belongs to an earlier visit of its note starts afresh', () => {
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' }, research: { ...top.research, plan: ['web'], status: 'active' } },
        {
          records: [hop(1, 'a', 'research')],
          subplans: {
            web: vault(
              { find: { start: true, next: ['sum'], status: 'done' }, sum: { status: 'done' } },
              { folder: 'web', records: [hop(1, 'find', 'sum'), hop(2, 'sum', null)], source: 'old:research:1' },
            ),
          },
        },
      )
      expect(snapshotOf('v', records, options).frontier).toEqual([{ kind: 'work', node: 'web/find', visit: 1, step: 2, plan: 'web' }])
    })

    it('after a subplan, its works count against the budget of the note after it', () => {
      const records = vault(
        { ...top, a: { ...top.a, status: 'done' }, research: { ...top.research, plan: ['web'], status: 'done' } },
        {
          records: [hop(1, 'a', 'research'), hop(3, 'research', 'write', { works: 2 })],
          subplans: { web: branch('web', [hop(2, 'find', 'sum'), hop(3, 'sum', null)], { sum: 'done' }) },
        },
      )
      expect(pick(snapshotOf('v', records, { ...options, maxSteps: 3 }))).toMatchObject({ phase: 'stopped', steps: 3, frontier: [] })
      expect(pick(snapshotOf('v', records, { ...options, maxSteps: 4 }))).toMatchObject({ phase: 'ready', steps: 3 })
    })
  })
})
