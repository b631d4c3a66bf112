import type { PlanGraph } from './plan-graph.js'
import { dotOf, type PictureState } from './plan-picture.js'
import { layOut } from './svg-layout.js'
import { checkTimeoutMs } from '../core/durations.js'

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
 * budgets and statuses as colours, a note a person decides as a hexagon)
 * with a legend below saying so, laid out and drawn by Graphviz compiled
 * to WebAssembly (`@viz-js/viz`). It runs offline: no system package, no
 * `dot` binary. The layout runs in a worker thread, bounded by
 * `options.timeoutMs`, so a large plan never stops the process; importing
 * vaultplan stays light, as Graphviz is loaded by the worker only.
 *
 * @throws `PictureTooLargeError` (an export of `vaultplan`) when the layout takes over `options.timeoutMs`.
 * @throws `TypeError` when `options.timeoutMs` is not whole milliseconds from 1 up to about 24.8 days (what a timer waits).
 * @throws `Error` when Graphviz cannot draw the DOT text (a bug of `toDot`: please report it).
 */
export async function toSvg(graph: PlanGraph, state?: PictureState, options: SvgOptions = {}): Promise<string> {
  const { timeoutMs, signal } = { ...DEFAULTS, ...options }
  checkTimeoutMs('timeoutMs', timeoutMs)
  const result = await layOut(dotOf(graph, state, true), graph.nodes.size, { timeoutMs, signal })
  if (result.status !== 'success') {
    const errors = result.errors.filter((error) => error.level !== 'warning').map((error) => error.message)
    throw new Error(`Graphviz could not draw the plan (${errors.join('; ') || 'no message'}); this is a bug of vaultplan's DOT text, please report it`)
  }
  return result.output
}
