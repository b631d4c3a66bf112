import { waitClock } from '../core/deadline.js'
import { proposalWaitingNote } from '../core/proposal-wait.js'
import { join } from 'node:path'
import { subplanFoldersOf } from '../../vault/subplan-folders.js'
import { nextStepNumber } from '../core/run-core.js'
import { PROPOSAL_CHOICES, PROPOSAL_NODE, proposalStand, toProposalInfo, type ProposalInfo, type ProposalNote } from '../../vault/proposal-note.js'
import { PROPOSAL_FILE } from '../../vault/run-folder.js'
import { budgetOf, checkObserveOptions, readRecords } from './observe-run.js'
import { snapshotOfStand, type NoteState } from '../core/run-snapshot.js'
import { standOf, type VaultStand, type WorkItem } from '../core/vault-stand.js'
import { planOrder } from '../../plan/plan-order.js'
import type { HopRecord } from '../../store/trace.js'
import type { DecidedBy, Edge, PlanIssue, PlanNode } from '../../core/types.js'

/** Options of `readRunStatus`. */
export interface RunStatusOptions {
  /**
   * How many of the latest hops to report.
   *
   * @default 5
   */
  hops?: number
  /**
   * The step budget a run would be given, so `next` says what that run does.
   *
   * @default the budget the run last ran with (its trace records it), else 50
   */
  maxSteps?: number
}

/**
 * What the next call does, as data (the CLI writes the sentence): `work`
 * names exactly the node, visit and step the next `nextStep` or `runPlan`
 * works; `judge`: an output is saved and its transition is judged first;
 * `fresh`: no run yet (`node` is where it starts); `two-active`: a person
 * must set all but one of `nodes` back; `invalid`: the plan has errors.
 */
export interface RunNext {
  kind: 'fresh' | 'work' | 'judge' | 'waiting' | 'stopped' | 'completed' | 'plan' | 'invalid' | 'two-active' | 'declined'
  node?: string
  visit?: number
  step?: number
  /** The subplan folder, relative to the vault, when the next thing happens inside one. */
  plan?: string
  /** `two-active`: the notes that are `active`. */
  nodes?: string[]
  /** `work`: the node's note is missing from the vault (the run cannot go on until it is restored or the run moved). */
  missing?: boolean
}

/** One node of the plan: its status and its visits against its budget. */
export interface NodeState extends NoteState {
  /** A note with `plan:`: the state of each subplan folder it runs (missing until a `plan: generate` wrote it). */
  subplans?: SubplanState[]
}

/** Where the run of one subplan stands, nested under its note. */
export interface SubplanState {
  /** The folder, relative to the vault of the note. */
  folder: string
  /** The subplan's status, as `readRunStatus` reads its folder (ids and files relative to it). */
  status: RunStatus
}

/** One hop of the trace, as `vaultplan status` lists it. */
export interface HopSummary {
  step: number
  node: string
  visit: number
  /** `null` when the node worked again, or ended the run as a terminal. */
  edge: Edge | null
  decidedBy: DecidedBy
  /** A person's decision along one of several boxes ticked by hand: the labels of the others, which `decide` unticked. */
  unticked?: string[]
}

/** An item under `## Next` of a note that waits for a person. */
export interface DecisionBox {
  label: string
  target: string
  /** Whether the item is a task item (`- [ ] approved -> [[send]]`). */
  box: boolean
  checked: boolean
}

/** What a run status holds in every phase; {@link RunStatus} adds what its phase tells. */
export interface StatusBase {
  /** The vault as passed in. */
  vault: string
  /** The run recorded in the trace; `null` before the first run. */
  run: { id: string; query: string; started: string; steps: number } | null
  nodes: NodeState[]
  /** The latest hops, oldest first. */
  hops: HopSummary[]
  /** The plan's validation issues: errors only when `phase` is `invalid`, warnings in any phase. */
  issues: PlanIssue[]
  /** What the next call does. */
  next: RunNext
  /** The vault's proposal, when `proposePlan` wrote it. */
  proposal?: ProposalInfo
  /** The visits agents hold now (section 16), as the snapshot's frontier shows them. */
  claims?: WorkItem[]
}

/**
 * Where a plan vault's run stands, derived from its notes and its trace the
 * way `runPlan` resumes: `phase` and its details, each
 * node's status and visits, the latest hops and what to do next.
 */
export type RunStatus = StatusBase & RunPhase

/** The phase of a run and what belongs to it. */
export type RunPhase =
  /** No trace yet; `node` is where a run would start. */
  | { phase: 'fresh'; node?: string }
  /** `running`: a live run holds the vault; `interrupted`: none does, and a run would go on at `node`, `visit`, `step`. */
  | { phase: 'running' | 'interrupted'; node: string; visit: number; step: number }
  /**
   * A `judge: human` node waits for one of its boxes to be ticked; `file` is its note. With `wait:`, `deadline`
   * (ISO 8601) says when its `timeout` edge is taken, and `overdue` that it passed on a note with no such edge.
   */
  | { phase: 'waiting'; node: string; visit: number; file: string; boxes: DecisionBox[]; deadline?: string; overdue?: boolean }
  /** A budget ran out before `visit` of `node`. */
  | { phase: 'stopped'; node: string; visit: number; budget: 'max_visits' | 'maxSteps'; reason: string }
  /** The run reached the terminal `node`; `output` is the start of its output. */
  | { phase: 'completed'; node: string; output: string }
  /** The plan has errors (listed in `issues`); a run would refuse it. */
  | { phase: 'invalid' }

type Phase = RunPhase & { next: RunNext }

/** Characters of the final output shown in a status. */
const EXCERPT = 400

/**
 * Reads where the run of a plan vault stands: `fresh` (no trace), `running`
 * (a live run holds the vault) or `interrupted`, `waiting` for a person,
 * `stopped` by a budget, `completed`, or `invalid` (the plan has errors; a
 * run would refuse it). A view of the run's snapshot (`observeRun`): the
 * same decision `runPlan` and `nextStep` resume by, budgets counted over the
 * whole run, subplans included. Reads only; never changes the vault.
 *
 * @param options.hops - how many of the latest hops to report (default 5)
 * @param options.maxSteps - the step budget a run would have (default: the one the run last ran with, else 50)
 * @throws {@link VaultPathError} when `vault` is not a folder
 * @throws {@link RunStateError} when the trace is unreadable or written by a newer vaultplan
 */
export async function readRunStatus(vault: string, options: RunStatusOptions = {}): Promise<RunStatus> {
  const { hops, maxSteps: told } = checkObserveOptions(options)
  const records = await readRecords(vault)
  const maxSteps = budgetOf(records, told)
  const stand = standOf(records, maxSteps)
  const snapshot = snapshotOfStand(vault, stand, { maxSteps, hops })
  // A live runner, or an agent's live claim (section 16): the run is being worked, not cut short.
  const now = records.now ?? Date.now()
  const claimed = stand.items.some((item) => item.claim !== undefined && Date.parse(item.claim.until) > now)
  const status = statusOf(vault, stand, maxSteps, records.holder !== undefined || claimed ? 'running' : 'interrupted')
  // The top vault's hops are the whole run's, subplans included (nested notes by their path).
  status.hops = snapshot.hops
  const claims = snapshot.frontier.filter((item) => item.claim !== undefined)
  if (claims.length > 0) status.claims = claims
  return status
}

/** The status of one vault of the run (the top, or a subplan nested under its note), from where it stands. */
function statusOf(vault: string, stand: VaultStand, maxSteps: number, moving: 'running' | 'interrupted'): RunStatus {
  const { records } = stand
  const graph = records.graph
  const trace = records.trace
  const invalid = records.issues.some((issue) => issue.severity === 'error')
  // The proposal is decided first, as `runPlan` decides it before reading the plan.
  const gated = records.proposal ? proposalPhase(records.proposal, records.now ?? Date.now()) : undefined
  let phase = gated ?? (invalid ? invalidPhase() : phaseOf(stand, moving))
  // A note with one box ticked still waits, its boxes shown, until the next call follows the box: `next` says where to.
  if (!gated && !invalid && stand.decided) phase = { ...waitingPhase(stand, stand.decided.node, stand.decided.visit), next: phase.next }
  const position = stand.position
  const working = position?.kind === 'work' && position.claimed && phase.phase !== 'fresh' ? position : undefined
  const hopRecords = (trace?.records ?? []).filter((record): record is HopRecord => record.kind === 'hop')
  const base: StatusBase = {
    vault,
    run: trace ? { id: trace.header.run, query: trace.header.query, started: trace.header.started, steps: stand.works } : null,
    nodes: planOrder(graph, stand.start).map((node) => {
      // The visit being worked counts: an active note shows the visit it is in.
      const visits = working?.node === node.id ? working.visit : (stand.replay.visits.get(node.id) ?? 0)
      const entry: NodeState = {
        id: node.id,
        status: node.status,
        visits,
        maxVisits: node.maxVisits,
        start: node === stand.start,
        terminal: node.edges.length === 0,
      }
      if (node.file !== undefined) entry.file = node.file
      if (node.plan) entry.subplans = subplansOf(vault, stand, node, maxSteps, moving)
      return entry
    }),
    hops: hopRecords.map(({ step, node, visit, edge, decidedBy }) => ({ step, node, visit, edge, decidedBy })),
    issues: records.issues,
    next: phase.next,
  }
  if (records.proposal) base.proposal = toProposalInfo(records.proposal)
  return { ...base, ...phase } as RunStatus
}

/** Each subplan folder of a note, with its status: the branch's stand while the note works through it, else the folder's own. */
function subplansOf(vault: string, stand: VaultStand, node: PlanNode, maxSteps: number, moving: 'running' | 'interrupted'): SubplanState[] {
  return subplanFoldersOf(node).flatMap(({ folder, outside }) => {
    const inner = outside ? undefined : stand.records.subplans.get(folder)
    if (!inner) return []
    const branch = stand.branches.find((each) => each.folder === folder)?.stand ?? standOf({ ...inner, folder: '' }, maxSteps)
    return [{ folder, status: statusOf(join(vault, folder), branch, maxSteps, moving) }]
  })
}

/** The phase of a vault that has no proposal waiting and a valid plan, from its position. */
function phaseOf(stand: VaultStand, moving: 'running' | 'interrupted'): Phase {
  const { records, replay: state, position } = stand
  const graph = records.graph
  // Two notes `active` (here, or in a subplan under way): a person must set all but one back.
  if (stand.twoActive && position?.kind !== 'two-active' && records.trace) {
    const at = position as { node: string; visit: number; step: number }
    return { phase: moving, node: at.node, visit: at.visit, step: at.step, next: { kind: 'two-active', nodes: stand.twoActive.nodes } }
  }
  if (!records.trace || stand.runId === '') {
    if (position?.kind === 'two-active') return { phase: 'fresh', next: { kind: 'two-active', nodes: position.nodes } }
    const at = position && 'node' in position ? position.node : stand.start?.id
    return at === undefined ? { phase: 'fresh', next: { kind: 'fresh' } } : { phase: 'fresh', node: at, next: { kind: 'fresh', node: at } }
  }
  const last = state.lastRecord
  switch (position?.kind) {
    case undefined:
    case 'no-start':
      return invalidPhase()
    case 'two-active':
      return {
        phase: moving,
        node: position.nodes[0]!,
        visit: (state.visits.get(position.nodes[0]!) ?? 0) + 1,
        step: nextStepNumber(state),
        next: { kind: 'two-active', nodes: position.nodes },
      }
    case 'judge':
      return {
        phase: moving,
        node: position.node,
        visit: position.visit,
        step: position.step,
        next: { kind: 'judge', node: position.node, visit: position.visit, step: position.step },
      }
    case 'work': {
      // Inside subplans, or a planner call due: what the stand's items say comes first.
      const nested = stand.branches.length > 0 || stand.items[0]?.kind === 'plan'
      // The whole run's number, as the snapshot gives it.
      const step = stand.items[0]?.step ?? position.step
      const next: RunNext = nested ? branchNext(stand) : { kind: 'work', node: position.node, visit: position.visit, step }
      if (!nested && !graph.nodes.has(position.node)) next.missing = true
      // A stop whose budget was raised since: still stopped, and the next run goes on.
      if (last?.kind === 'stop' && !position.claimed) return { ...stoppedOf(last), next }
      return { phase: moving, node: position.node, visit: position.visit, step, next }
    }
    case 'decide':
    case 'blocked':
      return waitingPhase(stand, position.node, position.visit)
    case 'stopped': {
      const stop = stand.ownStop!
      return {
        phase: 'stopped',
        node: stop.node,
        visit: stop.visit,
        budget: stop.budget,
        reason: stop.reason,
        next: { kind: 'stopped', node: position.node, visit: position.visit },
      }
    }
    case 'completed':
      return { phase: 'completed', node: position.hop.node, output: excerpt(records.final ?? ''), next: { kind: 'completed', node: position.hop.node } }
  }
}

/** What happens next inside the subplans of a note working through them: the first item, else the first wait, else the stop. */
function branchNext(stand: VaultStand): RunNext {
  const prefix = stand.records.folder === '' ? '' : `${stand.records.folder}/`
  const inner = (path: string, plan: string | undefined) => {
    const folder = plan === undefined ? '' : `${plan}/`
    const inside = folder.slice(prefix.length, -1)
    return { node: path.slice(folder.length), ...(inside !== '' && { plan: inside }) }
  }
  const item = stand.items[0]
  if (item) return { kind: item.kind === 'plan' ? 'plan' : item.kind, ...inner(item.node, item.plan), visit: item.visit, step: item.step }
  const waiting = waitingIn(stand)
  if (waiting) return { kind: 'waiting', node: waiting.node, visit: waiting.visit, plan: waiting.folder.slice(prefix.length) }
  const stop = stand.stop
  if (stop) {
    const slash = stop.node.lastIndexOf('/')
    return { kind: 'stopped', node: stop.node.slice(slash + 1), visit: stop.visit, plan: stop.node.slice(prefix.length, slash) }
  }
  return { kind: 'work', node: (stand.position as { node: string }).node }
}

/** The first note waiting for a person in a stand's branches, depth first, with its folder from the top vault. */
function waitingIn(stand: VaultStand): { node: string; visit: number; folder: string } | undefined {
  for (const { stand: branch } of stand.branches) {
    const position = branch.position
    if (position?.kind === 'decide') return { node: position.node, visit: position.visit, folder: branch.records.folder }
    const deeper = waitingIn(branch)
    if (deeper) return deeper
  }
  return undefined
}

function stoppedOf(last: { node: string; visit: number; budget: 'max_visits' | 'maxSteps'; reason: string }): RunPhase & { phase: 'stopped' } {
  return { phase: 'stopped', node: last.node, visit: last.visit, budget: last.budget, reason: last.reason }
}

function waitingPhase(stand: VaultStand, id: string, visit: number): Phase {
  const node = stand.records.graph.nodes.get(id)
  const last = stand.replay.lastRecord
  const since = last?.kind === 'waiting' && last.node === id ? last.at : undefined
  const clock = node && since !== undefined ? waitClock(node, since, stand.records.now ?? Date.now()) : {}
  const file = node?.file ?? `${id}.md`
  const boxes: DecisionBox[] = (node?.edges ?? []).map((edge) => {
    const checked = edge.at?.checked
    return { label: edge.label, target: edge.target, box: checked !== undefined, checked: checked === true }
  })
  const phase: Phase = { phase: 'waiting', node: id, visit, file, boxes, next: { kind: 'waiting', node: id, visit } }
  if (clock.deadline !== undefined) phase.deadline = clock.deadline
  if (clock.overdue) phase.overdue = true
  return phase
}

/**
 * A proposal not approved: it waits (its boxes as a waiting note's, its `wait:` deadline as a note's), or it was declined.
 * `undefined` once approved.
 */
function proposalPhase(note: ProposalNote, now: number): Phase | undefined {
  const stand = proposalStand(note)
  if (stand.kind === 'run') return undefined
  if (stand.kind === 'declined' || stand.kind === 'decline') return { phase: 'fresh', next: { kind: 'declined', node: PROPOSAL_NODE } }
  const boxes: DecisionBox[] = PROPOSAL_CHOICES.map((choice) => ({
    label: choice,
    target: '',
    box: note.boxes[choice] !== undefined,
    checked: note.ticked.includes(choice),
  }))
  // A ticked `revise` has the planner write the next version on the next call (an agent's proposal: the agent, when it proposes again).
  const next: RunNext = { kind: stand.kind === 'revise' || stand.kind === 'awaiting-agent' ? 'plan' : 'waiting', node: PROPOSAL_NODE, visit: note.version }
  const phase: Phase = { phase: 'waiting', node: PROPOSAL_NODE, visit: note.version, file: PROPOSAL_FILE, boxes, next }
  const { deadline, overdue } = proposalWaitingNote(note, now)
  if (deadline !== undefined) phase.deadline = deadline
  if (overdue) phase.overdue = true
  return phase
}

function invalidPhase(): Phase {
  return { phase: 'invalid', next: { kind: 'invalid' } }
}

/** The start of a final output, as a status shows it. */
function excerpt(output: string): string {
  const trimmed = output.trim()
  return trimmed.length > EXCERPT ? `${trimmed.slice(0, EXCERPT).trimEnd()}…` : trimmed
}
