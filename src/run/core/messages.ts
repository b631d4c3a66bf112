import { RunStateError, type PendingStep } from '../../core/errors.js'
import type { WaitingNote } from './run-options.js'
import type { WaitClock } from './deadline.js'
import { conditionsOf, matchChoice } from '../../models/transitions.js'
import type { PlanNode, Predicate } from '../../core/types.js'

/*
 * What a run says to its caller in words (pure): why it waits, why a key or a
 * choice is refused, two `active` notes. Every sentence has its data beside it.
 */

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

/** What a waiting reason says of a `wait:` deadline: when it falls, or since when it is overdue; nothing without one. */
export function dueWords(clock: WaitClock | undefined): string {
  if (clock?.deadline === undefined) return ''
  return clock.overdue ? ` It is overdue since ${clock.deadline}.` : ` Its deadline is ${clock.deadline}.`
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
