import { findStart } from '../../plan/validate.js'
import type { PlanGraph } from '../../plan/plan-graph.js'
import type { PlanIssue, PlanNode } from '../../core/types.js'
import type { LockHolder } from '../../core/errors.js'
import { proposalStand, PROPOSAL_NODE, type ProposalNote } from '../../vault/proposal-note.js'
import { runsSubplans, subplanFoldersOf } from '../../vault/subplan-folders.js'
import { plannerCallDue } from './tree-rules.js'
import { claimKey, highestNumber, locate, notesOf, replay, visitKey, type Position, type Replay } from './run-core.js'
import type { SavedOutput } from '../../store/output-note.js'
import type { StopInfo, WaitingNote } from './run-options.js'
import { stopInSubplan, stopOf } from './stops.js'
import { outputFile, type HopRecord, type Trace } from '../../store/trace.js'
import { timeoutHop, waitClock, type WaitClock } from './deadline.js'
import { claimOf, type WorkItem } from './claims.js'
export type { WorkItem } from './claims.js'
import { proposalWaitingNote } from './proposal-wait.js'

/*
 * Where one vault of a run stands, its subplans' runs included: the pure
 * decision the snapshot (`snapshotOf`) and `readRunStatus` are views of.
 */

/** One vault of a run as read off disk: everything the snapshot is decided from. */
export interface VaultRecords {
  /** The vault's folder from the top vault: `''` at the top. */
  folder: string
  /** The plan with the statuses its notes say now. */
  graph: PlanGraph
  /** The plan's validation issues (errors and warnings), in file order. */
  issues: PlanIssue[]
  trace: Trace | undefined
  /** An output saved for the step after the last recorded one (a crash before its hop was recorded). */
  pending: (SavedOutput & { file: string }) | undefined
  /** The text of the terminal's output when the last record ended the run. */
  final?: string | undefined
  /** The vault's proposal, when `proposePlan` wrote one. */
  proposal?: ProposalNote | undefined
  /** Who holds the vault's lock now, when a live runner does. */
  holder?: RunHolder | undefined
  /** The subplan folders that exist, by folder relative to this vault. */
  subplans: ReadonlyMap<string, VaultRecords>
  /** The top vault: the planner calls its run made (decompositions), which count against `maxSteps` too. */
  plannerCalls?: number
  /** When the records were read (ms since the epoch): the clock `wait:` deadlines are measured by. */
  now?: number
}

/** A live runner that holds a vault. */
export type RunHolder = LockHolder

/** Where one vault of a run stands: its replay, its position, and the branches of a note it is working through subplans. */
export interface VaultStand {
  records: VaultRecords
  /** The trace replayed (empty when the vault has no run for the visit that runs it). */
  replay: Replay
  /** The run's id, `''` when it has none yet. */
  runId: string
  /** Where the run goes on; `undefined` before a run (no trace) or for an invalid plan. */
  position: Position | undefined
  /** The start note, when the plan has one. */
  start: PlanNode | undefined
  /** Works this vault's run did that count against the budget: recorded works, and those of the branches under way. */
  works: number
  /** A claimed note that runs subplans: where each of its subplan runs stands, in folder order. */
  branches: { folder: string; stand: VaultStand }[]
  /** The work items of this vault and its branches, in plan order. */
  items: WorkItem[]
  /** The notes waiting for a person, by their path from the top vault. */
  waiting: WaitingNote[]
  /** A budget that refuses the next visit (here or in a branch), by paths from the top vault. */
  stop?: StopInfo & { reason: string }
  /** A budget that refuses this vault's own next visit, by ids in this vault. */
  ownStop?: StopInfo & { reason: string }
  /** Items not claimed yet (each needs a step of the budget), among `items`. */
  unclaimed: Set<WorkItem>
  /** Items whose step number a claim in the trace fixed (a visit claimed before a crash keeps it), among `items`. */
  fixed: Set<WorkItem>
  /** Items an agent deferred (`deferStep`), among `items`: they come after the other ready items. */
  deferred: Set<WorkItem>
  /** Two notes `active` in one folder (here or in a branch): the notes by their path from the top vault, and their files. */
  twoActive?: { nodes: string[]; files: string[] }
  /** A note still `waiting` whose one ticked box the next call follows: `position` is where the box leads. */
  decided?: { node: string; visit: number }
}

/**
 * Where one vault stands (pure), its branches included: the top vault with
 * `source` undefined; a subplan with the key of the visit that runs it (a
 * trace of another visit is an old run: the subplan starts afresh).
 *
 * @param spentAbove - works of the rest of the tree already counted against `maxSteps`
 */
export function standOf(records: VaultRecords, maxSteps: number, source?: string, spentAbove = 0, depth = 0): VaultStand {
  // The top vault's planner calls count against the budget with its works.
  if (source === undefined) spentAbove += records.plannerCalls ?? 0
  const trace = records.trace && (source === undefined || records.trace.header.source === source) ? records.trace : undefined
  const state = replay(trace?.records ?? [], () => undefined, trace?.claims)
  const graph = records.graph
  const start = findStart(graph).start
  const runId = trace?.header.run ?? ''
  const stand: VaultStand = {
    records,
    replay: state,
    runId,
    position: undefined,
    start,
    works: state.steps + state.extraWorks,
    branches: [],
    items: [],
    waiting: [],
    unclaimed: new Set(),
    fixed: new Set(),
    deferred: new Set(),
  }
  const prefix = records.folder === '' ? '' : `${records.folder}/`
  const proposal = source === undefined && records.proposal ? proposalStand(records.proposal) : undefined
  // A proposal not approved yet decides first; one whose `approve` box is ticked runs on the next call.
  if (proposal && proposal.kind !== 'run' && proposal.kind !== 'approve') {
    if (proposal.kind === 'revise') stand.items.push({ kind: 'plan', node: PROPOSAL_NODE, visit: records.proposal!.version, step: stand.works + 1 })
    else if (proposal.kind !== 'declined' && proposal.kind !== 'decline') stand.waiting.push(proposalWaitingNote(records.proposal!, records.now ?? Date.now()))
    return stand
  }
  if (records.issues.some((issue) => issue.severity === 'error')) return stand
  const active = [...graph.nodes.values()].filter((node) => node.status === 'active').map((node) => node.id)
  if (!trace) {
    // No run yet: the top vault starts at its start note, or at the note a person set `active`; a subplan
    // whose trace belongs to an earlier visit of its note starts afresh (its statuses are reset then).
    const mine = source === undefined ? active : []
    const at = mine.length === 0 ? start?.id : mine[0]
    if (mine.length > 1) stand.position = { kind: 'two-active', nodes: mine }
    else if (at === undefined) stand.position = { kind: 'no-start' }
    else if (spentAbove >= maxSteps) stand.position = { kind: 'stopped', node: at, visit: 1, budget: 'maxSteps', recorded: false }
    else stand.position = { kind: 'work', node: at, visit: 1, step: 1, claimed: mine.length === 1 }
    settle(stand, prefix, maxSteps, spentAbove, depth)
    if (source === undefined) numberItems(stand)
    return stand
  }
  const pending = records.pending
  const notes = notesOf(graph, active, start?.id, (id) => runsSubplans(graph.nodes.get(id)!, depth))
  const spent = spentAbove + stand.works
  stand.position = locate({ runId, replay: state, pending, maxSteps, spent }, notes)
  // A waiting note with one box ticked: the next call records the person's hop and goes on along it, so the stand is where it leads.
  const hop = stand.position.kind === 'decide' ? decisionOf(graph, stand.position, waitingSince(state), records.now ?? Date.now()) : undefined
  if (hop) {
    stand.decided = { node: hop.node, visit: hop.visit }
    stand.position = locate({ runId, replay: replay([...trace.records, hop], () => undefined, trace.claims), pending, maxSteps, spent }, notes)
  }
  settle(stand, prefix, maxSteps, spentAbove, depth)
  if (source === undefined) numberItems(stand)
  return stand
}

/**
 * Gives the top vault's items the whole run's step numbers they would get if
 * claimed in frontier order: a visit to work takes the
 * next number, a planner call shows the number its first work would get, a
 * saved output keeps the number it was saved with.
 */
function numberItems(stand: VaultStand): void {
  // Deferred items come after the other ready items (a stable sort keeps plan order otherwise).
  stand.items.sort((a, b) => Number(stand.deferred.has(a)) - Number(stand.deferred.has(b)))
  let last = Math.max(highestNumber(stand.replay), highestBelow(stand), stand.works)
  for (const item of stand.items) if (item.kind === 'judge') last = Math.max(last, item.step)
  for (const item of stand.items) {
    if (item.kind === 'work' && !stand.fixed.has(item)) item.step = ++last
    else if (item.kind === 'plan') item.step = last + 1
  }
}

/** The highest step number the subplan runs under way recorded. */
export function highestBelow(stand: VaultStand): number {
  return Math.max(0, ...stand.branches.map(({ stand: branch }) => Math.max(highestNumber(branch.replay), highestBelow(branch))))
}

/**
 * The hop the next call records for a waiting note (as `RunDriver` follows it): its one ticked box, or, with none
 * ticked, its `timeout` edge past its deadline; none while it still waits or is ambiguous.
 */
function decisionOf(graph: PlanGraph, at: { node: string; visit: number; step: number }, since: string | undefined, now: number): HopRecord | undefined {
  const node = graph.nodes.get(at.node)
  const ticked = node?.edges.filter((edge) => edge.at?.checked === true) ?? []
  if (node && ticked.length === 0) return since === undefined ? undefined : timeoutHop(node, { ...at, since }, now)
  if (ticked.length !== 1) return undefined
  const edge = ticked[0]!
  return { kind: 'hop', step: at.step, node: at.node, visit: at.visit, edge, decidedBy: 'human', next: edge.target, output: outputFile(at.step, at.node) }
}

/** When the wait the trace's last record began started (its `waiting` record's time). */
function waitingSince(state: Replay): string | undefined {
  const last = state.lastRecord
  return last?.kind === 'waiting' ? last.at : undefined
}

function clockOf(node: PlanNode | undefined, since: string | undefined, now: number): WaitClock | undefined {
  return node && since !== undefined ? waitClock(node, since, now) : undefined
}

/** Fills a stand's items, waits and stop from its position, descending into the subplans of a note that runs them. */
function settle(stand: VaultStand, prefix: string, maxSteps: number, spentAbove: number, depth: number): VaultStand {
  const position = stand.position!
  const graph = stand.records.graph
  const plan = prefix === '' ? undefined : prefix.slice(0, -1)
  const item = (kind: WorkItem['kind'], at: { node: string; visit: number; step: number }): WorkItem => ({
    kind,
    node: prefix + at.node,
    visit: at.visit,
    step: at.step,
    ...(plan !== undefined && { plan }),
  })
  switch (position.kind) {
    case 'work': {
      const node = graph.nodes.get(position.node)
      if (node && runsSubplans(node, depth)) {
        // A decomposition not written yet: the planner call is what comes next, if the budget has a step for it.
        if (plannerCallDue(node, stand.records.subplans.has(subplanFoldersOf(node)[0]!.folder))) {
          if (spentAbove + stand.works >= maxSteps) {
            stand.ownStop = stopOf(graph, stand.replay, { node: position.node, visit: position.visit, budget: 'maxSteps' }, maxSteps)
            stand.stop = plan === undefined ? stand.ownStop : stopInSubplan(stand.ownStop, plan)
            return stand
          }
          stand.items.push(item('plan', position))
        } else return branchesOf(stand, node, position, maxSteps, spentAbove, depth)
      } else {
        const found = item('work', position)
        const record = stand.replay.claims.get(claimKey(position.node, position.visit))
        const claim = position.claimed ? claimOf(stand.runId, record) : undefined
        if (claim) found.claim = claim
        if (!position.claimed && record?.kind === 'defer') stand.deferred.add(found)
        stand.items.push(found)
      }
      if (!position.claimed) stand.unclaimed.add(stand.items.at(-1)!)
      if (stand.replay.claims.has(claimKey(position.node, position.visit))) stand.fixed.add(stand.items.at(-1)!)
      return stand
    }
    case 'two-active':
      stand.twoActive = {
        nodes: position.nodes.map((id) => prefix + id),
        files: position.nodes.map((id) => prefix + (graph.nodes.get(id)?.file ?? `${id}.md`)),
      }
      return stand
    case 'judge':
      stand.items.push(item('judge', position))
      return stand
    case 'blocked': {
      const node = graph.nodes.get(position.node)
      const { block } = position
      const waiting: WaitingNote = { kind: 'blocked', node: prefix + position.node, file: prefix + (node?.file ?? `${position.node}.md`), choices: ['unblock'] }
      if (block.reason !== undefined) waiting.reason = block.reason
      if (block.at !== undefined) Object.assign(waiting, { since: block.at }, clockOf(node, block.at, stand.records.now ?? Date.now()))
      stand.waiting.push(waiting)
      return stand
    }
    case 'decide': {
      const node = graph.nodes.get(position.node)
      stand.waiting.push({
        kind: 'human',
        node: prefix + position.node,
        file: prefix + (node?.file ?? `${position.node}.md`),
        choices: (node?.edges ?? []).map((edge) => edge.label || 'next'),
        ...clockOf(node, waitingSince(stand.replay), stand.records.now ?? Date.now()),
      })
      return stand
    }
    case 'stopped': {
      // A stop the trace records keeps the reason it was given.
      const last = stand.replay.lastRecord
      const stop = stopOf(graph, stand.replay, position, maxSteps)
      if (position.recorded && last?.kind === 'stop') stop.reason = last.reason
      stand.ownStop = stop
      stand.stop = plan === undefined ? stop : stopInSubplan(stop, plan)
      return stand
    }
    default:
      return stand
  }
}

/**
 * A note that runs subplans (claimed, or about to be entered): each branch's
 * stand, sharing the budget with the whole tree, joined as the tree joins
 * them: items from every branch in folder order (those not claimed yet as
 * far as the budget goes), waits from every branch, the first stop; when
 * every branch completed, the join of their outputs is judged next.
 */
function branchesOf(
  stand: VaultStand,
  node: PlanNode,
  at: { node: string; visit: number; step: number },
  maxSteps: number,
  spentAbove: number,
  depth: number,
): VaultStand {
  const key = visitKey(stand.runId, node.id, at.visit)
  const prefix = stand.records.folder === '' ? '' : `${stand.records.folder}/`
  const folders = subplanFoldersOf(node).flatMap(({ folder, outside }) => {
    const records = outside ? undefined : stand.records.subplans.get(folder)
    return records ? [{ folder, records }] : []
  })
  // First the works every branch did, so each branch decides against the whole tree's.
  const done = folders.map(({ records }) => worksOf(records, key))
  const spent = spentAbove + stand.works + done.reduce((sum, works) => sum + works, 0)
  const branches = folders.map(({ folder, records }, index) => ({ folder, stand: standOf(records, maxSteps, key, spent - done[index]!, depth + 1) }))
  // A visit claimed already holds its step: the visits not claimed yet share what is left.
  const claimedWorks = branches.reduce(
    (sum, { stand: branch }) => sum + branch.items.filter((item) => item.kind === 'work' && !branch.unclaimed.has(item)).length,
    0,
  )
  let left = maxSteps - spent - claimedWorks
  for (const { folder, stand: branch } of branches) {
    stand.branches.push({ folder, stand: branch })
    stand.works += branch.works
    for (const found of branch.items) {
      if (branch.unclaimed.has(found)) {
        if (left <= 0) continue
        left -= 1
        stand.unclaimed.add(found)
      }
      if (branch.fixed.has(found)) stand.fixed.add(found)
      if (branch.deferred.has(found)) stand.deferred.add(found)
      stand.items.push(found)
    }
    stand.waiting.push(...branch.waiting)
    // A branch the budget keeps from beginning stops the run only when nothing else is left to do (below).
    if (!stand.stop && branch.stop && !unbegun(branch)) stand.stop = branch.stop
    if (!stand.twoActive && branch.twoActive) stand.twoActive = branch.twoActive
  }
  const idle = stand.items.length === 0 && stand.waiting.length === 0 && !stand.stop && !stand.twoActive
  if (idle && branches.length > 0 && branches.every(({ stand: branch }) => branch.position?.kind === 'completed')) {
    // Cut short after the last branch completed: the joined output is the note's, its transition judged next, with its subplans' last step.
    stand.items.push({ kind: 'judge', node: prefix + node.id, visit: at.visit, step: highestBelow(stand), ...(prefix !== '' && { plan: prefix.slice(0, -1) }) })
    return stand
  }
  // Every branch's next visit is past the budget: the run stops before the first of them.
  const refused = idle ? stand.branches.find((each) => each.stand.position?.kind === 'work' || unbegun(each.stand)) : undefined
  if (refused?.stand.stop && unbegun(refused.stand)) stand.stop = refused.stand.stop
  else if (refused) {
    const { records: inner, replay: state, position } = refused.stand
    const { node: id, visit } = position as Extract<Position, { kind: 'work' }>
    stand.stop = stopInSubplan(stopOf(inner.graph, state, { node: id, visit, budget: 'maxSteps' }, maxSteps), inner.folder)
  }
  return stand
}

/** A subplan whose run for its note's visit has not begun, stopped by the budget before its first claim. */
function unbegun(stand: VaultStand): boolean {
  return stand.runId === '' && stand.position?.kind === 'stopped'
}

/**
 * The works a subplan's run for the visit `key` recorded, those of its own
 * subplans under way included: what it has spent of the budget.
 */
function worksOf(records: VaultRecords, key: string): number {
  const trace = records.trace?.header.source === key ? records.trace : undefined
  if (!trace) return 0
  const state = replay(trace.records, () => undefined)
  let works = state.steps + state.extraWorks
  for (const node of records.graph.nodes.values()) {
    if (!node.plan || node.status !== 'active') continue
    const inner = visitKey(trace.header.run, node.id, (state.visits.get(node.id) ?? 0) + 1)
    for (const { folder } of subplanFoldersOf(node)) {
      const below = records.subplans.get(folder)
      if (below) works += worksOf(below, inner)
    }
  }
  return works
}
