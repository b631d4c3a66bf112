import { join } from 'node:path'
import { RunStateError } from '../../core/errors.js'
import { setFrontmatterStatus } from '../../vault/frontmatter.js'
import { editNote } from '../../vault/edit-note.js'
import { createLLM } from '../../models/llm-client.js'
import { PROPOSAL_NODE, proposalStand, readProposalNote, type ProposalNote, type ProposalStatus } from '../../vault/proposal-note.js'
import { PROPOSAL_FILE } from '../../vault/run-folder.js'
import { reviseProposal } from './propose-plan.js'
import { proposalWaiting } from '../core/proposal-wait.js'
import { replay } from '../core/run-core.js'
import type { RunResult, Step } from '../core/run-options.js'
import { clipLine } from '../core/messages.js'
import { tell } from '../drive/events.js'
import { toRunResult } from '../core/steps.js'
import type { CallLLM, RunEvent } from '../../core/types.js'

/** What a proposal lets a run do. */
export type ProposalGate = { kind: 'run'; query: string | undefined } | { kind: 'waiting'; step: Extract<Step, { kind: 'waiting' }> }

/**
 * The proposal's say before a locked vault runs: no
 * proposal, or an approved one, lets the run go on (with the proposal's
 * query when the caller gives none); a pending one follows its ticked box:
 * `approve` marks it approved and runs, `revise` has the planner write the
 * next version and waits again (an agent's proposal waits for the agent's
 * next version instead: no model is asked), `decline` marks it declined;
 * with no box ticked it waits, overdue past its `wait:` deadline.
 *
 * @throws {@link RunStateError} `declined` for a declined proposal; `ambiguous-decision` for more than one box ticked; `query-mismatch` for another query than the approved one
 */
export async function proposalGate(
  vault: string,
  options: { query?: string | undefined; fresh: boolean; llm?: CallLLM | undefined; fsync: boolean; signal?: AbortSignal | undefined },
): Promise<ProposalGate> {
  const note = await readProposalNote(vault)
  if (!note) return { kind: 'run', query: options.query }
  const stand = proposalStand(note)
  switch (stand.kind) {
    case 'waiting':
    case 'awaiting-agent':
      return { kind: 'waiting', step: proposalWaiting(note, Date.now()) }
    case 'ambiguous':
      throw new RunStateError(
        'ambiguous-decision',
        `\`${PROPOSAL_FILE}\` has ${stand.ticked.map((each) => `\`${each}\``).join(' and ')} ticked; tick exactly one, then run the vault again.`,
        { node: PROPOSAL_NODE, file: PROPOSAL_FILE, ticked: stand.ticked },
      )
    case 'decline':
      await setProposalStatus(vault, 'declined')
      throw declined(vault, note)
    case 'declined':
      throw declined(vault, note)
    case 'revise': {
      const revised = await reviseProposal(vault, note, { llm: options.llm ?? createLLM(), fsync: options.fsync, signal: options.signal })
      return { kind: 'waiting', step: proposalWaiting(revised, Date.now()) }
    }
    case 'approve':
    case 'run':
      break
  }
  if (options.query !== undefined && options.query !== note.query && !options.fresh) {
    throw new RunStateError(
      'query-mismatch',
      `The proposal in \`${vault}\` was approved for the query ${JSON.stringify(clipLine(note.query))}, ` +
        `not ${JSON.stringify(clipLine(options.query))}. Nothing was changed: leave the query out to ` +
        `run the approved plan, or pass \`fresh: true\` to run it for another query.`,
      { recorded: note.query },
    )
  }
  if (stand.kind === 'approve') await setProposalStatus(vault, 'approved')
  return { kind: 'run', query: options.query ?? note.query }
}

/** `runPlan`'s result while the proposal waits: nothing ran, the `waiting` event told. */
export function proposalResult(step: Extract<Step, { kind: 'waiting' }>, vault: string, onEvent: ((event: RunEvent) => void) | undefined): RunResult {
  tell(onEvent, { type: 'waiting', node: PROPOSAL_NODE, reason: step.reason })
  return toRunResult(step, { runId: '', replay: replay([], () => undefined), vault, degraded: undefined })
}

function declined(vault: string, note: ProposalNote): RunStateError {
  return new RunStateError('declined', `The proposal in \`${vault}\` (v${note.version}) was declined: its plan never runs. Propose again for a new plan.`, {
    version: note.version,
  })
}

/** Sets the proposal's `status:`, every other byte kept; an edit saved meanwhile is read again (see `editNote`). */
async function setProposalStatus(vault: string, status: ProposalStatus): Promise<void> {
  await editNote(PROPOSAL_FILE, join(vault, PROPOSAL_FILE), (text) => setFrontmatterStatus(text, status))
}
