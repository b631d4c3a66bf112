import { subplanFoldersOf } from '../vault/subplan-folders.js'
import type { PlanGraph } from './plan-graph.js'
import type { NodeStatus, PlanNode } from '../core/types.js'

/** What the pictures lay out (`Layout` of plan-picture): boxes with safe keys, and edges between them. */
interface Laid {
  boxes: { key: string; node?: PlanNode }[]
  edges: { from: string; to: string }[]
}

/** Visits and statuses by node id (`PictureState` of plan-picture). */
interface State {
  visits: Readonly<Record<string, number>>
  statuses?: Readonly<Record<string, NodeStatus>>
}

/** A subplan as the pictures draw it: a cluster of its own boxes, reached from the note that runs it. */
export interface Cluster<L extends Laid = Laid> {
  /** A safe identifier of the cluster (`s0`, `s0_s1` for a subplan of a subplan). */
  key: string
  /** The folder, from the top vault (`research`, `research/deeper`). */
  label: string
  /** The key of the box of the note that runs the subplan. */
  from: string
  /** The subplan's boxes and edges, their keys prefixed with the cluster's. */
  layout: L
  clusters: Cluster<L>[]
}

/**
 * The subplans of a loaded graph, as clusters inside the picture: each
 * subplan's notes laid out like a plan (`layout`, the same function that lays
 * out the top), keys prefixed so they never clash, and its subplans nested.
 * Visits and statuses in `state` name nested notes by their path from the top
 * vault (`research/find`), as a run reports them.
 */
export function clustersOf<S extends State, L extends Laid>(
  graph: PlanGraph,
  parent: L,
  state: S | undefined,
  layout: (graph: PlanGraph, state: S | undefined) => L,
  prefix = '',
  keyPrefix = '',
): Cluster<L>[] {
  const clusters: Cluster<L>[] = []
  for (const [index, { folder, subplan, note, state: inside }] of subplansOf(graph, state, prefix).entries()) {
    const key = `${keyPrefix}s${index}`
    const from = parent.boxes.find((box) => box.node === note)?.key
    if (from === undefined) continue
    const inner = layout(subplan, inside)
    const rename = (each: string) => `${key}_${each}`
    const prefixed: L = {
      ...inner,
      boxes: inner.boxes.map((box) => ({ ...box, key: rename(box.key) })),
      edges: inner.edges.map((edge) => ({ ...edge, from: rename(edge.from), to: rename(edge.to) })),
    }
    clusters.push({
      key,
      label: `${prefix}${folder}/`,
      from,
      layout: prefixed,
      clusters: clustersOf(subplan, prefixed, state, layout, `${prefix}${folder}/`, `${key}_`),
    })
  }
  return clusters
}

/** One subplan of a graph, as every picture needs it. */
export interface SubplanPart<S> {
  /** The folder, relative to the graph's vault. */
  folder: string
  subplan: PlanGraph
  /** The note that runs it, if the graph still has one. */
  note: PlanNode | undefined
  /** The part of the state about the subplan, its notes named by their id inside it. */
  state: S | undefined
}

/**
 * The subplans of a graph in the order they were read, each with the note
 * that runs it and the part of `state` about it. `prefix` is the graph's own
 * folder from the top vault (`''` for the top), as the state names nested
 * notes by their path from there.
 */
export function subplansOf<S extends State>(graph: PlanGraph, state: S | undefined, prefix = ''): SubplanPart<S>[] {
  const notes = [...graph.nodes.values()]
  return [...(graph.subplans ?? [])].map(([folder, subplan]) => ({
    folder,
    subplan,
    note: notes.find((node) => subplanFoldersOf(node).some((each) => each.folder === folder)),
    state: state && (within(state, `${prefix}${folder}/`) as S),
  }))
}

/** The part of a state about one subplan, its notes named by their id inside it. */
function within(state: State, prefix: string): State {
  const strip = <T>(record: Readonly<Record<string, T>>) =>
    Object.fromEntries(Object.entries(record).flatMap(([id, value]) => (id.startsWith(prefix) ? [[id.slice(prefix.length), value]] : [])))
  return { visits: strip(state.visits), ...(state.statuses && { statuses: strip(state.statuses) }) }
}
