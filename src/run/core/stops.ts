import { type Replay } from './run-core.js'
import type { StopInfo } from './run-options.js'
import { loopOf, type PlanShape } from '../../plan/validate.js'
import { stepBudgetWords } from './reason-for.js'
import type { StepOutput } from '../../core/types.js'

/*
 * A budget stop as data and words (pure): which budget refused which visit,
 * the loop the run went round, and what to raise.
 */

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

/** A subplan's budget stop told from the top vault: its notes by their path from it, the reason saying where. */
export function stopInSubplan(stop: StopInfo & { reason: string }, folder: string): StopInfo & { reason: string } {
  const path = (id: string) => `${folder}/${id}`
  return { ...stop, node: path(stop.node), loop: stop.loop.map(path), reason: `In the subplan \`${folder}/\`: ${stop.reason}` }
}
