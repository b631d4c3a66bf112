import { visitKey, type Replay } from './run-core.js'
import type { Claim, RunResult, Step, WaitingNote } from './run-options.js'
import type { WaitClock } from './deadline.js'
import type { ClaimRecord, HopRecord } from '../../store/trace.js'
import { conditionsOf, type Decision } from '../../models/transitions.js'
import { waitsForPerson } from '../../core/knobs.js'
import type { ModelUsage, PlanNode, Predicate, StepOutput } from '../../core/types.js'
import { stopInSubplan } from './stops.js'
import { waitingReason, dueWords } from './messages.js'

/*
 * The values a run hands its caller (pure): a step to work, a wait, a stop
 * told from the top vault, the result `runPlan` returns, and the record of a hop.
 */

/**
 * What a hop of a worked visit records: the edge the judge chose and who
 * decided, the caller's choice when it decided, the subplans' works, when
 * the work began and how long the hop took, and the hop's model calls.
 */
export function hopRecordOf(
  decision: Pick<Decision, 'edge' | 'decidedBy' | 'answers'>,
  hop: {
    step: number
    node: string
    visit: number
    output: string
    choice: string | undefined
    works: number | undefined
    claim: Claim | undefined
    usage: ModelUsage[]
  },
): HopRecord {
  const record: HopRecord = {
    kind: 'hop',
    step: hop.step,
    node: hop.node,
    visit: hop.visit,
    edge: decision.edge,
    decidedBy: decision.decidedBy,
    next: decision.edge?.target ?? (decision.decidedBy === 'terminal' ? null : hop.node),
    output: hop.output,
  }
  if (decision.decidedBy === 'agent' && hop.choice !== undefined) record.choice = hop.choice
  if (decision.answers) record.answers = decision.answers
  if (hop.works !== undefined) record.works = hop.works
  if (hop.claim) {
    record.at = new Date(hop.claim.at).toISOString()
    record.ms = Date.now() - hop.claim.at
  }
  return Object.assign(record, usageFields(hop.usage))
}

/** A hop's record of its model calls: the roles and models used, and the tokens reported, summed. */
export function usageFields(usage: ModelUsage[]): Pick<HopRecord, 'role' | 'model' | 'tokens'> {
  if (usage.length === 0) return {}
  const fields: Pick<HopRecord, 'role' | 'model' | 'tokens'> = {
    role: [...new Set(usage.map((each) => each.role))].join(', '),
    model: [...new Set(usage.map((each) => each.model))].join(', '),
  }
  const counted = usage.filter((each) => each.input !== undefined || each.output !== undefined)
  if (counted.length > 0)
    fields.tokens = { input: counted.reduce((sum, each) => sum + (each.input ?? 0), 0), output: counted.reduce((sum, each) => sum + (each.output ?? 0), 0) }
  return fields
}

/** A run's outcome as `runPlan` returns it, for a step that is not `work`. */
export function toRunResult(
  step: Exclude<Step, { kind: 'work' | 'busy' }>,
  run: { runId: string; replay: Replay; vault: string; degraded: string | undefined },
): RunResult {
  const result: RunResult = {
    status: step.kind,
    output: step.kind === 'completed' ? step.output : run.replay.lastOutput,
    runId: run.runId,
    steps: run.replay.steps,
    // A vault's driver calls no planner: the run tree that decomposes counts its calls.
    plannerCalls: 0,
    visits: Object.fromEntries(run.replay.visits),
    lastNode: run.replay.lastNode,
    runVault: run.vault,
  }
  if (step.kind === 'stopped') {
    result.reason = step.reason
    result.stop = step.stop
  }
  if (step.kind === 'waiting') {
    result.reason = step.reason
    result.waiting = step.waiting
  }
  if (run.degraded !== undefined) result.degraded = run.degraded
  return result
}

/** The step of a claimed visit, as `nextStep` returns it: a person's note takes no choice. */
export function workStep(
  runId: string,
  node: PlanNode,
  at: { visit: number; step: number },
  query: string,
  outputs: StepOutput[],
  predicates: Record<string, Predicate> | undefined,
): Extract<Step, { kind: 'work' }> {
  const human = waitsForPerson(node)
  return {
    kind: 'work',
    runId,
    key: visitKey(runId, node.id, at.visit),
    step: at.step,
    visit: at.visit,
    node,
    query,
    outputs,
    conditions: human ? [] : conditionsOf(node, predicates),
    // A vault's own view: the run tree says whether a subplan's last note ends the whole run.
    terminal: node.edges.length === 0,
  }
}

/** The step of a note waiting for a person, with the reason in words and the choices as data. */
export function waitingStep(runId: string, node: PlanNode, file: string, clock?: WaitClock): Extract<Step, { kind: 'waiting' }> {
  const reason = `\`${node.id}\` waits for a person: tick one box under \`## Next\` in \`${file}\` (and write under \`## Feedback\` if you like), then run the vault again.${dueWords(clock)}`
  return {
    kind: 'waiting',
    runId,
    waiting: [{ kind: 'human', node: node.id, file, choices: node.edges.map((each) => each.label || 'next'), ...clock }],
    reason,
  }
}

/** The step of a visit an agent blocked (`blockStep`): it waits for a person to unblock it. */
export function blockedStep(runId: string, node: PlanNode, file: string, block: ClaimRecord, clock?: WaitClock): Extract<Step, { kind: 'waiting' }> {
  const waiting: WaitingNote = {
    kind: 'blocked',
    node: node.id,
    file,
    choices: ['unblock'],
    ...(block.reason !== undefined && { reason: block.reason }),
    ...clock,
  }
  if (waiting.since === undefined && block.at !== undefined) waiting.since = block.at
  return { kind: 'waiting', runId, waiting: [waiting], reason: waitingReason([waiting]) }
}

/** A subplan's step told from the top vault: waiting notes, claims and stops by their path from it. */
export function fromSubplan(step: Step, top: string): Step {
  const path = (id: string) => `${top}/${id}`
  if (step.kind === 'busy')
    return { ...step, claims: step.claims.map((item) => ({ ...item, node: path(item.node), plan: item.plan === undefined ? top : path(item.plan) })) }
  if (step.kind === 'waiting') {
    const waiting: WaitingNote[] = step.waiting.map((note) => ({ ...note, node: path(note.node), file: path(note.file) }))
    return { ...step, waiting, reason: waitingReason(waiting) }
  }
  if (step.kind === 'stopped') {
    const { reason, ...stop } = stopInSubplan({ ...step.stop, reason: step.reason }, top)
    return { ...step, stop, reason }
  }
  return step
}
