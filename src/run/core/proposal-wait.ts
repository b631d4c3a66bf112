import { PROPOSAL_CHOICES, PROPOSAL_NODE, proposalStand, type ProposalNote } from '../../vault/proposal-note.js'
import { PROPOSAL_FILE } from '../../vault/run-folder.js'
import { feedbackAsTyped } from '../../vault/note-edits.js'
import { waitClock } from './deadline.js'
import type { Step, WaitingNote } from './run-options.js'
import { dueWords } from './messages.js'
/*
 * What a pending proposal waits for (pure): the step `runPlan` and the
 * stepping calls return, and the entry the snapshot lists, from the note
 * and the clock alone, so they cannot disagree.
 */

/**
 * The `waiting` entry of a pending proposal at `now`: a person's three
 * boxes, with its `wait:` deadline counted from when the version was
 * proposed; or, for an agent's proposal sent back with `revise`, no choices
 * and the person's feedback as `reason` (the agent writes the next version,
 * and a deadline is on people only).
 */
export function proposalWaitingNote(note: ProposalNote, now: number): WaitingNote {
  const entry: WaitingNote = { node: PROPOSAL_NODE, file: PROPOSAL_FILE, kind: 'proposal', choices: [] }
  if (proposalStand(note).kind === 'awaiting-agent') return note.feedback === undefined ? entry : { ...entry, reason: feedbackAsTyped(note.feedback) }
  // A proposal is a note whose `wait:` is in its frontmatter and which has no `timeout` edge: past its deadline it is overdue.
  const clock = note.proposed === undefined ? {} : waitClock({ edges: [], ...(note.wait !== undefined && { wait: note.wait }) }, note.proposed, now)
  return { ...entry, choices: [...PROPOSAL_CHOICES], ...clock }
}

/** The step of a pending proposal: it waits for a person's box, or, sent back to the agent that wrote it, for the agent's next version. */
export function proposalWaiting(note: ProposalNote, now: number): Extract<Step, { kind: 'waiting' }> {
  const entry = proposalWaitingNote(note, now)
  let reason: string
  if (entry.choices.length === 0) {
    reason =
      `Proposal v${note.version} was sent back by a person: write version ${note.version + 1} as a plan document from their ` +
      `feedback (the waiting entry's \`reason\`) and propose it again, with \`proposePlan(query, { into, document })\`, ` +
      `the MCP tool plan_propose or \`vaultplan propose --document\`. Nothing runs until then.`
  } else {
    reason =
      `Proposal v${note.version} waits for a person: tick \`approve\`, \`revise\` (with what must ` +
      `change under \`## Feedback\`) or \`decline\` in \`${PROPOSAL_FILE}\`, then run the vault again.${dueWords(entry)}`
  }
  return { kind: 'waiting', runId: '', waiting: [entry], reason }
}
