import { subplanFoldersOf } from '../vault/subplan-folders.js'
import type { PlanGraph } from './plan-graph.js'
import type { Layout, PictureState } from './plan-picture.js'

/** A subplan as the pictures draw it: a cluster of its own boxes, reached from the note that runs it. */
export interface Cluster {
  /** A safe identifier of the cluster (`s0`, `s0_s1` for a subplan of a subplan). */
  key: string
  /** The folder, from the top vault (`research`, `research/deeper`). */
  label: string
  /** The key of the box of the note that runs the subplan. */
  from: string
  /** The subplan's boxes and edges, their keys prefixed with the cluster's. */
  layout: Layout
  clusters: Cluster[]
}

/**
 * The subplans of a loaded graph, as clusters inside the picture: each
 * subplan's notes laid out like a plan (`layout`, the same function that lays
 * out the top), keys prefixed so they never clash, and its subplans nested.
 * Visits and statuses in `state` name nested notes by their path from the top
 * vault (`research/find`), as a run reports them.
 */
export function clustersOf(graph: PlanGraph, parent: Layout, state: PictureState | undefined, layout: (graph: PlanGraph, state: PictureState | undefined) => Layout, prefix = '', keyPrefix = ''): Cluster[] {
  const clusters: Cluster[] = []
  let index = 0
  for (const [folder, subplan] of graph.subplans ?? []) {
    const key = `${keyPrefix}s${index++}`
    const note = [...graph.nodes.values()].find((node) => subplanFoldersOf(node).some((each) => each.folder === folder))
    const from = parent.boxes.find((box) => box.node === note)?.key
    if (from === undefined) continue
    const inner = layout(subplan, state && within(state, `${prefix}${folder}/`))
    const rename = (each: string) => `${key}_${each}`
    const prefixed: Layout = {
      boxes: inner.boxes.map((box) => ({ ...box, key: rename(box.key) })),
      edges: inner.edges.map((edge) => ({ ...edge, from: rename(edge.from), to: rename(edge.to) })),
    }
    clusters.push({ key, label: `${prefix}${folder}/`, from, layout: prefixed, clusters: clustersOf(subplan, prefixed, state, layout, `${prefix}${folder}/`, `${key}_`) })
  }
  return clusters
}

/** The part of a state about one subplan, its notes named by their id inside it. */
function within(state: PictureState, prefix: string): PictureState {
  const strip = <T>(record: Readonly<Record<string, T>>) => Object.fromEntries(Object.entries(record).flatMap(([id, value]) => (id.startsWith(prefix) ? [[id.slice(prefix.length), value]] : [])))
  return { visits: strip(state.visits), ...(state.statuses && { statuses: strip(state.statuses) }) }
}
