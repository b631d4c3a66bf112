import { durationMs } from '../../core/durations.js'
import { KNOB_LABELS } from '../../core/knobs.js'
import type { Edge, PlanNode } from '../../core/types.js'
import { outputFile, type HopRecord } from '../../store/trace.js'

/*
 * Deadlines on people (pure): a note with `wait:` that waits for a person
 * takes its `timeout` edge once the wait has lasted that long, or is shown
 * overdue. The clock is an input, so the driver, the stand (`status`, the
 * snapshot) and the queue decide the same from the same trace.
 */

/** Where a wait for a person stands against its deadline. */
export interface WaitClock {
  /** When the wait began (the trace's `waiting` record), ISO 8601. */
  since?: string
  /** When the `wait:` deadline falls, ISO 8601; none without `wait:`. */
  deadline?: string
  /** The deadline has passed and the note has no `timeout` edge: it keeps waiting. */
  overdue?: boolean
}

/** The edge a note takes when its wait runs past its deadline: the one labelled `timeout`. */
export function timeoutEdge(node: Pick<PlanNode, 'edges'>): Edge | undefined {
  return node.edges.find((edge) => edge.conditional && edge.label.trim().toLowerCase() === KNOB_LABELS.wait[0])
}

/**
 * The choices of a waiting note that are a person's to make: all of them,
 * less the `timeout` edge of a note with a deadline, which the deadline
 * takes (a person who wants it ticks nothing).
 */
export function personChoices(note: { choices: readonly string[]; deadline?: string | undefined }): string[] {
  return note.deadline === undefined ? [...note.choices] : note.choices.filter((choice) => choice.trim().toLowerCase() !== KNOB_LABELS.wait[0])
}

/**
 * The milliseconds since the epoch at which a wait that began `since` runs
 * out, or `undefined` for a note without `wait:` (or with one no run takes),
 * and for a `since` no deadline can be told from: a time past what a `Date`
 * holds (a hand-edited trace) is no deadline, never a `RangeError`.
 */
export function deadlineOf(node: Pick<PlanNode, 'wait'>, since: string): number | undefined {
  const ms = node.wait === undefined ? undefined : durationMs(node.wait)
  const began = Date.parse(since)
  if (ms === undefined || Number.isNaN(began)) return undefined
  const deadline = began + ms
  return Number.isNaN(new Date(deadline).getTime()) ? undefined : deadline
}

/**
 * A waiting note's clock at `now`, for a note with `wait:`: since when it waits, its deadline, and whether it is overdue (nothing
 * without `wait:`). A proposal is a note with its `wait:` and no edges.
 */
export function waitClock(node: Pick<PlanNode, 'wait' | 'edges'>, since: string, now: number): WaitClock {
  const deadline = deadlineOf(node, since)
  if (deadline === undefined) return {}
  const clock: WaitClock = { since, deadline: new Date(deadline).toISOString() }
  if (now >= deadline && !timeoutEdge(node)) clock.overdue = true
  return clock
}

/** The hop a waiting note takes at `now` because its deadline passed (`decidedBy: 'timeout'`); none before the deadline or without a `timeout` edge. */
export function timeoutHop(node: PlanNode, at: { node: string; visit: number; step: number; since: string }, now: number): HopRecord | undefined {
  const deadline = deadlineOf(node, at.since)
  const edge = timeoutEdge(node)
  if (deadline === undefined || !edge || now < deadline) return undefined
  return {
    kind: 'hop',
    step: at.step,
    node: at.node,
    visit: at.visit,
    edge,
    decidedBy: 'timeout',
    next: edge.target,
    output: outputFile(at.step, at.node),
    at: new Date(now).toISOString(),
  }
}
