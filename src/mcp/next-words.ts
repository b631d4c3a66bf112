import type { RunNext } from '../run/core/run-next.js'
import type { RunStatus } from '../run/read/run-status.js'
import { runStateWords } from './refusals.js'

/** What an agent does next, in tool calls, by what the next call does (`next.kind`): plan_status's `todo`. */
const TODO: Record<RunNext['kind'], string> = {
  fresh: 'Call plan_next with `vault` and a `query` to start the run.',
  work: 'Call plan_next: it returns the note to work (the same step again when its visit is claimed already).',
  judge: 'Call plan_next: the saved output is judged first, then it returns the next note to work.',
  plan: 'Call plan_next: the planner revises the proposal first.',
  waiting: 'A person decides: call plan_decide with the note and one of its edges (or let them tick a box), then plan_next.',
  stopped:
    "A budget ran out: for the step budget, call plan_next with a larger `maxSteps`; for a note's `max_visits`, a person raises it in the note, then plan_next goes on.",
  completed: 'Nothing to do: the run is complete.',
  invalid: 'Fix the notes (plan_validate lists every problem), then plan_next.',
  declined: 'The proposal was declined: the plan never runs. A revised plan goes to the person as a new proposal (plan_propose into a new folder).',
  'two-active': 'Two notes are `status: active`; a person sets all but one back to `done` or `pending` in the notes, then plan_next.',
}

/** plan_status's `todo`: the call that goes on from where the run stands. */
export function statusTodo(status: RunStatus): string {
  if (status.holder) return 'A runner in another process is working in the vault now; call plan_status again later.'
  // A proposal an agent wrote is revised by the agent, not by a planner.
  if (status.next.kind === 'plan' && status.proposal?.planner === 'agent') return REVISE
  return TODO[status.next.kind]
}

const REVISE = 'A person sent the proposal back: call plan_propose on this vault with the same `query` and your next document.'

/**
 * plan_decide's `todo`, by what the run does after the decision: the note
 * plan_next hands out next (the decision claimed nothing), a person's next
 * wait, the end, or a declined proposal said as what to do.
 */
export function afterDecision(status: RunStatus, vault: string): string {
  const { next } = status
  switch (next.kind) {
    case 'fresh':
    case 'work':
    case 'judge':
      return `Call plan_next to take \`${next.node}\`: a decision claims nothing.`
    case 'declined': {
      const words = runStateWords('declined', { version: status.proposal?.version ?? 1 }, { tool: 'plan_decide', vault })
      return `${words.message} ${words.todo}`
    }
    case 'waiting':
      return 'A note waits for a person (plan_status lists it): ask them, then plan_decide again.'
    default:
      return statusTodo(status)
  }
}
