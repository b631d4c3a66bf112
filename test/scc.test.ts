import { DirectedGraph } from 'graphology'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { PlanGraph, type PlanNode } from 'vaultplan'
import { stronglyConnectedComponents } from '../src/plan/validate.js'

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

  it('agrees with a brute-force reachability check on random graphs', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 12 }).chain((n) => fc.tuple(fc.constant(n), fc.array(fc.tuple(fc.nat(n - 1), fc.nat(n - 1)), { maxLength: 30 }))),
        ([n, edges]) => {
          const graph = new DirectedGraph()
          for (let i = 0; i < n; i++) graph.addNode(String(i))
          for (const [a, b] of edges) graph.mergeEdge(String(a), String(b))
          const reach = (from: string) => {
            const seen = new Set([from])
            const queue = [from]
            for (let at = queue.pop(); at !== undefined; at = queue.pop())
              for (const next of graph.outNeighbors(at)) if (!seen.has(next)) (seen.add(next), queue.push(next))
            return seen
          }
          const expected = new Set<string>()
          for (let i = 0; i < n; i++) {
            const a = String(i)
            expected.add(
              [...reach(a)]
                .filter((b) => reach(b).has(a))
                .sort()
                .join(','),
            )
          }
          const found = new Set(stronglyConnectedComponents(graph).map((component) => [...component].sort().join(',')))
          expect(found).toEqual(expected)
        },
      ),
    )
  })
})
