import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { PlanValidationError } from './errors.js'
import { parseFrontmatter } from './frontmatter.js'
import { isVaultLocked } from './lock.js'
import { loadPlan, TRACE_FOLDER } from './markdown-io.js'
import { edgeOrigins, type PlanGraph } from './plan-graph.js'
import { findOutputOfStep, readOutput, readTrace, tracePaths, type HopRecord, type TraceRecord } from './trace.js'
import type { DecidedBy, Edge, NodeStatus, PlanIssue, PlanNode } from './types.js'
import { findStart } from './validate.js'

/** Options of `readRunStatus`. */
export interface RunStatusOptions {
  /**
   * How many of the latest hops to report.
   *
   * @default 5
   */
  hops?: number
  /**
   * How the vault is named in the `next` sentence, e.g. as the user typed it.
   *
   * @default the `vault` argument
   */
  shownAs?: string
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
  /** What to do next, as a sentence. */
  next: string
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

type Phase = RunPhase & { next: string }

const DEFAULTS = { hops: 5 }
/** Characters of the final output shown in a status. */
const EXCERPT = 400

/**
 * Reads where the run of a plan vault stands: `fresh` (no trace), `running`
 * (a live run holds the vault) or `interrupted`, `waiting` for a person,
 * `stopped` by a budget, `completed`, or `invalid` (the plan has errors; a
 * run would refuse it). Reads only; never changes the vault.
 *
 * @param options.hops - how many of the latest hops to report (default 5)
 * @param options.shownAs - how `next` names the vault (default `vault`)
 * @throws {Error} when `vault` is not a folder
 * @throws {RunStateError} when the trace is unreadable or written by a newer vaultplan
 */
export async function readRunStatus(vault: string, options: RunStatusOptions = {}): Promise<RunStatus> {
  const { hops: hopCount, shownAs } = { ...DEFAULTS, shownAs: vault, ...options }
  if (!(Number.isInteger(hopCount) && hopCount >= 0)) throw new TypeError(`Expected \`hops\` to be an integer from 0 up, got \`${hopCount}\``)
  const graph = await loadPlan(vault)
  let issues: PlanIssue[]
  let invalid = false
  try {
    issues = graph.validate()
  } catch (error) {
    if (!(error instanceof PlanValidationError)) throw error
    issues = error.issues
    invalid = true
  }
  const trace = await readTrace(vault)
  const records = trace?.records ?? []
  const visits = new Map(Object.entries(visitsOf(records)))
  const steps = records.reduce((most, record) => Math.max(most, record.step), 0)
  const start = findStart(graph).start
  const hopRecords = records.filter((record): record is HopRecord => record.kind === 'hop')
  const base: Omit<StatusBase, 'next'> = {
    vault,
    run: trace ? { id: trace.header.run, query: trace.header.query, started: trace.header.started, steps } : null,
    nodes: [...graph.nodes.values()].map((node) => {
      const state: NodeState = { id: node.id, status: node.status, visits: visits.get(node.id) ?? 0, maxVisits: node.maxVisits, start: node === start, terminal: node.edges.length === 0 }
      if (node.file !== undefined) state.file = node.file
      return state
    }),
    hops: hopRecords
      .slice(Math.max(0, hopRecords.length - hopCount))
      .map(({ step, node, visit, edge, decidedBy }) => ({ step, node, visit, edge, decidedBy })),
    issues,
  }
  const context: Context = { vault, shownAs, runId: trace?.header.run ?? '', graph, records, visits, steps, run: `vaultplan run ${shellWord(shownAs)}` }
  const phase = invalid ? invalidPhase(issues, shownAs) : await phaseOf(context, trace !== undefined, start)
  return { ...base, ...phase } as RunStatus
}

/**
 * Visits per node recorded in a trace: the highest visit of each node's hops
 * and waits for a person (a waiting node's visit is worked), as a run reports them.
 */
export function visitsOf(records: readonly TraceRecord[]): Record<string, number> {
  const visits = new Map<string, number>()
  for (const record of records) if (record.kind !== 'stop') visits.set(record.node, Math.max(visits.get(record.node) ?? 0, record.visit))
  // fromEntries, not assignment: a note named `__proto__` is a plain key.
  return Object.fromEntries(visits)
}

interface Context {
  vault: string
  /** How sentences name the vault. */
  shownAs: string
  runId: string
  graph: PlanGraph
  records: TraceRecord[]
  visits: Map<string, number>
  steps: number
  /** `vaultplan run <vault>`, quoted for a shell. */
  run: string
}

/** The phase, in the order `runPlan` looks for where to resume. */
async function phaseOf(context: Context, traced: boolean, start: PlanNode | undefined): Promise<Phase> {
  const { graph, records, visits, run } = context
  const active = [...graph.nodes.values()].filter((node) => node.status === 'active')
  if (!traced) {
    const at = active[0] ?? start
    const where = at ? ` It starts at \`${at.id}\`.` : ''
    const next = `Start the run: \`${run} --query "..."\`.${where}`
    return at ? { phase: 'fresh', node: at.id, next } : { phase: 'fresh', next }
  }
  const running = await isVaultLocked(context.vault)
  const moving = running ? 'running' : 'interrupted'
  if (active.length > 1) {
    const files = active.map((node) => `\`${node.file ?? node.id}\``).join(', ')
    return {
      phase: moving,
      node: active[0]!.id,
      visit: (visits.get(active[0]!.id) ?? 0) + 1,
      step: context.steps + 1,
      next: `Two notes are \`status: active\` (${files}); a run is at one node at a time. Set all but one to \`done\` or \`pending\`, then \`${run}\`.`,
    }
  }
  if (active[0]) return movingPhase(context, moving, active[0].id, (visits.get(active[0].id) ?? 0) + 1, context.steps + 1)
  const pending = await findOutputOfStep(context.vault, context.steps + 1)
  const saved = pending ? await readOutput(context.vault, pending) : undefined
  if (saved && saved.run === context.runId && graph.nodes.has(saved.node)) return movingPhase(context, moving, saved.node, saved.visit, saved.step)

  const last = records.at(-1)
  // A header and no hop: the run stopped before its first node became active.
  if (!last) return movingPhase(context, moving, start?.id ?? '', 1, 1)
  if (last.kind === 'waiting') return waitingPhase(context, last)
  if (last.kind === 'stop') return stoppedPhase(context, last)
  if (last.next === null) {
    const final = join(context.shownAs, TRACE_FOLDER, 'final.md')
    return { phase: 'completed', node: last.node, output: await finalExcerpt(context.vault, last), next: `Nothing to do: the run is complete. Read \`${final}\`, or start over with \`${run} --fresh\`.` }
  }
  return movingPhase(context, moving, last.next, (visits.get(last.next) ?? 0) + 1, context.steps + 1)
}

function movingPhase(context: Context, phase: 'running' | 'interrupted', node: string, visit: number, step: number): Phase {
  const next = !context.graph.nodes.has(node)
    ? `The run is at \`${node}\`, but the vault has no such note any more. Restore it, or set another note \`status: active\` to move the run there, then \`${context.run}\`.`
    : phase === 'running'
      ? `A run is working in the vault now, at \`${node}\` (visit ${visit}); watch it in your notes app, or ask for the status again later.`
      : `Resume the run: \`${context.run}\` (it goes on at \`${node}\`, visit ${visit}).`
  return { phase, node, visit, step, next }
}

function waitingPhase(context: Context, last: Extract<TraceRecord, { kind: 'waiting' }>): Phase {
  const node = context.graph.nodes.get(last.node)
  const file = node?.file ?? `${last.node}.md`
  const boxes: DecisionBox[] = (node?.edges ?? []).map((edge) => {
    const checked = edgeOrigins.get(edge)?.checked
    return { label: edge.label, target: edge.target, box: checked !== undefined, checked: checked === true }
  })
  const ticked = boxes.filter((box) => box.checked)
  const where = `\`${join(context.shownAs, file)}\``
  const unboxed = boxes.find((box) => !box.box)
  // An item written without a box is ticked by writing one: `- [x] approved -> [[send]]`.
  const how = unboxed ? `; an item without a box is ticked by writing one: \`- [x] ${boxLabel(unboxed)}\`` : ''
  const next =
    ticked.length === 0
      ? `Tick one box under \`## Next\` in ${where}${how} (write under \`## Feedback\` if you like), then \`${context.run}\`.`
      : ticked.length === 1
        ? `\`${boxLabel(ticked[0]!)}\` is ticked: \`${context.run}\` to go on along it.`
        : `${ticked.length} boxes are ticked in ${where}; untick all but one, then \`${context.run}\`.`
  return { phase: 'waiting', node: last.node, visit: last.visit, file, boxes, next }
}

function stoppedPhase(context: Context, last: Extract<TraceRecord, { kind: 'stop' }>): Phase {
  const node = context.graph.nodes.get(last.node)
  let next: string
  if (last.budget === 'max_visits') {
    const file = `\`${join(context.shownAs, node?.file ?? `${last.node}.md`)}\``
    next =
      node && node.maxVisits >= last.visit
        ? `\`max_visits\` of \`${last.node}\` is ${node.maxVisits} now, enough for visit ${last.visit}: \`${context.run}\` to go on.`
        : `Raise \`max_visits\` in ${file} above ${last.visit - 1} (or change the plan), then \`${context.run}\`.`
  } else {
    next = `Run again with a larger step budget: \`${context.run} --max-steps ${Math.max(last.step * 2, last.step + 10)}\`.`
  }
  return { phase: 'stopped', node: last.node, visit: last.visit, budget: last.budget, reason: last.reason, next }
}

function invalidPhase(issues: PlanIssue[], shownAs: string): Phase {
  const errors = issues.filter((issue) => issue.severity === 'error')
  // An error at a line is usually the cause of those about the whole plan (a dangling edge leaves a loop without exit).
  const first = errors.find((issue) => issue.line !== undefined) ?? errors[0]
  const place = first?.file !== undefined ? `\`${join(shownAs, first.file)}\`${first.line !== undefined ? ` line ${first.line}` : ''}: ` : ''
  const where = first ? ` (start with ${place}${first.message})` : ''
  return {
    phase: 'invalid',
    next: `Fix the plan's ${errors.length === 1 ? 'error' : `${errors.length} errors`}${where}, then check with \`vaultplan validate ${shellWord(shownAs)}\`; a run refuses an invalid plan, and the vault stays resumable.`,
  }
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

function boxLabel(box: DecisionBox): string {
  return `${box.label || 'next'} -> [[${box.target}]]`
}

/** A word for a POSIX shell: as it is when it is safe, else single-quoted. */
function shellWord(word: string): string {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}
