import { findStart } from '../../plan/validate.js'
import { planOrder } from '../../plan/plan-order.js'
import type { NodeStatus, PlanIssue } from '../../core/types.js'
import { proposalStand, toProposalInfo, type ProposalInfo } from '../../vault/proposal-note.js'
import { subplanFoldersOf } from '../../vault/subplan-folders.js'
import { replay, visitKey } from './run-core.js'
import type { StopInfo, WaitingNote } from './run-options.js'
import type { HopRecord } from '../../store/trace.js'
import { twoActiveReason } from './messages.js'
import { nextOf, type RunNext, type RunPhase } from './run-next.js'
export type { RunNext, RunPhase } from './run-next.js'
import { standOf, type RunHolder, type VaultRecords, type VaultStand, type WorkItem } from './vault-stand.js'
export type { RunHolder, VaultRecords, WorkItem } from './vault-stand.js'

/*
 * Where a run stands, decided once, in one place: a pure function of the
 * records read off disk, the top vault's and its subplans'. `observeRun`
 * reads the records and asks it; `readRunStatus`, the CLI and the MCP tools
 * are views of its answer.
 */

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
  /** A person's decision along one of several boxes ticked by hand: the others, which `decide` unticked. */
  unticked?: string[]
}

/** The one value every surface reads of a run: `readRunStatus`, the CLI and the MCP tools derive theirs from it. */
export interface RunSnapshot {
  /** The vault as passed in. */
  vault: string
  run: { id: string; query: string; started: string; source: string } | null
  /** The run's one phase: every surface (status, MCP, the board) says this word. */
  phase: RunPhase
  /** What the next call does, as data. */
  next: RunNext
  /** Works of the whole run, subplans included. */
  steps: number
  /** Planner calls of the run (decompositions); `maxSteps` bounds them with the works. */
  plannerCalls: number
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
  /** A live runner that holds the vault now (beside the phase: a held run is `ready` while it works). */
  holder?: RunHolder
  /** The vault's proposal, when `proposePlan` wrote one. */
  proposal?: ProposalInfo
}

/**
 * Where a run stands, from the records of its vaults (pure: no I/O): the
 * phase, the frontier of every ready item across branches, waits, stops,
 * the result, the notes in plan order and the latest hops.
 *
 * @param options.maxSteps - the budget to decide for
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
    next: { kind: 'fresh' },
    steps: stand.works,
    plannerCalls: top.plannerCalls ?? 0,
    maxSteps: options.maxSteps,
    nodes: nodesOf(top, stand),
    frontier: stand.items,
    waiting: stand.waiting,
    issues: top.issues,
    hops: latest(hopsOf(top, stand), options.hops),
  }
  if (top.holder) snapshot.holder = top.holder
  if (top.proposal) snapshot.proposal = toProposalInfo(top.proposal)
  snapshot.phase = phaseOf(stand)
  const known = new Set([...snapshotNodes(snapshot.nodes)].map((node) => node.id))
  snapshot.next = nextOf(snapshot.phase, stand, (path) => known.has(path))
  if (stand.twoActive) snapshot.issues = [...top.issues, { code: 'two-active', severity: 'error', message: twoActiveReason(stand.twoActive.files) }]
  if (snapshot.phase !== 'invalid') snapshot.issues = top.issues.filter((issue) => issue.severity === 'warning')
  if (snapshot.phase === 'stopped' && stand.stop) snapshot.stop = stand.stop
  if (stand.position?.kind === 'completed') snapshot.result = { node: stand.position.hop.node, output: top.final ?? '' }
  return snapshot
}

/** The run's one phase, from where its top vault stands. */
function phaseOf(stand: VaultStand): RunPhase {
  const { records, position } = stand
  if (records.proposal) {
    const kind = proposalStand(records.proposal).kind
    if (kind === 'declined' || kind === 'decline') return 'declined'
    if (kind !== 'run' && kind !== 'approve') return stand.items.length > 0 ? 'ready' : 'waiting'
  }
  if (records.issues.some((issue) => issue.severity === 'error')) return 'invalid'
  if (!position || stand.twoActive || position.kind === 'no-start') return 'invalid'
  if (!records.trace) return 'fresh'
  if (stand.items.length > 0) return 'ready'
  if (stand.stop) return 'stopped'
  if (stand.waiting.length > 0) return 'waiting'
  return position.kind === 'completed' ? 'completed' : 'waiting'
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
  // fromEntries, not assignment: a note named `__proto__` is a plain key.
  return Object.fromEntries([...snapshotNodes(snapshot.nodes)].map((node) => [node.id, node.visits]))
}

/** Every note of a snapshot's `nodes`, subplans included: each note, then the notes of the subplans it runs, in plan order. */
export function* snapshotNodes(nodes: readonly SnapshotNode[]): Generator<SnapshotNode> {
  for (const node of nodes) {
    yield node
    for (const subplan of node.subplans ?? []) yield* snapshotNodes(subplan.nodes)
  }
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
    const branches = subplanFoldersOf(node).flatMap(({ folder }) => {
      const inner = records.subplans.get(folder)
      if (!inner?.trace || inner.trace.header.source !== key) return []
      return hopsOf(inner, stand?.branches.find((each) => each.folder === folder)?.stand)
    })
    // Parallel branches' hops in the order of the run: by their whole-run step numbers (a stable sort keeps a branch's own order).
    return branches.sort((a, b) => a.step - b.step)
  }
  for (const record of records.trace?.records ?? []) {
    if (record.kind !== 'hop') continue
    hops.push(...nested(record.node, record.visit))
    const hop: SnapshotHop = { step: record.step, node: prefix + record.node, visit: record.visit, edge: record.edge, decidedBy: record.decidedBy }
    if (record.unticked) hop.unticked = record.unticked
    hops.push(hop)
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
