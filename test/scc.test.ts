import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { PlanGraph, type PlanNode } from 'vaultplan'
import { planEdges, stronglyConnectedComponents } from '../src/plan/plan-edges.js'

const node = (id: string, targets: string[], type: PlanNode['type'] = 'step'): PlanNode => ({
  id,
  title: id,
  body: '',
  type,
  status: 'pending',
  maxVisits: 3,
  frontmatter: {},
  edges: targets.map((target) => ({ label: '', target, conditional: false })),
})

describe('strongly connected components', () => {
  it('a 10,000-step path plan validates (no stack overflow)', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => `s${i}`)
    const graph = new PlanGraph(ids.map((id, i) => node(id, i + 1 < ids.length ? [ids[i + 1]!] : [], i === 0 ? 'start' : 'step')))
    expect(graph.validate()).toEqual([])
  })

  it('a 10,000-step loop without an exit is reported once, naming the loop', () => {
    const ids = Array.from({ length: 10_000 }, (_, i) => `s${i}`)
    const graph = new PlanGraph([...ids.map((id, i) => node(id, [ids[(i + 1) % ids.length]!], i === 0 ? 'start' : 'step')), node('end', [])])
    expect(() => graph.validate()).toThrow(/cycle-without-exit/)
  })

  it('agrees with a brute-force reachability check on random graphs (repeated and dangling edges included)', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }).chain((n) => fc.tuple(fc.constant(n), fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n + 1)), { maxLength: 40 }))),
        ([n, pairs]) => {
          // Targets n and n + 1 are no node: dangling edges, which link nothing.
          const targets = (a: number) => pairs.filter(([from]) => from === a).map(([, to]) => String(to))
          const nodes = new Map(Array.from({ length: n }, (_, i) => [String(i), node(String(i), targets(i))]))
          const reach = (from: string) => {
            const seen = new Set([from])
            const queue = [from]
            for (let at = queue.pop(); at !== undefined; at = queue.pop())
              for (const next of targets(Number(at))) if (nodes.has(next) && !seen.has(next)) (seen.add(next), queue.push(next))
            return seen
          }
          const expected = new Set<string>()
          for (const a of nodes.keys()) {
            expected.add(
              [...reach(a)]
                .filter((b) => reach(b).has(a))
                .sort()
                .join(','),
            )
          }
          const { ids, out } = planEdges(nodes)
          const found = new Set(
            stronglyConnectedComponents(out).map((component) =>
              component
                .map((member) => ids[member]!)
                .sort()
                .join(','),
            ),
          )
          expect(found).toEqual(expected)
        },
      ),
    )
  })
})

describe('planEdges', () => {
  it("lists each node's distinct targets in the order first written, leaving out edges to no node and keeping an edge to itself", () => {
    const nodes = new Map([
      ['a', node('a', ['c', 'b', 'c', 'gone', 'a', 'b'])],
      ['b', node('b', [])],
      ['c', node('c', ['a'])],
    ])
    const edges = planEdges(nodes)
    expect(edges.ids).toEqual(['a', 'b', 'c'])
    expect(edges.out).toEqual([[2, 1, 0], [], [0]])
    expect(edges.numberOf.get('c')).toBe(2)
  })

  it('deduplicates the targets of a node with many edges too', () => {
    const many = Array.from({ length: 60 }, (_, i) => `t${i % 20}`)
    const nodes = new Map([['a', node('a', many)], ...Array.from({ length: 20 }, (_, i) => [`t${i}`, node(`t${i}`, [])] as const)])
    expect(planEdges(nodes).out[0]).toEqual(Array.from({ length: 20 }, (_, i) => i + 1))
  })
})
