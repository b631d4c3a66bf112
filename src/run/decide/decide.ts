import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { RunStateError } from '../../core/errors.js'
import { editNote } from '../../vault/edit-note.js'
import { loadPlan } from '../../plan/load-plan.js'
import { addFeedback, feedbackAsTyped, tickBox, untickBox } from '../../vault/note-edits.js'
import { parseNote } from '../../vault/parse-note.js'
import { decideProposal, PROPOSAL_NODE } from '../../vault/proposal-note.js'
import type { Edge, PlanNode } from '../../core/types.js'
import type { PlanGraph } from '../../plan/plan-graph.js'
import { subplanTree } from '../../plan/subplan-tree.js'
import { setFrontmatterStatus } from '../../vault/frontmatter.js'
import { readTrace, type Trace } from '../../store/trace.js'
import { writeUntickedBoxes } from '../../store/unticked-boxes.js'
import { feedbackToHandOn, replay } from '../core/run-core.js'

/** A person's decision on a waiting note. */
export interface HumanDecision {
  /** The edge to follow: its label, its target, or `next` for the unconditional edge. */
  edge: string
  /** Text added at the end of the note's `## Feedback` section (the section is appended when there is none). */
  feedback?: string
  /**
   * The proposal's version the decision was made on (deciding `proposal`): refused with `stale-decision`
   * when the proposal is at another version now (sent back and written again since), so a decision never
   * lands on a version its maker did not see. Without it, the pending version is decided.
   */
  version?: number
  /**
   * The visit of the waiting note the decision was made on (the `visit` of the step `nextStep` handed out
   * for it): refused with `stale-decision` when the note waits at another visit now (decided since, and
   * come round again). Without it, the visit that waits is decided.
   */
  visit?: number
}

/** How often `decide` reads again when the note changed between its read and its write. */
const ATTEMPTS = 3

/**
 * Makes a person's decision from code (a chat, a web page, a Slack button):
 * ticks exactly the box of `decision.edge` in the waiting note and, with
 * `feedback`, adds the text at the end of its `## Feedback` section. No other
 * byte changes. It writes only that note, atomically and checking its stamp,
 * so it needs no runner's lock; the next `runPlan` or `nextStep` (or a
 * runner waiting on the note) follows it as a box ticked by hand. While a
 * proposal is pending (`proposePlan`), `node` `proposal` means it: the
 * edge is `approve`, `revise` or `decline`, ticked in
 * `00_plan-trace/proposal.md`. With other boxes ticked by hand already,
 * deciding one of them unticks the others; deciding an edge that is not
 * ticked is refused. A step an agent blocked (`blockStep`) has the one
 * choice `unblock`, which ticks nothing: it sets the note back to `pending`
 * (and adds the feedback), so its next claim hands the feedback on.
 * Boxes it unticked are recorded with the decision: the run that follows it
 * writes them on the decision's trace record (`unticked`).
 *
 * @param node - the waiting note's id (its path in the vault without `.md`; inside a subplan, its path from the vault: `research/approve`)
 * @throws {@link RunStateError} `not-waiting` when the note is not `status: waiting`; `bad-choice` for an unknown or ambiguous edge (or anything but `unblock` on a blocked step); `ambiguous-decision` when other boxes are ticked and `edge` is not one of them; `stale-decision` when `decision.visit` or `decision.version` names another than the one that waits
 * @throws `TypeError` on a bad argument
 */
export async function decide(vault: string, node: string, decision: HumanDecision): Promise<void> {
  await decideNote(vault, node, decision)
}

/**
 * {@link decide}, telling what it unticked: the labels of the other boxes
 * ticked by hand (`next` for the unconditional edge), none when there were
 * none. The MCP tool `plan_decide` says them in its result.
 *
 * @throws as {@link decide}
 */
export async function decideNote(vault: string, node: string, decision: HumanDecision): Promise<{ unticked: string[] }> {
  if (typeof node !== 'string' || node === '') throw new TypeError(`Expected \`node\` to be a note id, got \`${String(node)}\``)
  if (!decision || typeof decision.edge !== 'string') throw new TypeError(`Expected \`decision.edge\` to be a string, got \`${typeof decision?.edge}\``)
  if (decision.feedback !== undefined && typeof decision.feedback !== 'string')
    throw new TypeError(`Expected \`decision.feedback\` to be a string, got \`${typeof decision.feedback}\``)
  for (const key of ['version', 'visit'] as const) {
    const value = decision[key]
    if (value !== undefined && !(Number.isInteger(value) && value >= 1))
      throw new TypeError(`Expected \`decision.${key}\` to be an integer from 1 up, got \`${value}\``)
  }
  // While a proposal is pending, `proposal` means it, not a note of that name.
  if (node === PROPOSAL_NODE && (await decideProposal(vault, decision))) return { unticked: [] }
  for (let attempt = 1; ; attempt++) {
    const graph = await loadPlan(vault)
    const { notes: all, places } = notesOfTree(graph)
    const planNode = all.get(node.normalize('NFC')) ?? all.get(node.replace(/\.md$/i, '').normalize('NFC'))
    if (!planNode)
      throw new RunStateError('not-waiting', `The vault \`${vault}\` has no note \`${node}\`; the notes waiting for a person are ${waitingOf(all.values())}.`, {
        node,
        status: null,
        waiting: waitingIds(all.values()),
      })
    if (planNode.status !== 'waiting') {
      throw new RunStateError(
        'not-waiting',
        `\`${planNode.file ?? node}\` is \`status: ${planNode.status}\`, not waiting for a person; the notes waiting are ${waitingOf(all.values())}.`,
        { node: planNode.id, status: planNode.status, waiting: waitingIds(all.values()) },
      )
    }
    const file = planNode.file ?? `${planNode.id}.md`
    if (decision.visit !== undefined) await refuseOtherVisit(vault, planNode, places.get(planNode)!, decision.visit)
    // A step an agent blocked (docs/stepping.md, several agents): its one choice is `unblock`, which ticks nothing and sets it `pending`.
    if (await isBlocked(vault, places.get(planNode)!)) {
      if (decision.edge.trim().toLowerCase() !== 'unblock')
        throw new RunStateError('bad-choice', `\`${planNode.id}\` was blocked by an agent; its one choice is \`unblock\`. Nothing was changed.`, {
          node: planNode.id,
          choices: ['unblock'],
        })
      const unblocked = await editNote(file, join(vault, file), (text) => {
        const pending = setFrontmatterStatus(text, 'pending')
        return decision.feedback !== undefined && decision.feedback.trim() !== '' ? addFeedback(pending, decision.feedback) : pending
      })
      if (unblocked !== undefined) return { unticked: [] }
      if (attempt >= ATTEMPTS) throw noteBusy(planNode, file)
      continue
    }
    const index = edgeIndex(planNode, decision.edge)
    const ticked = tickedIndexes(planNode.edges.map((edge) => edge.at?.checked))
    const unticked = ticked.length > 1 && ticked.includes(index) ? ticked.filter((at) => at !== index) : []
    if (unticked.length > 0) await recordUntick(vault, planNode, places.get(planNode)!, index, unticked)
    // The careful rewrite (see editNote): a note caught between an editor's truncate and its write (a person ticking in
    // Obsidian) is read again, never written from; a save made meanwhile is read again and decided in turn.
    const edited = await editNote(file, join(vault, file), (text) => decided(planNode, file, text, index, decision, ticked))
    // Its edges are no longer the plan's (a person edited them): the plan is loaded again.
    if (edited !== undefined) return { unticked: unticked.map((at) => labelOf(planNode, at)) }
    if (attempt >= ATTEMPTS) throw noteBusy(planNode, file)
  }
}

function noteBusy(planNode: PlanNode, file: string): RunStateError<'note-busy'> {
  return new RunStateError('note-busy', `\`${planNode.file}\` kept changing while the decision was written; nothing was changed. Try again.`, { files: [file] })
}

/**
 * Leaves what deciding edge `index` unticks of the boxes ticked by hand (`unticked`) for
 * the run that follows the tick, to record with the decision: before the
 * note is written, since a runner waiting on the note follows it at once.
 * Nothing when the folder's trace has no wait of the note to decide.
 */
async function recordUntick(vault: string, node: PlanNode, place: Place, index: number, unticked: number[]): Promise<void> {
  const { folder, trace } = await traceAt(vault, place)
  const id = place.id
  const wait = trace?.records.findLast((record) => record.kind === 'waiting' && record.node === id)
  if (!trace || !wait) return
  const labels = unticked.map((at) => labelOf(node, at))
  const record = { run: trace.header.run, node: id, visit: wait.visit, edge: labelOf(node, index), unticked: labels, at: new Date().toISOString() }
  await writeUntickedBoxes(folder, record)
}

/** An edge's name as a decision names it: its label, `next` for the unconditional edge. */
function labelOf(node: PlanNode, index: number): string {
  return node.edges[index]!.label || 'next'
}

/** Refuses a decision made on another visit of the note than the one that waits now. */
async function refuseOtherVisit(vault: string, node: PlanNode, place: Place, madeOn: number): Promise<void> {
  const current = await waitingVisit(vault, place)
  if (current === madeOn) return
  throw new RunStateError(
    'stale-decision',
    `\`${node.id}\` waits at its visit ${current} now, and this decision was made on visit ${madeOn}; nothing was changed. Look at the note as it is now, then decide again.`,
    { node: node.id, madeOn, current },
  )
}

/**
 * The visit each note of a vault that waits for a person waits at (a
 * `judge: human` note, a step an agent blocked), by its id from the vault
 * (`research/approve` inside a subplan): what a {@link HumanDecision}'s `visit`
 * names, for a page or a chat that shows the note to decide.
 */
export async function waitingVisits(vault: string): Promise<Record<string, number>> {
  const { notes, places } = notesOfTree(await loadPlan(vault))
  const waiting = [...notes].filter(([, node]) => node.status === 'waiting')
  // fromEntries, not assignment: a note named `__proto__` is a plain key.
  return Object.fromEntries(await Promise.all(waiting.map(async ([id, node]) => [id, await waitingVisit(vault, places.get(node)!)] as const)))
}

/** A note a person decided that still says `waiting`: the run has not followed the decision yet. */
export interface DecidedNote {
  /** The note, by its path from the vault (`research/approve` inside a subplan). */
  node: string
  /** The edge ticked: its label, `next` for the unconditional edge. */
  edge: string
  /** The feedback written for this decision, as it was typed (what the next worker gets); `''` for none. */
  feedback: string
}

/**
 * The notes of a vault (subplans included) that say `waiting` with exactly
 * one box ticked under `## Next`: decided by a person (`decide`, the
 * board, a tick in Obsidian), not yet followed by a run. Each with the
 * edge ticked and the feedback the run will hand on, as typed.
 */
export async function decidedNotes(vault: string): Promise<DecidedNote[]> {
  const { notes, places } = notesOfTree(await loadPlan(vault))
  const decided: DecidedNote[] = []
  for (const [id, node] of notes) {
    const ticked = tickedIndexes(node.edges.map((edge) => edge.at?.checked))
    if (node.status !== 'waiting' || ticked.length !== 1) continue
    const file = node.file ?? `${id}.md`
    const text = await readFile(join(vault, file), 'utf8').catch(() => '')
    const place = places.get(node)!
    const { trace } = await traceAt(vault, place)
    // What an earlier decision of the note handed on is not new: the run hands on only what follows it.
    const before = trace?.records.findLast((record) => record.kind === 'hop' && record.node === place.id && record.decidedBy === 'human')
    const handed = feedbackToHandOn(before?.kind === 'hop' ? before.feedback : undefined, parseNote(file, text).feedback)
    decided.push({ node: id, edge: labelOf(node, ticked[0]!), feedback: feedbackAsTyped(handed) })
  }
  return decided
}

/**
 * The visit a note waits at, from the trace of the folder that holds it: the
 * visit its last record waits on (a `waiting` record, a budget's `stop`),
 * else the one after its last hop (a blocked step, a note set waiting by
 * hand), 1 for a note the run has not met.
 */
async function waitingVisit(vault: string, place: Place): Promise<number> {
  const { trace } = await traceAt(vault, place)
  const last = trace?.records.findLast((record) => record.node === place.id)
  return last === undefined ? 1 : last.kind === 'hop' ? last.visit + 1 : last.visit
}

/**
 * Whether an agent blocked the note's current visit (`blockStep`): the trace
 * of the folder that holds it ends the visit's claims with a `block`.
 */
async function isBlocked(vault: string, place: Place): Promise<boolean> {
  const { id } = place
  const { trace } = await traceAt(vault, place)
  if (!trace) return false
  const visit = replay(trace.records, () => undefined).visits.get(id) ?? 0
  const last = (trace.claims ?? []).filter((claim) => claim.node === id && claim.visit === visit + 1).at(-1)
  return last?.kind === 'block'
}

/** The trace of the plan folder that holds a note (found by the walk of `notesOfTree`), and that folder's path. */
async function traceAt(vault: string, place: Place): Promise<{ folder: string; trace: Trace | undefined }> {
  const folder = join(vault, place.folder)
  return { folder, trace: await readTrace(folder).catch(() => undefined) }
}

/** The indexes of the ticked boxes among the boxes of a note's edges. */
function tickedIndexes(boxes: readonly (boolean | undefined)[]): number[] {
  return boxes.flatMap((checked, at) => (checked === true ? [at] : []))
}

/**
 * `text` with the box of edge `index` ticked and the feedback added;
 * `undefined` when its edges, or its ticked boxes, are not the plan's as
 * loaded (`loaded`: what was recorded as unticked must be what is).
 */
function decided(planNode: PlanNode, file: string, text: string, index: number, decision: HumanDecision, loaded: number[]): string | undefined {
  const raw = parseNote(file, text).edges
  const item = raw[index]
  if (!item || raw.length !== planNode.edges.length) return undefined
  const ticked = tickedIndexes(raw.map((edge) => edge.checked))
  if (ticked.join() !== loaded.join()) return undefined
  // Boxes ticked by hand: deciding one of them is the person's pick among them, the others are unticked; deciding another is ambiguous.
  if (ticked.length > 0 && !ticked.includes(index)) {
    const labels = ticked.map((at) => planNode.edges[at]!.label || 'next')
    throw new RunStateError(
      'ambiguous-decision',
      `\`${planNode.file}\` has ${labels.map((label) => `\`${label}\``).join(', ')} ticked already; decide ${ticked.length === 1 ? 'that edge' : 'one of those'} (the others are unticked), or untick ${ticked.length === 1 ? 'it' : 'them'} first.`,
      { node: planNode.id, file, ticked: labels },
    )
  }
  let updated = item.checked === true ? text : tickBox(text, item.itemLine)
  for (const at of ticked) if (at !== index) updated = untickBox(updated, raw[at]!.itemLine)
  return decision.feedback !== undefined && decision.feedback.trim() !== '' ? addFeedback(updated, decision.feedback) : updated
}

function edgeIndex(node: PlanNode, choice: string): number {
  const wanted = choice.trim().toLowerCase()
  const matches = (edge: Edge) => (wanted === 'next' ? !edge.conditional : edge.label.trim().toLowerCase() === wanted)
  let found = node.edges.flatMap((edge, index) => (matches(edge) ? [index] : []))
  if (found.length === 0) found = node.edges.flatMap((edge, index) => (edge.target.toLowerCase() === wanted ? [index] : []))
  if (found.length !== 1) {
    const choices = node.edges.map((edge) => `\`${edge.label || 'next'}\``).join(', ')
    throw new RunStateError(
      'bad-choice',
      `\`${choice}\` ${found.length === 0 ? 'names no edge' : 'names several edges'} of \`${node.id}\`; its choices are ${choices}. Nothing was changed.`,
      { node: node.id, choices: node.edges.map((edge) => edge.label || 'next') },
    )
  }
  return found[0]!
}

/** Where a note of the tree is: the plan folder that holds it (relative to the vault, `''` for the vault itself) and its id there. */
interface Place {
  folder: string
  id: string
}

/**
 * The notes of a plan and of its subplans, by their path from the vault
 * (`research/approve`), files likewise; and where each is.
 */
function notesOfTree(graph: PlanGraph): { notes: Map<string, PlanNode>; places: Map<PlanNode, Place> } {
  const notes = new Map<string, PlanNode>()
  const places = new Map<PlanNode, Place>()
  for (const { folder, vault: plan } of subplanTree(graph)) {
    const prefix = folder ? `${folder}/` : ''
    for (const node of plan.nodes.values()) {
      const entry = folder ? { ...node, id: prefix + node.id, file: prefix + (node.file ?? `${node.id}.md`) } : node
      places.set(entry, { folder, id: node.id })
      notes.set(prefix + node.id, entry)
    }
  }
  return { notes, places }
}

function waitingOf(nodes: Iterable<PlanNode>): string {
  const waiting = waitingIds(nodes).map((id) => `\`${id}\``)
  return waiting.length > 0 ? waiting.join(', ') : 'none'
}

function waitingIds(nodes: Iterable<PlanNode>): string[] {
  return [...nodes].filter((node) => node.status === 'waiting').map((node) => node.id)
}
