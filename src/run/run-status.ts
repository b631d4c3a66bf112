import { readFile, stat } from 'node:fs/promises'
import { join } from 'node:path'
import { subplanFoldersOf } from '../vault/subplan-folders.js'
import { parseFrontmatter } from '../vault/frontmatter.js'
import { assertFolder } from '../vault/fs-atomic.js'
import { isVaultLocked } from '../vault/lock.js'
import { loadPlan } from '../plan/load-plan.js'
import type { PlanGraph } from '../plan/plan-graph.js'
import { locate, notesOf, replay, type Replay } from './run-core.js'
import {
  PROPOSAL_CHOICES,
  PROPOSAL_NODE,
  proposalStand,
  readProposalNote,
  toProposalInfo,
  type ProposalInfo,
  type ProposalNote,
} from '../vault/proposal-note.js'
import { PROPOSAL_FILE } from '../vault/run-folder.js'
import { pendingOutput } from './run-open.js'
import { readOutput } from './output-note.js'
import { readTrace, tracePaths, type HopRecord, type TraceRecord } from './trace.js'
import type { DecidedBy, Edge, NodeStatus, PlanIssue, PlanNode } from '../core/types.js'
import { findStart } from '../plan/validate.js'

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
   * @default 50
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
export interface NodeState {
  id: string
  /** The note, relative to the vault. */
  file?: string
  status: NodeStatus
  /** Visits recorded in the trace: the highest visit of the node's hops and waits. */
  visits: number
  maxVisits: number
  start: boolean
  terminal: boolean
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
}

/** An item under `## Next` of a note that waits for a person. */
export interface DecisionBox {
  label: string
  target: string
  /** Whether the item is a task item (`- [ ] approved -> [[send]]`). */
  box: boolean
  checked: boolean
}

interface StatusBase {
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
  /** The vault's proposal (SPEC section 11), when `proposePlan` wrote it. */
  proposal?: ProposalInfo
}

/**
 * Where a plan vault's run stands, derived from its notes and its trace the
 * way `runPlan` resumes (SPEC section 4): `phase` and its details, each
 * node's status and visits, the latest hops and what to do next.
 */
export type RunStatus = StatusBase & RunPhase

/** The phase of a run and what belongs to it. */
export type RunPhase =
  /** No trace yet; `node` is where a run would start. */
  | { phase: 'fresh'; node?: string }
  /** `running`: a live run holds the vault; `interrupted`: none does, and a run would go on at `node`, `visit`, `step`. */
  | { phase: 'running' | 'interrupted'; node: string; visit: number; step: number }
  /** A `judge: human` node waits for one of its boxes to be ticked; `file` is its note. */
  | { phase: 'waiting'; node: string; visit: number; file: string; boxes: DecisionBox[] }
  /** A budget ran out before `visit` of `node`. */
  | { phase: 'stopped'; node: string; visit: number; budget: 'max_visits' | 'maxSteps'; reason: string }
  /** The run reached the terminal `node`; `output` is the start of its output. */
  | { phase: 'completed'; node: string; output: string }
  /** The plan has errors (listed in `issues`); a run would refuse it. */
  | { phase: 'invalid' }

type Phase = RunPhase & { next: RunNext }

const DEFAULTS = { hops: 5, maxSteps: 50 }
/** Characters of the final output shown in a status. */
const EXCERPT = 400

/**
 * Reads where the run of a plan vault stands: `fresh` (no trace), `running`
 * (a live run holds the vault) or `interrupted`, `waiting` for a person,
 * `stopped` by a budget, `completed`, or `invalid` (the plan has errors; a
 * run would refuse it), decided by the same function `runPlan` and
 * `nextStep` resume by. Reads only; never changes the vault.
 *
 * @param options.hops - how many of the latest hops to report (default 5)
 * @param options.maxSteps - the step budget a run would have (default 50)
 * @throws {VaultPathError} when `vault` is not a folder
 * @throws {RunStateError} when the trace is unreadable or written by a newer vaultplan
 */
export async function readRunStatus(vault: string, options: RunStatusOptions = {}): Promise<RunStatus> {
  const { hops: hopCount, maxSteps } = { ...DEFAULTS, ...options }
  if (!(Number.isInteger(hopCount) && hopCount >= 0)) throw new TypeError(`Expected \`hops\` to be an integer from 0 up, got \`${hopCount}\``)
  if (!(Number.isInteger(maxSteps) && maxSteps >= 1)) throw new TypeError(`Expected \`maxSteps\` to be an integer from 1 up, got \`${maxSteps}\``)
  await assertFolder(vault)
  const graph = await loadPlan(vault)
  const checked = graph.check()
  const invalid = checked.errors.length > 0
  // Errors only when the plan is invalid (so a run refuses it), warnings in any phase, in file order.
  const issues: PlanIssue[] = checked.issues
  const trace = await readTrace(vault)
  const records = trace?.records ?? []
  const state = replay(records, () => undefined)
  const start = findStart(graph).start
  const hopRecords = records.filter((record): record is HopRecord => record.kind === 'hop')
  const proposal = await readProposalNote(vault)
  // The proposal is decided first, as `runPlan` decides it before reading the plan.
  const gated = proposal ? proposalPhase(proposal) : undefined
  const phase = gated ?? (invalid ? invalidPhase() : await phaseOf(vault, graph, trace?.header.run, state, start, maxSteps))
  const working = phase.next.kind === 'work' && phase.phase !== 'fresh' && graph.nodes.get(phase.next.node!)?.status === 'active' ? phase.next : undefined
  const base: Omit<StatusBase, 'next'> = {
    vault,
    run: trace ? { id: trace.header.run, query: trace.header.query, started: trace.header.started, steps: state.steps } : null,
    nodes: [...graph.nodes.values()].map((node) => {
      // The visit being worked counts: an active note shows the visit it is in.
      const visits = working?.node === node.id ? working.visit! : (state.visits.get(node.id) ?? 0)
      const entry: NodeState = { id: node.id, status: node.status, visits, maxVisits: node.maxVisits, start: node === start, terminal: node.edges.length === 0 }
      if (node.file !== undefined) entry.file = node.file
      return entry
    }),
    hops: hopRecords.slice(Math.max(0, hopRecords.length - hopCount)).map(({ step, node, visit, edge, decidedBy }) => ({ step, node, visit, edge, decidedBy })),
    issues,
  }
  if (proposal) base.proposal = toProposalInfo(proposal)
  const status = { ...base, ...phase } as RunStatus
  await addSubplans(vault, graph, status, options)
  return status
}

/**
 * Nests each subplan's status under its note; when the run is inside a
 * subplan (its note claimed), `next` says what happens there, `plan` naming
 * the folder from this vault.
 */
async function addSubplans(vault: string, graph: PlanGraph, status: RunStatus, options: RunStatusOptions): Promise<void> {
  for (const entry of status.nodes) {
    const node = graph.nodes.get(entry.id)
    if (!node?.plan) continue
    entry.subplans = []
    for (const { folder, outside } of subplanFoldersOf(node)) {
      if (
        outside ||
        !(await stat(join(vault, folder)).then(
          (info) => info.isDirectory(),
          () => false,
        ))
      )
        continue
      const inner = await readRunStatus(join(vault, folder), options)
      entry.subplans.push({ folder, status: inner })
      const next = status.next
      if (next.kind === 'work' && next.node === entry.id && node.status === 'active' && next.plan === undefined && inner.next.kind !== 'completed') {
        status.next = { ...inner.next, plan: inner.next.plan === undefined ? folder : `${folder}/${inner.next.plan}` }
      }
    }
  }
}

/**
 * Visits per node recorded in a trace: the highest visit of each node's hops
 * and waits for a person (a waiting node's visit is worked), as a run reports them.
 */
export function visitsOf(records: readonly TraceRecord[]): Record<string, number> {
  // fromEntries, not assignment: a note named `__proto__` is a plain key.
  return Object.fromEntries(replay(records, () => undefined).visits)
}

/** The phase, from the same decision `runPlan` and `nextStep` resume by. */
async function phaseOf(
  vault: string,
  graph: PlanGraph,
  runId: string | undefined,
  state: Replay,
  start: PlanNode | undefined,
  maxSteps: number,
): Promise<Phase> {
  const active = [...graph.nodes.values()].filter((node) => node.status === 'active').map((node) => node.id)
  if (runId === undefined) {
    const at = active[0] ?? start?.id
    return at === undefined ? { phase: 'fresh', next: { kind: 'fresh' } } : { phase: 'fresh', node: at, next: { kind: 'fresh', node: at } }
  }
  const pending = await pendingOutput(vault, state.steps)
  const position = locate({ runId, replay: state, pending, maxSteps }, notesOf(graph, active, start?.id))
  const moving = (await isVaultLocked(vault)) ? 'running' : 'interrupted'
  const last = state.lastRecord
  switch (position.kind) {
    case 'two-active':
      return {
        phase: moving,
        node: position.nodes[0]!,
        visit: (state.visits.get(position.nodes[0]!) ?? 0) + 1,
        step: state.steps + 1,
        next: { kind: 'two-active', nodes: position.nodes },
      }
    case 'no-start':
      return { phase: 'invalid', next: { kind: 'invalid' } }
    case 'judge':
      return {
        phase: moving,
        node: position.node,
        visit: position.visit,
        step: position.step,
        next: { kind: 'judge', node: position.node, visit: position.visit, step: position.step },
      }
    case 'work': {
      const next: RunNext = { kind: 'work', node: position.node, visit: position.visit, step: position.step }
      if (!graph.nodes.has(position.node)) next.missing = true
      // A stop whose budget was raised since: still stopped, and the next run goes on.
      if (last?.kind === 'stop' && !position.claimed) return { ...stoppedOf(last), next }
      return { phase: moving, node: position.node, visit: position.visit, step: position.step, next }
    }
    case 'decide':
      return waitingPhase(graph, position.node, position.visit)
    case 'stopped':
      return {
        ...stoppedOf(last?.kind === 'stop' ? last : { node: position.node, visit: position.visit, budget: position.budget, reason: '' }),
        next: { kind: 'stopped', node: position.node, visit: position.visit },
      }
    case 'completed':
      return {
        phase: 'completed',
        node: position.hop.node,
        output: await finalExcerpt(vault, position.hop),
        next: { kind: 'completed', node: position.hop.node },
      }
  }
}

function stoppedOf(last: { node: string; visit: number; budget: 'max_visits' | 'maxSteps'; reason: string }): RunPhase & { phase: 'stopped' } {
  return { phase: 'stopped', node: last.node, visit: last.visit, budget: last.budget, reason: last.reason }
}

function waitingPhase(graph: PlanGraph, id: string, visit: number): Phase {
  const node = graph.nodes.get(id)
  const file = node?.file ?? `${id}.md`
  const boxes: DecisionBox[] = (node?.edges ?? []).map((edge) => {
    const checked = edge.at?.checked
    return { label: edge.label, target: edge.target, box: checked !== undefined, checked: checked === true }
  })
  return { phase: 'waiting', node: id, visit, file, boxes, next: { kind: 'waiting', node: id, visit } }
}

/** A proposal not approved: it waits (its boxes as a waiting note's), or it was declined. `undefined` once approved. */
function proposalPhase(note: ProposalNote): Phase | undefined {
  const stand = proposalStand(note)
  if (stand.kind === 'run') return undefined
  if (stand.kind === 'declined' || stand.kind === 'decline') return { phase: 'fresh', next: { kind: 'declined', node: PROPOSAL_NODE } }
  const boxes: DecisionBox[] = PROPOSAL_CHOICES.map((choice) => ({
    label: choice,
    target: '',
    box: note.boxes[choice] !== undefined,
    checked: note.ticked.includes(choice),
  }))
  // A ticked `revise` has the planner write the next version on the next call.
  const next: RunNext = { kind: stand.kind === 'revise' ? 'plan' : 'waiting', node: PROPOSAL_NODE, visit: note.version }
  return { phase: 'waiting', node: PROPOSAL_NODE, visit: note.version, file: PROPOSAL_FILE, boxes, next }
}

function invalidPhase(): Phase {
  return { phase: 'invalid', next: { kind: 'invalid' } }
}

async function finalExcerpt(vault: string, last: HopRecord): Promise<string> {
  const saved = await readOutput(vault, last.output)
  let output = saved?.output
  if (output === undefined) {
    const text = await readFile(tracePaths(vault).final, 'utf8').catch(() => '')
    output = text.slice(parseFrontmatter(text).split.contentStart)
  }
  const trimmed = output.trim()
  return trimmed.length > EXCERPT ? `${trimmed.slice(0, EXCERPT).trimEnd()}…` : trimmed
}
