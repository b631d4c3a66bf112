import type { PlanNode } from '../core/types.js'
import type { PlanGraph } from './plan-graph.js'

/**
 * A plan's notes in plan order: the start, then breadth-first along edges
 * (in the order each note lists them), then the rest by file.
 */
export function planOrder(graph: Pick<PlanGraph, 'nodes'>, start: PlanNode | undefined): PlanNode[] {
  const seen = new Set<string>()
  const order: PlanNode[] = []
  const queue = start ? [start] : []
  for (let index = 0; index < queue.length; index++) {
    const node = queue[index]!
    if (seen.has(node.id)) continue
    seen.add(node.id)
    order.push(node)
    for (const edge of node.edges) {
      const target = graph.nodes.get(edge.target)
      if (target && !seen.has(target.id)) queue.push(target)
    }
  }
  const rest = [...graph.nodes.values()].filter((node) => !seen.has(node.id))
  rest.sort((a, b) => ((a.file ?? a.id) < (b.file ?? b.id) ? -1 : (a.file ?? a.id) > (b.file ?? b.id) ? 1 : 0))
  return [...order, ...rest]
}
