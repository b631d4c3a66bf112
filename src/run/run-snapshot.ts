import type { PlanGraph } from '../plan/plan-graph.js'
import { findStart } from '../plan/validate.js'
import type { NodeStatus, PlanIssue, PlanNode } from '../core/types.js'
import { proposalStand, PROPOSAL_NODE, type ProposalNote } from '../vault/proposal-note.js'
import { PROPOSAL_FILE } from '../vault/run-folder.js'
import { subplanFoldersOf } from '../vault/subplan-folders.js'
import { locate, notesOf, replay, visitKey, type Position, type Replay } from './run-core.js'
import type { SavedOutput } from './output-note.js'
import type { StopInfo, WaitingNote } from './run-options.js'
export { DEFAULT_MAX_STEPS } from './run-options.js'
import { stopOf } from './run-words.js'
import type { HopRecord, Trace } from './trace.js'

/*
 * Where a run stands, decided once (SPEC section 15): a pure function of the
 * records read off disk, the top vault's and its subplans'. `observeRun`
 * reads the records and asks it; `readRunStatus`, the CLI and the MCP tools
 * are views of its answer.
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
}

/** A live runner that holds a vault. */
export interface RunHolder {
  pid: number
  host: string
  since: string
}

/** What a run can do now (SPEC section 15): a visit to work, a saved output to judge, a planner call due. */
export interface WorkItem {
  /** `judge`: an output is saved, its transition not yet judged; `plan`: a planner call is due. */
  kind: 'work' | 'judge' | 'plan'
  /** The note, by its path from the top vault (`research/find`). */
  node: string
  visit: number
  /** The step the visit has (claimed) or would get if the items were claimed in frontier order, as its vault's trace numbers it. */
  step: number
  /** The subplan folder, relative to the top vault, for an item inside one. */
  plan?: string
}

/** One note of a run: its status and its visits against its budget. */
export interface NoteState {
  /** The note's id; in a snapshot, by its path from the top vault (`research/find`). */
  id: string
  /** The note's file, relative to the vault (in a snapshot, the top vault). */
  file?: string
  status: NodeStatus
  /** Visits of the note's current run (a subplan's count afresh for each visit of its note); an `active` note counts the visit it is in. */
  visits: number
  maxVisits: number
  start: boolean
  terminal: boolean
}

/** One note of a snapshot, with the subplans it runs. */
export interface SnapshotNode extends NoteState {
  /** A note with `plan:`: each subplan folder it runs, with its notes (missing until a `plan: generate` wrote it). */
  subplans?: { folder: string; nodes: SnapshotNode[] }[]
}

/** One hop of a run, subplans included, oldest first. */
export interface SnapshotHop {
  step: number
  /** The note, by its path from the top vault. */
  node: string
  visit: number
  edge: HopRecord['edge']
  decidedBy: HopRecord['decidedBy']
}

/** The one value every surface reads of a run (SPEC section 15). */
export interface RunSnapshot {
  /** The vault as passed in. */
  vault: string
  run: { id: string; query: string; started: string; source: string } | null
  phase: 'fresh' | 'ready' | 'waiting' | 'stopped' | 'completed' | 'declined' | 'invalid'
  /** Works of the whole run, subplans included. */
  steps: number
  /** The budget the phase and frontier are computed for. */
  maxSteps: number
  /** Notes in plan order (the start, then breadth-first along edges, then the rest by file), subplans nested. */
  nodes: SnapshotNode[]
  /** Everything that can be done now, across branches, in plan order; its first item is what the next `nextStep` claims. */
  frontier: WorkItem[]
  /** Every note waiting for a person (a `judge: human` note, a proposal). */
  waiting: WaitingNote[]
  /** Phase `stopped`: which budget ran out, where, in which loop, and the reason in words. */
  stop?: StopInfo & { reason: string }
  /** Phase `completed`: the terminal and its output. */
  result?: { node: string; output: string }
  /** Phase `invalid`: the errors; else the warnings. */
  issues: PlanIssue[]
  /** The latest hops, oldest first, subplans included. */
  hops: SnapshotHop[]
  /** A live runner that holds the vault now. */
  holder?: RunHolder
}

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
}

/**
 * Where a run stands, from the records of its vaults (pure: no I/O): the
 * phase, the frontier of every ready item across branches, waits, stops,
 * the result, the notes in plan order and the latest hops.
 *
 * @param options.maxSteps - the budget to decide for (the run's recorded one, else `DEFAULT_MAX_STEPS`)
 * @param options.hops - how many of the latest hops to list
 */
export function snapshotOf(vault: string, top: VaultRecords, options: { maxSteps: number; hops: number }): RunSnapshot {
  return snapshotOfStand(vault, standOf(top, options.maxSteps), options)
}

/** The snapshot of a run whose top vault's stand is decided (`standOf`): the same value `snapshotOf` gives. */
export function snapshotOfStand(vault: string, stand: VaultStand, options: { maxSteps: number; hops: number }): RunSnapshot {
  const top = stand.records
  const header = top.trace?.header
  const snapshot: RunSnapshot = {
    vault,
    run: header ? { id: header.run, query: header.query, started: header.started, source: header.source ?? '' } : null,
    phase: 'fresh',
    steps: stand.works,
    maxSteps: options.maxSteps,
    nodes: nodesOf(top, stand),
    frontier: stand.items,
    waiting: stand.waiting,
    issues: top.issues,
    hops: latest(hopsOf(top, stand), options.hops),
  }
  if (top.holder) snapshot.holder = top.holder
  snapshot.phase = phaseOf(stand)
  if (snapshot.phase === 'invalid' && stand.position?.kind === 'two-active') snapshot.issues = [...top.issues, twoActive(top.graph, stand.position.nodes)]
  if (snapshot.phase !== 'invalid') snapshot.issues = top.issues.filter((issue) => issue.severity === 'warning')
  if (snapshot.phase === 'stopped' && stand.stop) snapshot.stop = stand.stop
  if (stand.position?.kind === 'completed') snapshot.result = { node: stand.position.hop.node, output: top.final ?? '' }
  return snapshot
}

/** The run's one phase, from where its top vault stands. */
function phaseOf(stand: VaultStand): RunSnapshot['phase'] {
  const { records, position } = stand
  if (records.proposal) {
    const kind = proposalStand(records.proposal).kind
    if (kind === 'declined' || kind === 'decline') return 'declined'
    if (kind !== 'run') return stand.items.length > 0 ? 'ready' : 'waiting'
  }
  if (records.issues.some((issue) => issue.severity === 'error')) return 'invalid'
  if (!position || position.kind === 'two-active' || position.kind === 'no-start') return 'invalid'
  if (!records.trace) return 'fresh'
  if (stand.items.length > 0) return 'ready'
  if (stand.stop) return 'stopped'
  if (stand.waiting.length > 0) return 'waiting'
  return position.kind === 'completed' ? 'completed' : 'waiting'
}

/**
 * Where one vault stands (pure), its branches included: the top vault with
 * `source` undefined; a subplan with the key of the visit that runs it (a
 * trace of another visit is an old run: the subplan starts afresh).
 *
 * @param spentAbove - works of the rest of the tree already counted against `maxSteps`
 */
export function standOf(records: VaultRecords, maxSteps: number, source?: string, spentAbove = 0): VaultStand {
  const trace = records.trace && (source === undefined || records.trace.header.source === source) ? records.trace : undefined
  const state = replay(trace?.records ?? [], () => undefined)
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
  }
  const prefix = records.folder === '' ? '' : `${records.folder}/`
  const proposal = source === undefined && records.proposal ? proposalStand(records.proposal) : undefined
  if (proposal && proposal.kind !== 'run') {
    if (proposal.kind === 'revise') stand.items.push({ kind: 'plan', node: PROPOSAL_NODE, visit: records.proposal!.version, step: stand.works + 1 })
    else if (proposal.kind !== 'declined' && proposal.kind !== 'decline')
      stand.waiting.push({ node: PROPOSAL_NODE, file: PROPOSAL_FILE, choices: ['approve', 'revise', 'decline'] })
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
    return settle(stand, prefix, maxSteps, spentAbove)
  }
  const pending = records.pending
  stand.position = locate({ runId, replay: state, pending, maxSteps, spent: spentAbove + stand.works }, notesOf(graph, active, start?.id))
  return settle(stand, prefix, maxSteps, spentAbove)
}

/** Fills a stand's items, waits and stop from its position, descending into the branches of a claimed note that runs subplans. */
function settle(stand: VaultStand, prefix: string, maxSteps: number, spentAbove: number): VaultStand {
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
      if (node?.plan && position.claimed) return branchesOf(stand, node, position, maxSteps, spentAbove)
      stand.items.push(item('work', position))
      return stand
    }
    case 'judge':
      stand.items.push(item('judge', position))
      return stand
    case 'decide': {
      const node = graph.nodes.get(position.node)
      stand.waiting.push({
        node: prefix + position.node,
        file: prefix + (node?.file ?? `${position.node}.md`),
        choices: (node?.edges ?? []).map((edge) => edge.label || 'next'),
      })
      return stand
    }
    case 'stopped': {
      // A stop the trace records keeps the reason it was given.
      const last = stand.replay.lastRecord
      const stop = stopOf(graph, stand.replay, position, maxSteps)
      if (position.recorded && last?.kind === 'stop') stop.reason = last.reason
      stand.ownStop = stop
      stand.stop = plan === undefined ? stop : inSubplan(stop, plan)
      return stand
    }
    default:
      return stand
  }
}

/**
 * A claimed note that runs subplans: each branch's stand, sharing the budget
 * (every branch's works count), joined as the tree joins them: items from
 * every branch in folder order, waits from every branch, the first stop.
 */
function branchesOf(stand: VaultStand, node: PlanNode, at: { visit: number; step: number }, maxSteps: number, spentAbove: number): VaultStand {
  const key = visitKey(stand.runId, node.id, at.visit)
  const folders = subplanFoldersOf(node).filter(({ outside }) => !outside)
  const records = folders.map(({ folder }) => ({ folder, records: stand.records.subplans.get(folder) }))
  // First the works every branch did, so each branch decides against the whole tree's.
  const done = records.map(({ records: each }) => (each ? standOf(each, maxSteps, key, Infinity).works : 0))
  const spent = spentAbove + stand.works + done.reduce((sum, works) => sum + works, 0)
  let left = maxSteps - spent
  for (const [index, { folder, records: each }] of records.entries()) {
    if (!each) continue
    const branch = standOf(each, maxSteps, key, spent - done[index]!)
    stand.branches.push({ folder, stand: branch })
    stand.works += branch.works
    for (const found of branch.items) {
      // An item not claimed yet needs a step of the budget: those past it wait for a later run.
      const claimed = found.kind !== 'work' || branch.position?.kind !== 'work' || branch.position.claimed || branch.branches.length > 0
      if (!claimed && left <= 0) continue
      if (!claimed) left -= 1
      stand.items.push(found)
    }
    stand.waiting.push(...branch.waiting)
    if (!stand.stop && branch.stop) stand.stop = branch.stop
  }
  // Every branch's next visit is past the budget: the run stops before the first of them.
  const refused = stand.items.length === 0 && stand.waiting.length === 0 ? stand.branches.find((each) => each.stand.position?.kind === 'work') : undefined
  if (!stand.stop && refused) {
    const { records: inner, replay: state, position } = refused.stand
    const { node, visit } = position as Extract<Position, { kind: 'work' }>
    const stop = stopOf(inner.graph, state, { node, visit, budget: 'maxSteps' }, maxSteps)
    stand.stop = inSubplan(stop, inner.folder)
  }
  return stand
}

/** A subplan's stop told from the top vault: notes by their path from it. */
function inSubplan(stop: StopInfo & { reason: string }, folder: string): StopInfo & { reason: string } {
  const path = (id: string) => `${folder}/${id}`
  return { ...stop, node: path(stop.node), loop: stop.loop.map(path), reason: `In the subplan \`${folder}/\`: ${stop.reason}` }
}

/** The notes of a vault in plan order, each subplan's nested under its note, by paths from the top vault. */
function nodesOf(records: VaultRecords, stand: VaultStand | undefined): SnapshotNode[] {
  const prefix = records.folder === '' ? '' : `${records.folder}/`
  const state = stand?.replay ?? replay(records.trace?.records ?? [], () => undefined)
  const position = stand?.position
  const working = position?.kind === 'work' && position.claimed ? position : undefined
  const start = stand?.start ?? findStart(records.graph).start
  return planOrder(records.graph, start).map((node) => {
    const entry: SnapshotNode = {
      id: prefix + node.id,
      status: node.status,
      visits: working?.node === node.id ? working.visit : (state.visits.get(node.id) ?? 0),
      maxVisits: node.maxVisits,
      start: node === start,
      terminal: node.edges.length === 0,
    }
    if (node.file !== undefined) entry.file = prefix + node.file
    if (node.plan) {
      entry.subplans = subplanFoldersOf(node)
        .filter(({ outside, folder }) => !outside && records.subplans.has(folder))
        .map(({ folder }) => {
          const inner = records.subplans.get(folder)!
          const branch = stand?.branches.find((each) => each.folder === folder)?.stand
          return { folder: prefix + folder, nodes: nodesOf(inner, branch) }
        })
    }
    return entry
  })
}

/**
 * The visits of every note of a snapshot, subplans included, by its path
 * from the top vault: what the pictures show against each budget.
 */
export function visitsOfSnapshot(snapshot: Pick<RunSnapshot, 'nodes'>): Record<string, number> {
  const visits: [string, number][] = []
  const walk = (nodes: readonly SnapshotNode[]): void => {
    for (const node of nodes) {
      visits.push([node.id, node.visits])
      for (const subplan of node.subplans ?? []) walk(subplan.nodes)
    }
  }
  walk(snapshot.nodes)
  // fromEntries, not assignment: a note named `__proto__` is a plain key.
  return Object.fromEntries(visits)
}

/**
 * A plan's notes in plan order: the start, then breadth-first along edges
 * (in the order each note lists them), then the rest by file.
 */
export function planOrder(graph: Pick<PlanGraph, 'nodes'>, start: PlanNode | undefined): PlanNode[] {
  const seen = new Set<string>()
  const order: PlanNode[] = []
  const queue = start ? [start] : []
  for (let index = 0; index < queue.length; index++) {
    const node = queue[index]!
    if (seen.has(node.id)) continue
    seen.add(node.id)
    order.push(node)
    for (const edge of node.edges) {
      const target = graph.nodes.get(edge.target)
      if (target && !seen.has(target.id)) queue.push(target)
    }
  }
  const rest = [...graph.nodes.values()].filter((node) => !seen.has(node.id))
  rest.sort((a, b) => ((a.file ?? a.id) < (b.file ?? b.id) ? -1 : (a.file ?? a.id) > (b.file ?? b.id) ? 1 : 0))
  return [...order, ...rest]
}

/**
 * The hops of a run, subplans included, oldest first: a subplan's hops
 * come before the hop of the note that ran it (or last, while it runs).
 */
function hopsOf(records: VaultRecords, stand: VaultStand | undefined): SnapshotHop[] {
  const prefix = records.folder === '' ? '' : `${records.folder}/`
  const runId = records.trace?.header.run ?? ''
  const hops: SnapshotHop[] = []
  const nested = (id: string, visit: number): SnapshotHop[] => {
    const node = records.graph.nodes.get(id)
    if (!node?.plan) return []
    const key = visitKey(runId, id, visit)
    return subplanFoldersOf(node).flatMap(({ folder }) => {
      const inner = records.subplans.get(folder)
      if (!inner?.trace || inner.trace.header.source !== key) return []
      return hopsOf(inner, stand?.branches.find((each) => each.folder === folder)?.stand)
    })
  }
  for (const record of records.trace?.records ?? []) {
    if (record.kind !== 'hop') continue
    hops.push(...nested(record.node, record.visit))
    hops.push({ step: record.step, node: prefix + record.node, visit: record.visit, edge: record.edge, decidedBy: record.decidedBy })
  }
  // A note working through its subplans now: their hops so far come last.
  const position = stand?.position
  if (position?.kind === 'work' && position.claimed) hops.push(...nested(position.node, position.visit))
  return hops
}

/** The last `count` of a list. */
function latest<T>(list: T[], count: number): T[] {
  return count <= 0 ? [] : list.slice(Math.max(0, list.length - count))
}

/** The issue of two `active` notes in one folder: a run is at one note at a time. */
function twoActive(graph: PlanGraph, nodes: string[]): PlanIssue {
  const files = nodes.map((id) => `\`${graph.nodes.get(id)?.file ?? `${id}.md`}\``).join(', ')
  return {
    code: 'two-active',
    severity: 'error',
    message: `Two notes are \`status: active\` (${files}); a run is at one node at a time. Set all but one to \`done\` or \`pending\`, then run again.`,
  }
}
