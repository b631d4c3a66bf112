import type { VaultSession } from '../../store/vault-session.js'
import { TRACE_FORMAT, type ClaimRecord, type TraceHeader } from '../../store/trace.js'
import { claimRecordOf } from '../core/claims.js'
import { effectsOf } from '../core/hop-effects.js'
import { claimKey, feedbackToHandOn, type Position } from '../core/run-core.js'
import type { DriverOptions, DriverStep } from '../core/run-options.js'
import { workStep } from '../core/steps.js'
import { tell } from './events.js'
import type { HopWriter } from './hop-writer.js'
import { newRunId } from './run-id.js'
import type { RunState } from './run-state.js'
import { feedbackAsTyped } from '../../vault/note-edits.js'

/*
 * Claiming a visit of a vault's run: the trace header of a new run, the
 * claim record (its step number, an agent's lease, the budget the call
 * gave), `status: active` in its note before any work, and the step the
 * caller gets, with a person's feedback for a visit they unblocked.
 */

/** What the claim of a visit works with: the vault's session, the call's options, the run's state and its hop writer. */
export interface DriverParts {
  session: VaultSession
  options: DriverOptions
  run: RunState
  hops: HopWriter
}

/**
 * Claims a visit: the trace header for a new run, then `status: active`,
 * persisted before any work. In a tree the visit takes the whole run's next
 * step number.
 */
export async function claimVisit(parts: DriverParts, position: Extract<Position, { kind: 'work' }>): Promise<DriverStep> {
  const { session, options, run, hops } = parts
  await session.refresh([position.node])
  const node = hops.nodeOrFail(position.node)
  if (!position.claimed) {
    // The tree's budget has no step left for it: refused, nothing written; the tree asks again, and the driver stops.
    if (options.admit?.(node) === false) return { kind: 'refused', node }
    options.beforeClaim?.(node)
  }
  const header = run.traced ? undefined : newHeader(run, options)
  let claim: ClaimRecord | undefined
  if (run.claim?.node !== node.id || run.claim.visit !== position.visit) {
    // A number the trace gave the visit before (a crash since) is kept; else the run's next, recorded with the claim.
    const before = run.state.claims.get(claimKey(node.id, position.visit))
    const recorded = before?.step
    const taken = recorded ?? options.steps?.take(node)
    const step = taken ?? position.step
    const now = Date.now()
    // A note whose subplans number their works takes no number of its own.
    const numbered = recorded === undefined && (taken !== undefined || !options.steps)
    // An agent's claim is recorded with its name and lease; a budget the call gives that differs from the recorded one, with the claim.
    const subplans = options.runsSubplans?.(node) === true
    claim = claimRecordOf({ node: node.id, visit: position.visit, step }, before, {
      numbered,
      agent: subplans ? undefined : options.agent,
      rebudget: options.budget.record === true && !subplans,
      maxSteps: options.maxSteps,
      now,
    })
    run.claim = { node: node.id, visit: position.visit, step, at: Date.now() }
    run.usage = []
  }
  position = { ...position, step: run.claim.step }
  const active = position.claimed || node.status === 'active'
  const effects = effectsOf(position, run.state.lastRecord, { type: 'claim', node: node.id, header, claim, active })
  await hops.perform(
    effects.filter((effect) => effect.kind === 'header'),
    () => tell(options.onEvent, { type: 'start', runId: run.runId, resumed: false }),
  )
  if (!position.claimed) tell(options.onEvent, { type: 'enter', node: node.id, visit: position.visit, step: position.step, maxVisits: node.maxVisits })
  await hops.perform(effects.filter((effect) => effect.kind !== 'header'))
  // A visit a person unblocked: their feedback is handed to its work, labelled as feedback.
  const outputs = run.state.outputs.slice()
  if (run.state.blocked.has(claimKey(node.id, position.visit))) {
    const handed = feedbackToHandOn(run.state.feedback.get(node.id), session.feedbackOf(node.id))
    if (handed) outputs.push({ node: node.id, visit: position.visit, output: feedbackAsTyped(handed), feedback: true })
  }
  return workStep(run.runId, node, position, run.query, outputs, options.predicates)
}

/** A new run's id and the header of its trace, to write before its first claim. */
function newHeader(run: RunState, options: DriverOptions): TraceHeader {
  run.runId = newRunId()
  const header: TraceHeader = { run: run.runId, format: TRACE_FORMAT, query: run.query, started: new Date().toISOString() }
  if (options.degraded !== undefined) header.degraded = options.degraded
  if (options.source !== undefined) header.source = options.source
  // The run's budget: status and snapshots of the top vault decide for it when not told one.
  header.maxSteps = options.maxSteps
  return header
}
