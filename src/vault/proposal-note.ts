import { join } from 'node:path'
import { RunStateError } from '../core/errors.js'
import { parseFrontmatter } from './frontmatter.js'
import { PROPOSAL_FILE, PROPOSALS_FOLDER } from './run-folder.js'
import { addFeedback, tickBox, feedbackAsTyped } from './note-edits.js'
import { parseNote } from './parse-note.js'
import { editNote } from './edit-note.js'
import { readNoteForRewrite } from './settled-read.js'
import { countLines } from '../core/text.js'
import { durationMs } from '../core/durations.js'

/** The id `waiting` and `decide` use for the proposal. */
export const PROPOSAL_NODE = 'proposal'
/** The three boxes of a proposal, in the order they are written. */
export const PROPOSAL_CHOICES = ['approve', 'revise', 'decline'] as const
/** Where a proposal's statuses go: `revised` is a version kept under `proposals/v<n>/`. */
export const PROPOSAL_STATUSES = ['pending', 'approved', 'revised', 'declined'] as const

export type ProposalChoice = (typeof PROPOSAL_CHOICES)[number]
export type ProposalStatus = (typeof PROPOSAL_STATUSES)[number]

/** What `readProposal` tells of a vault's proposal. */
export interface ProposalInfo {
  /** 1 for the first plan, n+1 after each revision. */
  version: number
  status: ProposalStatus
  /** The previous version's proposal note, relative to the vault (from version 2 on). */
  parent?: string
  /** The text under the proposal's `## Feedback`, when a person wrote some. */
  feedback?: string
  /** `agent` when the version came from a document an agent wrote (`proposePlan` with `document`); left out for a model's. */
  planner?: 'agent'
}

/** A proposal note as read from its text: what `readProposal` says, and what the run needs. */
export interface ProposalNote extends ProposalInfo {
  query: string
  /** The notes this version wrote, relative to the vault. */
  notes: string[]
  /** The boxes ticked (`[x]`), in file order. */
  ticked: ProposalChoice[]
  /** Per choice, the 1-based line of its box (for `decide`). */
  boxes: Partial<Record<ProposalChoice, number>>
  /** The frontmatter's `wait:`, a duration (`2d`): how long the version may wait for a person before it is overdue. */
  wait?: string
  /** The frontmatter's `proposed:`, ISO 8601: when this version was written, so when its wait for a person began. */
  proposed?: string
}

/**
 * Reads the proposal of a vault written by `proposePlan`: its version, its
 * status (`pending` until a box is ticked and the vault run), the previous
 * version it revises, the person's feedback, and `planner: 'agent'` when an
 * agent wrote it (`proposePlan` with a `document`). `undefined` when the vault
 * has no proposal. A person may edit the note: only its frontmatter keys
 * and its boxes are read.
 *
 * @throws {@link RunStateError} `proposal-unreadable` when the note lost its `version` or `query`
 */
export async function readProposal(vault: string): Promise<ProposalInfo | undefined> {
  if (typeof vault !== 'string' || vault === '') throw new TypeError(`Expected \`vault\` to be a folder path, got \`${String(vault)}\``)
  const note = await readProposalNote(vault)
  return note && toProposalInfo(note)
}

/** What `readProposal` says of a read proposal note. */
export function toProposalInfo(note: ProposalNote): ProposalInfo {
  const info: ProposalInfo = { version: note.version, status: note.status }
  if (note.parent !== undefined) info.parent = note.parent
  if (note.feedback !== undefined) info.feedback = note.feedback
  if (note.planner !== undefined) info.planner = note.planner
  return info
}

/**
 * The proposal note of a vault with its text, or `undefined` when there is
 * none. Read once it has settled (a save caught part way is read again);
 * `forRewrite`: its text is about to be patched, so a version saved a
 * moment ago is doubted too.
 */
export async function readProposalNote(vault: string, forRewrite = false): Promise<(ProposalNote & { text: string }) | undefined> {
  let text: string
  try {
    text = await readNoteForRewrite(PROPOSAL_FILE, join(vault, PROPOSAL_FILE), forRewrite)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    if (error instanceof RunStateError) throw error
    throw new RunStateError(
      'proposal-unreadable',
      `\`${PROPOSAL_FILE}\` in \`${vault}\` cannot be read (${(error as Error).message}).`,
      { file: PROPOSAL_FILE },
      { cause: error },
    )
  }
  return { ...parseProposal(text, vault), text }
}

/**
 * Reads a proposal note's text: the frontmatter's `version`, `status`,
 * `query`, `notes` and `parent`, the ticked boxes, the `## Feedback` text.
 *
 * @throws {@link RunStateError} `proposal-unreadable` when `version` or `query` is missing or not of its kind
 */
export function parseProposal(text: string, vault = '.'): ProposalNote {
  const { data, problems } = parseFrontmatter(text)
  const unreadable = (why: string) =>
    new RunStateError(
      'proposal-unreadable',
      `\`${PROPOSAL_FILE}\` in \`${vault}\` ${why}; restore it (the previous versions are under \`${PROPOSALS_FOLDER}/\`), or remove it to run the plan unapproved.`,
      { file: PROPOSAL_FILE },
    )
  if (problems.length > 0) throw unreadable(`has frontmatter that cannot be read (${problems[0]!.message})`)
  const version = data.version
  if (!(Number.isInteger(version) && (version as number) >= 1)) throw unreadable(`has no \`version:\` from 1 up (got \`${JSON.stringify(version)}\`)`)
  if (typeof data.query !== 'string' || data.query.trim() === '') throw unreadable('has no `query:`')
  const status = PROPOSAL_STATUSES.find(
    (each) =>
      each ===
      String(data.status ?? 'pending')
        .trim()
        .toLowerCase(),
  )
  if (status === undefined) throw unreadable(`has \`status: ${String(data.status)}\`, not one of ${PROPOSAL_STATUSES.map((each) => `\`${each}\``).join(', ')}`)
  const notes = Array.isArray(data.notes) ? data.notes.filter((file): file is string => typeof file === 'string') : []
  const { ticked, boxes } = readBoxes(text)
  const note: ProposalNote = { version: version as number, status, query: data.query, notes, ticked, boxes }
  if (typeof data.parent === 'string' && data.parent !== '') note.parent = data.parent
  if (typeof data.planner === 'string' && data.planner.trim().toLowerCase() === 'agent') note.planner = 'agent'
  // A `wait:` a person mistyped is no deadline, as a note's unreadable knob is none.
  if (typeof data.wait === 'string' && durationMs(data.wait) !== undefined) note.wait = data.wait.trim()
  if (typeof data.proposed === 'string' && !Number.isNaN(Date.parse(data.proposed))) note.proposed = data.proposed
  const feedback = parseNote('proposal.md', text).feedback.trim()
  if (feedback !== '') note.feedback = feedback
  return note
}

/** The task items `- [ ] approve`, `- [ ] revise`, `- [ ] decline` (anything may follow the word), outside code fences. */
function readBoxes(text: string): { ticked: ProposalChoice[]; boxes: Partial<Record<ProposalChoice, number>> } {
  const ticked: ProposalChoice[] = []
  const boxes: Partial<Record<ProposalChoice, number>> = {}
  let fence: string | undefined
  const contentStart = parseFrontmatter(text).split.contentStart
  const lines = text.slice(contentStart).split('\n')
  const offset = countLines(text, contentStart)
  for (const [index, line] of lines.entries()) {
    const opening = /^\s{0,3}(`{3,}|~{3,})/.exec(line)?.[1]
    if (opening && (fence === undefined || (opening[0] === fence[0] && opening.length >= fence.length))) {
      fence = fence === undefined ? opening : undefined
      continue
    }
    if (fence !== undefined) continue
    const item = /^\s*[-*+]\s+\[([^\]\n])\]\s+\**(approve|revise|decline)\b/i.exec(line)
    if (!item) continue
    const choice = item[2]!.toLowerCase() as ProposalChoice
    boxes[choice] ??= offset + index + 1
    if (/[xX]/.test(item[1]!) && !ticked.includes(choice)) ticked.push(choice)
  }
  return { ticked, boxes }
}

/** What a proposal asks of a run, decided from the note alone; `awaiting-agent`: an agent's proposal sent back, which no model revises. */
export type ProposalStand =
  | { kind: 'run'; query: string }
  | { kind: 'waiting' }
  | { kind: 'approve' | 'revise' | 'decline' }
  | { kind: 'awaiting-agent' }
  | { kind: 'declined' }
  | { kind: 'ambiguous'; ticked: ProposalChoice[] }

/**
 * Where a proposal stands: an approved one runs with its query, a declined
 * one never runs; a pending one follows its one ticked box, waits with none
 * ticked, and is an error with more than one. An agent's proposal sent back
 * with `revise` waits for the agent's next version.
 */
export function proposalStand(note: ProposalNote): ProposalStand {
  if (note.status === 'approved') return { kind: 'run', query: note.query }
  if (note.status === 'declined') return { kind: 'declined' }
  if (note.ticked.length > 1) return { kind: 'ambiguous', ticked: note.ticked }
  const choice = note.ticked[0]
  if (choice === 'revise' && note.planner === 'agent') return { kind: 'awaiting-agent' }
  return choice === undefined ? { kind: 'waiting' } : { kind: choice }
}

/** What a new proposal note says. */
export interface ProposalContent {
  version: number
  query: string
  notes: string[]
  /** The node ids of the plan, in plan order, linked from the note. */
  nodes: string[]
  parent?: string
  /** The earlier versions, oldest first: their folder and the feedback that sent each back. */
  earlier: { version: number; folder: string; feedback?: string }[]
  /** Set when the planner's document was not a valid plan. */
  degraded?: string
  /** `agent` for a version an agent wrote as a document. */
  planner?: 'agent'
  /** How long the version may wait for a person (`wait:`). */
  wait?: string
  /** When the version is written, ISO 8601. */
  proposed: string
}

/** The text of a new proposal note: frontmatter, the query, the plan's notes, the three boxes, `## Feedback`. */
export function renderProposal(content: ProposalContent): string {
  const front = [
    'vaultplan: proposal',
    `version: ${content.version}`,
    'status: pending',
    `query: ${JSON.stringify(content.query)}`,
    `notes: ${JSON.stringify(content.notes)}`,
    ...(content.parent === undefined ? [] : [`parent: ${JSON.stringify(content.parent)}`]),
    ...(content.planner === undefined ? [] : [`planner: ${content.planner}`]),
    `proposed: ${JSON.stringify(content.proposed)}`,
    ...(content.wait === undefined ? [] : [`wait: ${content.wait}`]),
  ]
  const quoted = content.query.split(/\r?\n/).map((line) => (line === '' ? '>' : `> ${line}`))
  const lines = [
    '---',
    ...front,
    '---',
    `# Proposal v${content.version}`,
    '',
    'A plan was written into this vault for the query below. It does not run until it is approved.',
    ...(content.planner === 'agent'
      ? [
          'Tick one box, then run the vault again: `approve` runs it, `revise` sends it back to the agent that proposed it',
          'with what you write under `## Feedback`, `decline` keeps it from ever running.',
        ]
      : [
          'Tick one box, then run the vault again: `approve` runs it, `revise` has the planner write the next version',
          'from what you write under `## Feedback`, `decline` keeps it from ever running.',
        ]),
    '',
    ...quoted,
    '',
    '## Plan',
    '',
    ...content.nodes.map((id) => `- [[${id}]]`),
    ...(content.degraded === undefined ? [] : ['', `Degraded: ${content.degraded}`]),
    '',
    '## Decision',
    '',
    ...PROPOSAL_CHOICES.map((choice) => `- [ ] ${choice}`),
    '',
  ]
  if (content.earlier.length > 0) {
    lines.push('## Earlier versions', '')
    for (const earlier of content.earlier) {
      const why = earlier.feedback === undefined ? '' : `: ${feedbackAsTyped(earlier.feedback).split(/\r?\n/).join(' ')}`
      lines.push(`- [[${earlier.folder}/proposal|v${earlier.version}]]${why}`)
    }
    lines.push('')
  }
  lines.push('## Feedback', '', '')
  return lines.join('\n')
}

/** Refuses a decision made on another version of the proposal than the one it holds (`madeOn` undefined: any). */
function refuseOtherVersion(current: number, madeOn: number | undefined): void {
  if (madeOn === undefined || madeOn === current) return
  throw new RunStateError(
    'stale-decision',
    `The proposal is at version ${current} now, and this decision was made on version ${madeOn}; nothing was changed. Look at version ${current}, then decide again.`,
    { node: PROPOSAL_NODE, madeOn, current },
  )
}

/**
 * Ticks one box of a pending proposal (and adds `feedback` under its
 * `## Feedback`), the way a person does in their notes app; no other byte
 * changes, and a save made meanwhile is read again (see `editNote`).
 * Resolves to `false`, writing nothing, when the vault has no pending
 * proposal.
 *
 * @throws {@link RunStateError} `bad-choice` for another choice than `approve`, `revise`, `decline` (or a box the person removed); `ambiguous-decision` when another box is ticked; `note-busy` when the note kept changing; `stale-decision` when `version` is given and the proposal is at another
 */
export async function decideProposal(vault: string, decision: { edge: string; feedback?: string; version?: number }): Promise<boolean> {
  const first = await readProposalNote(vault, true)
  if (first) refuseOtherVersion(first.version, decision.version)
  if (!first || first.status !== 'pending') return false
  // Decided on the note as it is when written: the checks below run again on a save made meanwhile.
  const edited = await editNote(PROPOSAL_FILE, join(vault, PROPOSAL_FILE), (text) => {
    const note = parseProposal(text, vault)
    refuseOtherVersion(note.version, decision.version)
    if (note.status !== 'pending') return undefined
    const choice = PROPOSAL_CHOICES.find((each) => each === decision.edge.trim().toLowerCase())
    const line = choice === undefined ? undefined : note.boxes[choice]
    if (choice === undefined || line === undefined) {
      const missing = choice === undefined ? 'is not a choice of the proposal' : 'has no box in the proposal (was its line removed?)'
      throw new RunStateError(
        'bad-choice',
        `\`${decision.edge}\` ${missing}; its choices are ${PROPOSAL_CHOICES.map((each) => `\`${each}\``).join(', ')}. Nothing was changed.`,
        { node: PROPOSAL_NODE, choices: [...PROPOSAL_CHOICES] },
      )
    }
    const other = note.ticked.find((each) => each !== choice)
    if (other !== undefined)
      throw new RunStateError('ambiguous-decision', `\`${PROPOSAL_FILE}\` has \`${other}\` ticked already; untick it first, or decide \`${other}\`.`, {
        node: PROPOSAL_NODE,
        file: PROPOSAL_FILE,
        ticked: [other],
      })
    const updated = note.ticked.includes(choice) ? text : tickBox(text, line)
    return decision.feedback !== undefined && decision.feedback.trim() !== '' ? addFeedback(updated, decision.feedback) : updated
  })
  return edited !== undefined
}
