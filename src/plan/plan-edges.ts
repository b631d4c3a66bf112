import type { PlanNode } from '../core/types.js'

/**
 * The edges between a plan's nodes as a plain adjacency list over node
 * numbers: `ids[n]` is node `n` (in the plan's order), `out[n]` the distinct
 * nodes its edges lead to, in the order first written. Edges to no node are
 * left out; an edge to itself is kept. What validation and the loop finder
 * walk: a graph library's per-edge bookkeeping cost a 10,000-note load more
 * than the rest of its check.
 */
export interface PlanEdges {
  readonly ids: readonly string[]
  readonly nodes: readonly PlanNode[]
  /** The number of each node id. */
  readonly numberOf: ReadonlyMap<string, number>
  readonly out: readonly (readonly number[])[]
}

/** Above this many edges a node's targets are deduplicated with a set rather than by scanning the list. */
const SCAN_LIMIT = 16

/** The adjacency list of a plan's nodes (see {@link PlanEdges}). */
export function planEdges(nodes: ReadonlyMap<string, PlanNode>): PlanEdges {
  const ids = [...nodes.keys()]
  const list = [...nodes.values()]
  const numberOf = new Map<string, number>()
  for (let n = 0; n < ids.length; n++) numberOf.set(ids[n]!, n)
  const out: number[][] = new Array<number[]>(ids.length)
  for (let n = 0; n < list.length; n++) {
    const edges = list[n]!.edges
    const targets: number[] = []
    const seen = edges.length > SCAN_LIMIT ? new Set<number>() : undefined
    for (const edge of edges) {
      const target = numberOf.get(edge.target)
      if (target === undefined) continue
      if (seen ? seen.has(target) : targets.includes(target)) continue
      seen?.add(target)
      targets.push(target)
    }
    out[n] = targets
  }
  return { ids, nodes: list, numberOf, out }
}

/**
 * Tarjan's strongly connected components over node numbers, iterative (a
 * recursive one overflows the stack on a 10,000-step path plan). Each
 * component lists its members as Tarjan finds them; every node is in one.
 */
export function stronglyConnectedComponents(out: readonly (readonly number[])[]): number[][] {
  const count = out.length
  const index = new Int32Array(count).fill(-1)
  const low = new Int32Array(count)
  const onStack = new Uint8Array(count)
  const stack: number[] = []
  const components: number[][] = []
  // The walk's frames: the node and how many of its targets were looked at.
  const frameNode: number[] = []
  const frameNext: number[] = []
  let counter = 0
  const open = (node: number) => {
    index[node] = counter
    low[node] = counter++
    stack.push(node)
    onStack[node] = 1
    frameNode.push(node)
    frameNext.push(0)
  }
  for (let root = 0; root < count; root++) {
    if (index[root] !== -1) continue
    open(root)
    while (frameNode.length > 0) {
      const top = frameNode.length - 1
      const node = frameNode[top]!
      const targets = out[node]!
      const next = frameNext[top]!
      if (next < targets.length) {
        frameNext[top] = next + 1
        const target = targets[next]!
        if (index[target] === -1) open(target)
        else if (onStack[target] === 1 && index[target]! < low[node]!) low[node] = index[target]!
        continue
      }
      frameNode.pop()
      frameNext.pop()
      if (top > 0) {
        const parent = frameNode[top - 1]!
        if (low[node]! < low[parent]!) low[parent] = low[node]!
      }
      if (low[node] === index[node]) {
        const component: number[] = []
        for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
          onStack[member] = 0
          component.push(member)
          if (member === node) break
        }
        components.push(component)
      }
    }
  }
  return components
}
