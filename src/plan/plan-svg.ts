import type { PlanGraph } from './plan-graph.js'
import { dotOf, type PictureState } from './plan-picture.js'

type Viz = Awaited<ReturnType<typeof import('@viz-js/viz').instance>>
let loading: Promise<Viz> | undefined

/**
 * The plan as an SVG image: the picture of `toDot` (entry arrow, double
 * border on terminals, labels on the arrows, with `state` visits against
 * budgets and statuses as colours, a note a person decides as a hexagon)
 * with a legend below saying so, laid out and drawn by Graphviz compiled
 * to WebAssembly (`@viz-js/viz`). It runs in-process and offline: no system
 * package, no `dot` binary. Graphviz is loaded on the first call only, so
 * importing vaultplan stays light.
 *
 * @throws {Error} when Graphviz cannot draw the DOT text (a bug of `toDot`: please report it).
 */
export async function toSvg(graph: PlanGraph, state?: PictureState): Promise<string> {
  loading ??= import('@viz-js/viz').then(({ instance }) => instance())
  const viz = await loading
  const result = viz.render(dotOf(graph, state, true), { format: 'svg' })
  if (result.status !== 'success') {
    const errors = result.errors.filter((error) => error.level !== 'warning').map((error) => error.message)
    throw new Error(`Graphviz could not draw the plan (${errors.join('; ') || 'no message'}); this is a bug of vaultplan's DOT text, please report it`)
  }
  return result.output
}
