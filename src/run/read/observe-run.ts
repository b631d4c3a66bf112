import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { parseFrontmatter } from '../../vault/frontmatter.js'
import { assertFolder } from '../../vault/fs-atomic.js'
import { vaultHolder } from '../../vault/lock.js'
import { readProposalNote } from '../../vault/proposal-note.js'
import { loadPlan } from '../../plan/load-plan.js'
import { journaledWrites } from '../../store/journal-format.js'
import type { NodeStatus } from '../../core/types.js'
import type { PlanGraph } from '../../plan/plan-graph.js'
import { subplanTree } from '../../plan/subplan-tree.js'
import { journaledOutputs, pendingOutput, type OutputReader } from './run-outputs.js'
import { plannerCallsOf } from './planner-calls.js'
import { resolveBudget } from '../core/run-options.js'
import { snapshotOf, type RunSnapshot, type VaultRecords } from '../core/run-snapshot.js'
import { readTrace, type Trace } from '../../store/trace.js'
import { runFileToRead } from '../../vault/path-gate.js'
import { FINAL_FILE, TRACE_FOLDER } from '../../vault/run-folder.js'

/** Options of `observeRun`. */
export interface ObserveOptions {
  /**
   * The step budget to decide the phase and frontier for.
   *
   * @default the budget the run last ran with (its trace records it), else 50
   */
  maxSteps?: number
  /**
   * How many of the latest hops to list.
   *
   * @default 5
   */
  hops?: number
}

/** How many hops a snapshot lists unless told. */
const DEFAULT_HOPS = 5

/**
 * The options of `observeRun` (and `readRunStatus`) with their defaults.
 *
 * @throws `TypeError` for a `maxSteps` or `hops` that is not a whole number in range
 */
export function checkObserveOptions(options: ObserveOptions): { hops: number; maxSteps: number | undefined } {
  const hops = options.hops ?? DEFAULT_HOPS
  const maxSteps = options.maxSteps
  if (!(Number.isInteger(hops) && hops >= 0)) throw new TypeError(`Expected \`hops\` to be an integer from 0 up, got \`${hops}\``)
  if (maxSteps !== undefined && !(Number.isInteger(maxSteps) && maxSteps >= 1))
    throw new TypeError(`Expected \`maxSteps\` to be an integer from 1 up, got \`${maxSteps}\``)
  return { hops, maxSteps }
}

/**
 * Where the run of a plan vault stands, as one value: its
 * phase, the notes in plan order with their subplans nested, the frontier
 * of everything that can be done now across branches (its first item is
 * what the next `nextStep` claims and `runPlan` works), the notes waiting
 * for a person, a budget stop, the result, the latest hops, and the live
 * runner that holds the vault. Reads only; never changes the vault.
 *
 * @throws {@link VaultPathError} when `vault` is not a folder
 * @throws {@link RunStateError} when a trace is unreadable or written by a newer vaultplan
 * @throws `TypeError` for a `maxSteps` or `hops` that is not a whole number in range
 */
export async function observeRun(vault: string, options: ObserveOptions = {}): Promise<RunSnapshot> {
  const { hops, maxSteps } = checkObserveOptions(options)
  const records = await readRecords(vault)
  return snapshotOf(vault, records, { maxSteps: budgetOf(records, maxSteps), hops })
}

/**
 * The step budget a run is decided for (`resolveBudget`): the one given,
 * else the one the run last ran with (its latest claim, stop, hop or wait,
 * subplans included, records it; a run before those were recorded, the one
 * it was started with), else `fallback`.
 */
export function budgetOf(records: VaultRecords, told?: number, fallback?: number): number {
  const traces = [...subplanTree(records)].map(({ vault }) => vault.trace)
  const entries = traces.flatMap((trace) => [...(trace?.claims ?? []), ...(trace?.records ?? [])])
  return resolveBudget(told, { entries, started: records.trace?.header.maxSteps }, fallback)
}

/**
 * The records of a vault's run as on disk, its subplans' included: what the
 * snapshot is decided from.
 *
 * @throws {@link VaultPathError} when `vault` is not a folder
 */
export async function readRecords(vault: string): Promise<VaultRecords> {
  await assertFolder(vault)
  // Read before the notes: a status a live run applies meanwhile is in the journal read, or in the note.
  const journaled = journaledWrites(vault)
  const graph = await loadPlan(vault)
  const records = await recordsOf(vault, graph, journaled)
  const proposal = await readProposalNote(vault)
  if (proposal) records.proposal = proposal
  if (records.trace) records.plannerCalls = await plannerCallsOf(vault, graph, records.trace.header.run)
  const holder = await vaultHolder(vault)
  if (holder) records.holder = holder
  return records
}

/** The records of every vault of the plan `graph` of `vault`, its subplans' nested under the top's; `top` is the top vault's journal, read before its notes. */
async function recordsOf(vault: string, graph: PlanGraph, top: Journaled): Promise<VaultRecords> {
  const read = new Map<PlanGraph, { records: VaultRecords; subplans: Map<string, VaultRecords> }>()
  for (const { folder, inner, vault: plan, parent } of subplanTree(graph)) {
    const subplans = new Map<string, VaultRecords>()
    const dir = folder === '' ? vault : join(vault, folder)
    const records = await vaultRecordsOf(dir, folder, plan, subplans, folder === '' ? top : journaledWrites(dir))
    read.set(plan, { records, subplans })
    if (parent) read.get(parent)!.subplans.set(inner, records)
  }
  return read.get(graph)!.records
}

/** What a vault's journal holds that its files may lack yet (see `journaledWrites`). */
type Journaled = ReturnType<typeof journaledWrites>

/** The records of one vault of the run, with `subplans` (filled by the caller) as its subplans'. */
async function vaultRecordsOf(dir: string, folder: string, graph: PlanGraph, subplans: Map<string, VaultRecords>, journaled: Journaled): Promise<VaultRecords> {
  // Journal and files as one: a live run's last statuses and outputs, journaled and not written into the files yet (they are within milliseconds).
  const { statuses } = journaled
  if (statuses.size > 0)
    for (const node of graph.nodes.values()) node.status = (statuses.get(node.file ?? `${node.id}.md`) as NodeStatus | undefined) ?? node.status
  const trace = await readTrace(dir)
  const records: VaultRecords = { folder, graph, issues: graph.check().issues, trace, pending: undefined, subplans, now: Date.now() }
  if (trace) {
    const outputs = journaledOutputs(dir, journaled.files, trace.header.run)
    const steps = trace.records.reduce((highest, record) => Math.max(highest, record.step), 0)
    records.pending = await pendingOutput(dir, steps, outputs, trace.claims)
    const final = await finalOutput(dir, trace, outputs)
    if (final !== undefined) records.final = final
  }
  return records
}

/** The terminal's output, when the trace's last record ended the run: its output note, else `final.md`. */
async function finalOutput(dir: string, trace: Trace, outputs: OutputReader): Promise<string | undefined> {
  const last = trace.records.at(-1)
  if (last?.kind !== 'hop' || last.next !== null) return undefined
  const saved = await outputs.readOutput(last.output)
  if (saved) return saved.output
  const text = await readFile(runFileToRead(dir, `${TRACE_FOLDER}/${FINAL_FILE}`), 'utf8').catch(() => '')
  return text.slice(parseFrontmatter(text).split.contentStart)
}
