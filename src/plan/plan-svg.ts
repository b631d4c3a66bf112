import type { PlanGraph } from './plan-graph.js'
import { toDot, type PictureState } from './plan-picture.js'
import { layOut } from './svg-layout.js'

/** Options of `toSvg`. */
export interface SvgOptions {
  /**
   * How long the layout may take before it is stopped and the call fails
   * with `PictureTooLargeError` (Graphviz's time grows steeply with the
   * notes and links: a dense plan of 40 notes takes seconds).
   *
   * @default 10_000
   */
  timeoutMs?: number
  /** Stops the layout. */
  signal?: AbortSignal
}

const DEFAULTS = { timeoutMs: 10_000 }

/**
 * The plan as an SVG image: the picture of `toDot` (entry arrow, double
 * border on terminals, labels on the arrows, with `state` visits against
 * budgets and statuses as colours), laid out and drawn by Graphviz compiled
 * to WebAssembly (`@viz-js/viz`). It runs offline: no system package, no
 * `dot` binary. The layout runs in a worker thread, bounded by
 * `options.timeoutMs`, so a large plan never stops the process; importing
 * vaultplan stays light, as Graphviz is loaded by the worker only.
 *
 * @throws {@link PictureTooLargeError} when the layout takes over `options.timeoutMs`.
 * @throws `TypeError` when `options.timeoutMs` is not a number above 0.
 * @throws `Error` when Graphviz cannot draw the DOT text (a bug of `toDot`: please report it).
 */
export async function toSvg(graph: PlanGraph, state?: PictureState, options: SvgOptions = {}): Promise<string> {
  const { timeoutMs, signal } = { ...DEFAULTS, ...options }
  if (!(timeoutMs > 0)) throw new TypeError(`Expected \`timeoutMs\` to be a number of milliseconds above 0, got \`${String(timeoutMs)}\``)
  const result = await layOut(toDot(graph, state), graph.nodes.size, { timeoutMs, signal })
  if (result.status !== 'success') {
    const errors = result.errors.filter((error) => error.level !== 'warning').map((error) => error.message)
    throw new Error(`Graphviz could not draw the plan (${errors.join('; ') || 'no message'}); this is a bug of vaultplan's DOT text, please report it`)
  }
  return result.output
}
