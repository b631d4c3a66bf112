import { DirectedGraph } from 'graphology'
import { PlanValidationError } from '../core/errors.js'
import type { PlanIssue, PlanIssueCode, PlanNode } from '../core/types.js'

/** What validation reads of a plan: its nodes (each with the issues of its note) and the issues of no node. `PlanGraph` is one. */
export interface PlanShape {
  readonly nodes: ReadonlyMap<string, PlanNode>
  readonly issues?: readonly PlanIssue[]
}

/** Options of `PlanGraph.validate`. */
export interface ValidateOptions {
  /** Names of the tools the caller supplies; unknown names in a node's `tools:` are warnings. */
  tools?: string[]
}

/** Finds the start node: the one marked `type: start`, or the only node without incoming edges. */
export function findStart(graph: PlanShape): { start: PlanNode | undefined; issues: PlanIssue[] } {
  const nodes = [...graph.nodes.values()]
  const marked = nodes.filter((node) => node.type === 'start')
  if (marked.length === 1) return { start: marked[0], issues: [] }
  if (marked.length > 1) {
    const names = marked.map((node) => `\`${node.id}\``).join(', ')
    return {
      start: undefined,
      issues: marked.map((node) => issue(node, 'multiple-starts', `${marked.length} notes are marked \`type: start\` (${names}); keep one`)),
    }
  }
  const entered = new Set<string>()
  for (const node of nodes) for (const edge of node.edges) if (edge.target !== node.id) entered.add(edge.target)
  const roots = nodes.filter((node) => !entered.has(node.id))
  if (roots.length === 1) return { start: roots[0], issues: [] }
  const message =
    nodes.length === 0
      ? 'the plan has no notes'
      : roots.length === 0
        ? 'no note is marked `type: start` and every note has an incoming edge; mark the entry note with `type: start`'
        : `no note is marked \`type: start\` and ${roots.length} notes have no incoming edge (${roots
            .slice(0, 5)
            .map((node) => `\`${node.id}\``)
            .join(', ')}${roots.length > 5 ? ', ...' : ''}); mark the entry note with \`type: start\``
  return { start: undefined, issues: [{ code: 'no-start', severity: 'error', message }] }
}

/**
 * Checks a plan (SPEC section 3): dangling edges, cycles without an exit, the
 * start node, a reachable terminal, frontmatter, ambiguous edges and links.
 * Problems of notes the start cannot reach are warnings.
 *
 * @returns the warnings.
 * @throws {PlanValidationError} carrying every issue, when there is at least one error.
 */
export function checkPlan(graph: PlanShape, options: ValidateOptions = {}): PlanIssue[] {
  const nodeIssues: PlanIssue[] = [...(graph.issues ?? []), ...[...graph.nodes.values()].flatMap((node) => node.issues ?? [])]
  const planIssues: PlanIssue[] = []
  const directed = new DirectedGraph()
  for (const id of graph.nodes.keys()) directed.addNode(id)

  for (const node of graph.nodes.values()) {
    let unconditional = 0
    for (const edge of node.edges) {
      const origin = edge.at
      if (!edge.conditional && ++unconditional === 2) {
        nodeIssues.push(issue(node, 'ambiguous-unconditional', 'has two unconditional edges; label all but one with a condition', origin))
      }
      if (graph.nodes.has(edge.target)) {
        directed.mergeEdge(node.id, edge.target)
      } else if (origin?.problem !== 'ambiguous') {
        const why =
          origin?.problem === 'outside'
            ? 'points outside the vault'
            : origin?.problem === 'subplan'
              ? "points into a subplan's folder: that note belongs to the subplan, which runs on its own; link the note whose `plan:` names the folder"
              : 'matches no note'
        nodeIssues.push(issue(node, 'dangling-edge', `edge \`${edge.label || 'next'}\` -> \`[[${edge.target}]]\` ${why}`, origin))
      }
    }
  }

  for (const component of stronglyConnectedComponents(directed)) {
    const members = new Set(component)
    const first = graph.nodes.get(component[0]!)!
    if (members.size === 1 && !directed.hasEdge(first.id, first.id)) continue
    const hasExit = component.some((id) => directed.outNeighbors(id).some((target) => !members.has(target)))
    if (hasExit) continue
    const ordered = [...graph.nodes.values()].filter((node) => members.has(node.id))
    // File order, not edge order: arrows between them would claim edges that may not exist.
    const loop = ordered.map((node) => `\`${node.id}\``).join(', ')
    const message =
      members.size === 1
        ? 'links only to itself and has no other way out; add an edge that leaves it'
        : `is in a loop with no way out (${loop}); add an edge that leaves the loop`
    nodeIssues.push(issue(ordered[0]!, 'cycle-without-exit', message))
  }

  const { start, issues: startIssues } = findStart(graph)
  planIssues.push(...startIssues)
  let reachable: Set<string> | undefined
  if (start) {
    reachable = new Set([start.id])
    const queue = [start.id]
    for (let id = queue.pop(); id !== undefined; id = queue.pop()) {
      for (const target of directed.outNeighbors(id)) {
        if (!reachable.has(target)) {
          reachable.add(target)
          queue.push(target)
        }
      }
    }
    const terminal = [...reachable].some((id) => graph.nodes.get(id)!.edges.length === 0)
    if (!terminal) {
      planIssues.push(
        issue(start, 'no-reachable-terminal', 'no note without edges (a terminal) can be reached from the start; every path loops or ends in a dangling edge'),
      )
    }
  }

  const known = options.tools ? new Set(options.tools) : undefined
  for (const node of graph.nodes.values()) {
    if (reachable && !reachable.has(node.id)) {
      nodeIssues.push({ ...issue(node, 'unreachable', 'cannot be reached from the start node'), severity: 'warning' })
    }
    for (const tool of known ? (node.tools ?? []) : []) {
      if (!known!.has(tool))
        nodeIssues.push({ ...issue(node, 'unknown-tool', `names tool \`${tool}\`, which is not among the tools supplied`), severity: 'warning' })
    }
  }
  // A note the run can never enter cannot break it: its problems are only warnings.
  const all = [
    ...planIssues,
    ...nodeIssues.map((found) =>
      reachable && found.node !== undefined && !reachable.has(found.node) && graph.nodes.has(found.node) ? { ...found, severity: 'warning' as const } : found,
    ),
  ].sort(byPlace)
  return all
}

/** `checkPlan`, throwing on errors: resolves to the warnings. */
export function validatePlan(graph: PlanShape, options: ValidateOptions = {}): PlanIssue[] {
  const all = checkPlan(graph, options)
  if (all.some((found) => found.severity === 'error')) throw new PlanValidationError(all)
  return all
}

function issue(node: PlanNode, code: PlanIssueCode, message: string, origin?: { line: number; column: number }): PlanIssue {
  const found: PlanIssue = { code, severity: 'error', message, node: node.id }
  if (node.file !== undefined) found.file = node.file
  if (origin) {
    found.line = origin.line
    found.column = origin.column
  }
  return found
}

function byPlace(a: PlanIssue, b: PlanIssue): number {
  return (a.file ?? '').localeCompare(b.file ?? '') || (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0)
}

/** The nodes of the loop (strongly connected component) that `id` sits in, in file order; empty when it is in none. */
export function loopOf(graph: PlanShape, id: string): string[] {
  const directed = new DirectedGraph()
  for (const nodeId of graph.nodes.keys()) directed.addNode(nodeId)
  for (const node of graph.nodes.values()) for (const edge of node.edges) if (graph.nodes.has(edge.target)) directed.mergeEdge(node.id, edge.target)
  const component = stronglyConnectedComponents(directed).find((members) => members.includes(id)) ?? []
  if (component.length === 1 && !directed.hasEdge(id, id)) return []
  const members = new Set(component)
  return [...graph.nodes.keys()].filter((nodeId) => members.has(nodeId))
}

/**
 * Tarjan's strongly connected components, iterative: graphology-components
 * recurses once per node and overflows the stack on a long chain (a
 * 10,000-step path plan).
 */
export function stronglyConnectedComponents(graph: DirectedGraph): string[][] {
  const index = new Map<string, number>()
  const low = new Map<string, number>()
  const onStack = new Set<string>()
  const stack: string[] = []
  const components: string[][] = []
  let counter = 0
  for (const root of graph.nodes()) {
    if (index.has(root)) continue
    const work: { node: string; neighbours: string[]; next: number }[] = []
    const open = (node: string) => {
      index.set(node, counter)
      low.set(node, counter++)
      stack.push(node)
      onStack.add(node)
      work.push({ node, neighbours: graph.outNeighbors(node), next: 0 })
    }
    open(root)
    while (work.length > 0) {
      const frame = work[work.length - 1]!
      if (frame.next < frame.neighbours.length) {
        const neighbour = frame.neighbours[frame.next++]!
        if (!index.has(neighbour)) open(neighbour)
        else if (onStack.has(neighbour)) low.set(frame.node, Math.min(low.get(frame.node)!, index.get(neighbour)!))
        continue
      }
      work.pop()
      const parent = work[work.length - 1]
      if (parent) low.set(parent.node, Math.min(low.get(parent.node)!, low.get(frame.node)!))
      if (low.get(frame.node) === index.get(frame.node)) {
        const component: string[] = []
        for (let member = stack.pop(); member !== undefined; member = stack.pop()) {
          onStack.delete(member)
          component.push(member)
          if (member === frame.node) break
        }
        components.push(component)
      }
    }
  }
  return components
}
