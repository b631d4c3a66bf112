import { readdir, readFile } from 'node:fs/promises'
import { vaultName, vaultPath, PathRefusal } from '../mcp/paths.js'
import { observeRun } from '../run/read/observe-run.js'
import type { WaitingNote } from '../run/core/run-options.js'
import { feedbackAsTyped } from '../vault/note-edits.js'
import { confinedOrNothing } from '../vault/path-gate.js'
import { parseProposal, readProposalNote, type ProposalChoice, type ProposalStatus } from '../vault/proposal-note.js'
import { PROPOSAL_FILE, PROPOSALS_FOLDER } from '../vault/run-folder.js'

/** One version of a proposed plan: its proposal note's say and the notes it wrote. */
export interface PlanVersion {
  version: number
  status: ProposalStatus
  query: string
  /** What a person wrote under the version's `## Feedback` (their words, without the block quote's `>`): for a kept version, what sent it back. */
  feedback?: string
  /** The folder its notes are in, relative to the vault: `''` for the version in use. */
  folder: string
  /** Its notes as they are now, in the order the proposal lists them; one deleted since is left out. */
  notes: { file: string; text: string }[]
}

/** What the proposal page shows: every version of a vault's proposal and whether it waits on a person. */
export interface ProposalHistory {
  name: string
  /** Oldest first; the version in use is last. */
  versions: PlanVersion[]
  /** The boxes ticked on the version in use that no run has acted on yet. */
  ticked: ProposalChoice[]
  /** The proposal's waiting note while it waits on a person. */
  waiting: WaitingNote | undefined
  /** The version in use came from an agent (`planner: agent`): a `revise` sends it back to that agent, not to a model. */
  agent: boolean
}

/**
 * Every version of the proposal of a vault of the root: those kept under
 * `00_plan-trace/proposals/v<n>/` by each revision and the one in use, each
 * with its notes. `undefined` when the vault has no proposal. A kept
 * version that cannot be read any more is left out; a note path that
 * leaves the vault is never read.
 *
 * @throws `PathRefusal` when `name` leaves the root or is no vault
 * @throws `RunStateError` `proposal-unreadable` when the proposal in use lost its `version` or `query`
 */
export async function proposalHistory(root: string, name: string): Promise<ProposalHistory | undefined> {
  const vault = await vaultPath(root, name)
  if (confinedOrNothing(vault, PROPOSAL_FILE, 'the proposal') === undefined)
    throw new PathRefusal('outside-root', `\`${PROPOSAL_FILE}\` of \`${name}\` leads outside the root; it is not read`)
  const [current, snapshot] = await Promise.all([readProposalNote(vault), observeRun(vault, { hops: 0 })])
  if (!current) return undefined
  const kept = await keptVersions(vault, current.version)
  const inUse: PlanVersion = { ...versionOf(current), folder: '', notes: await notesOf(vault, '', current.notes) }
  return {
    name: vaultName(root, vault),
    versions: [...kept, inUse],
    ticked: current.status === 'pending' ? current.ticked : [],
    // Sent back to the agent that proposed it, it has no choices: nobody needs to decide.
    waiting: snapshot.waiting.find((note) => note.file === PROPOSAL_FILE && note.choices.length > 0),
    agent: current.planner === 'agent',
  }
}

/** The versions a revision kept, oldest first, below `before`. */
async function keptVersions(vault: string, before: number): Promise<PlanVersion[]> {
  const folder = confinedOrNothing(vault, PROPOSALS_FOLDER, 'the kept proposals')
  const names = folder === undefined ? [] : await readdir(folder).catch(() => [] as string[])
  const numbers = names.flatMap((each) => {
    const version = /^v(\d+)$/.exec(each)?.[1]
    return version === undefined || Number(version) >= before ? [] : [Number(version)]
  })
  const versions: PlanVersion[] = []
  for (const number of numbers.sort((a, b) => a - b)) {
    const folder = `${PROPOSALS_FOLDER}/v${number}`
    const path = confinedOrNothing(vault, `${folder}/proposal.md`, 'a kept proposal')
    const text = path === undefined ? undefined : await readFile(path, 'utf8').catch(() => undefined)
    if (text === undefined) continue
    try {
      const note = parseProposal(text, vault)
      versions.push({ ...versionOf(note), folder, notes: await notesOf(vault, folder, note.notes) })
    } catch {
      // A kept version a person broke is no longer shown; the others are.
    }
  }
  return versions
}

function versionOf(note: ReturnType<typeof parseProposal>): Omit<PlanVersion, 'folder' | 'notes'> {
  const version: Omit<PlanVersion, 'folder' | 'notes'> = { version: note.version, status: note.status, query: note.query }
  if (note.feedback !== undefined) version.feedback = feedbackAsTyped(note.feedback)
  return version
}

/** The notes `files` (from a proposal's `notes:`, text anyone may edit) under `folder` of the vault, each read only if it stays inside the vault. */
async function notesOf(vault: string, folder: string, files: readonly string[]): Promise<PlanVersion['notes']> {
  const read = await Promise.all(
    files.map(async (file) => {
      const path = confinedOrNothing(vault, folder === '' ? file : `${folder}/${file}`, 'a note of the proposal')
      const text = path === undefined ? undefined : await readFile(path, 'utf8').catch(() => undefined)
      return text === undefined ? [] : [{ file, text }]
    }),
  )
  return read.flat()
}
