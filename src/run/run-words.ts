import { RunStateError, type PendingStep } from '../core/errors.js'
import { ModelConfigError, resolveModelConfig } from '../models/llm-client.js'
import { visitKey, type Replay } from './run-core.js'
import type { Claim, RunResult, Step, StopInfo, WaitingNote } from './run-options.js'
import type { WaitClock } from './deadline.js'
import type { ClaimRecord, HopRecord } from '../store/trace.js'
import { conditionsOf, matchChoice, type Decision } from '../models/transitions.js'
import { loopOf, type PlanShape } from '../plan/validate.js'
import { waitsForPerson } from '../core/knobs.js'
import { stepBudgetWords } from './reason-for.js'
import type { CallLLM, ModelUsage, PlanNode, Predicate, RunEvent, StepOutput } from '../core/types.js'

/*
 * What a run says and records besides its decisions: the words of a budget
 * stop, a hop's model usage, and the reporting of observers that throw.
 */

/**
 * Internal, for the resume tests (not exported by the package): called
 * after each event, uncaught, so a test can crash a run at a real point.
 */
export const crashSeam: { afterEvent?: ((event: RunEvent) => void) | undefined } = {}

/** The reason of a budget stop: which budget, where, in which loop, and what to raise. */
export function budgetReason(stop: StopInfo, context: { reworking: boolean; maxVisits: number; maxSteps: number; file: string }): string {
  const { node: id, visit, loop } = stop
  const where = context.reworking
    ? 'It was working itself again: no condition held.'
    : loop.length > 0
      ? `It sits in the loop ${[...loop, loop[0]].map((each) => `\`${each}\``).join(' -> ')}.`
      : 'The run came to it without going round a loop.'
  return stop.budget === 'max_visits'
    ? `Budget stop: \`${id}\` was refused visit ${visit}; its budget is max_visits ${context.maxVisits} ` +
        `and it has been visited ${visit - 1} time${visit === 2 ? '' : 's'}. ${where} Raise \`max_visits\` ` +
        `in \`${context.file}\` (or change the plan), then run the vault again to go on.`
    : `Budget stop: the run used its ${stepBudgetWords('library').spent} of ${context.maxSteps} steps before entering \`${id}\` (visit ${visit}). ${where} ${stepBudgetWords('library').advice}`
}

/**
 * A budget stop as data and words (pure): which budget refuses which visit,
 * the loop the run went round to come back to it (itself when it was working itself again), and
 * the reason. The same for the run that records it and the status that
 * shows it.
 */
export function stopOf(
  graph: PlanShape,
  state: Pick<Replay, 'lastHop' | 'outputs'>,
  position: { node: string; visit: number; budget: StopInfo['budget'] },
  maxSteps: number,
): StopInfo & { reason: string } {
  const { node: id, visit, budget } = position
  // A node with no condition holding works again without an edge to itself: a loop the graph does not show.
  const reworking = state.lastHop?.node === id && state.lastHop.next === id && !state.lastHop.edge
  // The loop the run went round to come back here: the notes of the component it sits in may be more.
  const loop = loopOf(graph, id, workedNodes(state.outputs))
  const stop: StopInfo = { budget, node: id, visit, loop }
  const note = graph.nodes.get(id)
  const reason = budgetReason(stop, { reworking, maxVisits: note?.maxVisits ?? 0, maxSteps, file: note?.file ?? `${id}.md` })
  return { ...stop, reason }
}

/** The nodes a run worked, oldest first, from its outputs: feedback a person handed on belongs to the visit it followed. */
export function workedNodes(outputs: readonly StepOutput[]): string[] {
  return outputs
    .filter((each, index) => index === 0 || outputs[index - 1]!.node !== each.node || outputs[index - 1]!.visit !== each.visit)
    .map((each) => each.node)
}

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

/** A model whose calls are counted (`count` told each call's usage) before the caller's own `onUsage`; `llm` is asked for at the first call. */
export function countedModel(llm: () => CallLLM, count: (usage: ModelUsage) => void): CallLLM {
  return (prompt, options) =>
    llm()(prompt, {
      ...options,
      onUsage: (usage) => {
        count(usage)
        options.onUsage?.(usage)
      },
    })
}

/** Tells a listener of an event; observers cannot break the run: one that throws is reported and the run goes on. */
export function tell(listener: ((event: RunEvent) => void) | undefined, event: RunEvent): void {
  if (listener) {
    try {
      listener(event)
    } catch (error) {
      reportListenerError(error)
    }
  }
  crashSeam.afterEvent?.(event)
}

let reported = false

/** Observers cannot break a run: a throwing listener is reported once, as a process warning. */
export function reportListenerError(error: unknown): void {
  if (reported) return
  reported = true
  process.emitWarning(
    `An onEvent listener threw (the run goes on; further errors of listeners are not reported): ${error instanceof Error ? error.message : String(error)}`,
    { code: 'VAULTPLAN_LISTENER' },
  )
}

/** A text on one line, cut at 80 characters, for a message. */
export function clipLine(text: string): string {
  const line = text.replace(/\s+/g, ' ').trim()
  return line.length > 80 ? `${line.slice(0, 80)}…` : line
}

/**
 * Refuses a caller's choice that names none of the node's conditions, before anything is written.
 *
 * @throws {@link RunStateError} `bad-choice` listing the valid choices
 */
export function checkChoice(node: PlanNode, choice: string, predicates: Record<string, Predicate> | undefined): void {
  if (typeof choice === 'string' && matchChoice(node, choice, predicates)) return
  const conditions = conditionsOf(node, predicates)
  const valid =
    conditions.length > 0 ? `the valid choices are ${conditions.map((each) => `\`${each}\``).join(', ')}` : 'the note is a terminal and takes no choice'
  throw new RunStateError('bad-choice', `\`${String(choice)}\` is not a choice of \`${node.id}\`: ${valid}. Nothing was written.`, {
    node: node.id,
    choices: conditions,
  })
}

/**
 * Fails before anything is written when the judge will need a model (conditions remain) and none is configured.
 *
 * @throws {@link ModelConfigError} naming the variables to set, and the choices a caller could pass instead
 */
export function checkJudgeModel(node: PlanNode, predicates: Record<string, Predicate> | undefined): void {
  const conditions = conditionsOf(node, predicates)
  if (!conditions.some((label) => label !== 'next')) return
  try {
    resolveModelConfig(node.role ?? 'transition')
  } catch (error) {
    if (!(error instanceof ModelConfigError)) throw error
    throw new ModelConfigError(
      error.role,
      `${error.message} Or pass a \`choice\`: one of ${conditions.map((each) => `\`${each}\``).join(', ')}. Nothing was written.`,
    )
  }
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

/** What a waiting reason says of a `wait:` deadline: when it falls, or since when it is overdue; nothing without one. */
export function dueWords(clock: WaitClock | undefined): string {
  if (clock?.deadline === undefined) return ''
  return clock.overdue ? ` It is overdue since ${clock.deadline}.` : ` Its deadline is ${clock.deadline}.`
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

/** Why a run waits, naming every waiting note by its path from the top vault. */
export function waitingReason(waiting: readonly WaitingNote[]): string {
  const each = waiting.map((note) =>
    note.kind === 'blocked'
      ? `\`${note.node}\` (blocked${note.reason ? `: ${note.reason}` : ''}; unblock it with \`decide\` and edge \`unblock\`, or set \`status: pending\` in \`${note.file}\`)`
      : `\`${note.node}\` (tick one box under \`## Next\` in \`${note.file}\`)`,
  )
  return `${each.length === 1 ? `${each[0]} waits` : `${each.length} notes wait: ${each.join(', ')}; each waits`} for a person; then run the vault again.`
}

/** A subplan's budget stop told from the top vault: its notes by their path from it, the reason saying where. */
export function stopInSubplan(stop: StopInfo & { reason: string }, folder: string): StopInfo & { reason: string } {
  const path = (id: string) => `${folder}/${id}`
  return { ...stop, node: path(stop.node), loop: stop.loop.map(path), reason: `In the subplan \`${folder}/\`: ${stop.reason}` }
}

/** A `stale-step` refusal: `key` is not the visit pending in `vault`, which is `pending` (with the data a caller reads instead of the words). */
export function staleStep(vault: string, key: string, pending: PendingStep | null): RunStateError<'stale-step'> {
  const now = pending
    ? ` The pending step is \`${pending.plan === undefined ? '' : `${pending.plan}/`}${pending.node}\`, visit ${pending.visit}, key \`${pending.key}\`.`
    : ''
  return new RunStateError(
    'stale-step',
    `The key \`${key}\` is not the pending step of \`${vault}\`; nothing was written.${now} Call nextStep to get the current step.`,
    {
      pending,
    },
  )
}

/** Why a run cannot go on with more than one note `active` (`files`: the notes, relative to the vault). */
export function twoActiveReason(files: readonly string[]): string {
  return `Two notes are \`status: active\` (${files.map((file) => `\`${file}\``).join(', ')}); a run is at one node at a time. Set all but one to \`done\` or \`pending\`, then run again.`
}
