import { join } from 'node:path'
import { RunStateError } from '../core/errors.js'
import { setFrontmatterStatus } from '../vault/frontmatter.js'
import { editNote } from '../vault/edit-note.js'
import { createLLM } from '../models/llm-client.js'
import { PROPOSAL_CHOICES, PROPOSAL_NODE, proposalStand, readProposalNote, type ProposalNote, type ProposalStatus } from '../vault/proposal-note.js'
import { PROPOSAL_FILE } from '../vault/run-folder.js'
import { reviseProposal } from './propose-plan.js'
import { replay } from './run-core.js'
import type { RunResult, Step } from './run-options.js'
import { clipLine, tell, toRunResult } from './run-words.js'
import type { CallLLM, RunEvent } from '../core/types.js'

/** What a proposal lets a run do. */
export type ProposalGate = { kind: 'run'; query: string | undefined } | { kind: 'waiting'; step: Extract<Step, { kind: 'waiting' }> }

/**
 * The proposal's say before a locked vault runs: no
 * proposal, or an approved one, lets the run go on (with the proposal's
 * query when the caller gives none); a pending one follows its ticked box:
 * `approve` marks it approved and runs, `revise` has the planner write the
 * next version and waits again, `decline` marks it declined; with no box
 * ticked it waits.
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
      return { kind: 'waiting', step: proposalWaiting(note) }
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
      return { kind: 'waiting', step: proposalWaiting(revised) }
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

/** The step of a proposal waiting for a person: node `proposal`, its note, its three choices. */
export function proposalWaiting(note: ProposalNote): Extract<Step, { kind: 'waiting' }> {
  const reason =
    `Proposal v${note.version} waits for a person: tick \`approve\`, \`revise\` (with what must ` +
    `change under \`## Feedback\`) or \`decline\` in \`${PROPOSAL_FILE}\`, then run the vault again.`
  return { kind: 'waiting', runId: '', waiting: [{ kind: 'proposal', node: PROPOSAL_NODE, file: PROPOSAL_FILE, choices: [...PROPOSAL_CHOICES] }], reason }
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
