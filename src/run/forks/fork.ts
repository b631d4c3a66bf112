import { appendFile, copyFile, readFile, readdir } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { RunStateError } from '../../core/errors.js'
import { assertFolder, writeFileAtomic } from '../../vault/fs-atomic.js'
import { ARCHIVE_FOLDER, FINAL_FILE, LEDGER_FILE, TRACE_FILE, TRACE_FOLDER } from '../../vault/run-folder.js'
import { confine, PathRefusal } from '../../vault/path-gate.js'
import { runFilePath } from '../../vault/run-file-path.js'
import { subplanFoldersOf } from '../../vault/subplan-folders.js'
import { updateStatus } from '../../vault/update-status.js'
import { loadPlan } from '../../plan/load-plan.js'
import type { PlanGraph } from '../../plan/plan-graph.js'
import { subplanTree } from '../../plan/subplan-tree.js'
import { cutAt, wholeRunSteps, worksUpTo, type ForkCut, type RunRecords, type TraceEntry } from './fork-cut.js'
import { visitKey } from '../core/run-core.js'
import { newRunId } from '../drive/run-id.js'
import { copyVault, intoPlace } from '../drive/run-vault.js'
import { outputFile, parseTrace, readTrace, TRACE_FORMAT, tracePaths, writeTraceHeader, type TraceHeader, type TraceRecord } from '../../store/trace.js'
import { statOrNothing } from '../../vault/stat-or-nothing.js'

/** Options of `forkRun`. */
export interface ForkOptions {
  /** The last step of the source run the fork keeps; `0` keeps none (the plan and the query only). */
  step: number
  /** The new vault: a folder that does not exist yet, or an empty one. */
  into: string
  /**
   * Flush the fork's files to the disk.
   *
   * @default true
   */
  fsync?: boolean
}

/** A marker line ends every trace and ledger entry; what stands before it up to the previous one is the entry. */
const MARKER = /^<!-- vaultplan:(?:hop|ledger) (.*) -->$/

/**
 * Forks a run (time travel): copies the plan and the run up to step `step`
 * into a new vault, never changing the source. The fork's trace header
 * names where it came from (`fork: { run, step }`), it gets a new run id,
 * and running it goes on from the hop after `step`, with the plan's notes
 * as they are in the fork (fix a note there first to replay from before it
 * went wrong). The ledger entries made up to that step come along.
 *
 * Steps count the works of the whole run, subplans included, as
 * `RunResult.steps` does (`outline`, `research/find`, `research/summarise`,
 * `write` are steps 1 to 4). The fork at step N holds the run as it stood
 * right after its Nth work, in every vault of the tree: notes worked by
 * then `done`, a note waiting for a person at N `waiting` (a person's later
 * decision is left out), a note whose subplans were under way `active`,
 * the rest `pending`; each subplan folder holds the trace and outputs of
 * its run as they were then (the run of the visit under way, or of the
 * latest one), or none before its note was entered. The hop of a note that
 * runs subplans comes with its subplans' last work; works of parallel
 * branches are ordered by when they were claimed.
 *
 * @returns the fork's path
 * @throws `TypeError` when `step` is not a step of the source run (0 up to its works)
 * @throws {@link RunStateError} `no-run` when the source holds no run; `run-vault-not-empty` when `into` holds anything
 */
export async function forkRun(vault: string, options: ForkOptions): Promise<string> {
  if (!options || typeof options.into !== 'string' || options.into === '')
    throw new TypeError(`Expected \`into\` to be a folder path, got \`${String(options?.into)}\``)
  const source = resolve(vault)
  await assertFolder(source, vault)
  const trace = await readTrace(source)
  if (!trace) throw new RunStateError('no-run', `\`${vault}\` holds no run to fork (no \`00_plan-trace/trace.md\`); run it first.`, { vault })
  const top = await readRuns(source, trace.header)
  const steps = wholeRunSteps(top)
  const { step } = options
  if (!Number.isInteger(step) || step < 0 || step > steps)
    throw new TypeError(`Expected \`step\` to be an integer from 0 to ${steps} (the steps of run \`${trace.header.run}\`), got \`${String(step)}\``)
  const target = resolve(options.into)
  const entries = await readdir(target).catch(() => [] as string[])
  if (entries.length > 0)
    throw new RunStateError('run-vault-not-empty', `\`${options.into}\` is not empty; fork into a new or empty folder.`, { folder: options.into })
  const fsync = options.fsync ?? true
  const cut = cutAt(top, worksUpTo(top, step))
  const fill = async (temp: string) => {
    await copyVault(source, temp, [target])
    // Statuses are the run's, not the person's: the fork's traces say where it stands.
    await setStatuses(temp, await loadPlan(temp), cut.statuses, fsync)
    const ids = new Map<RunRecords, string>()
    const idOf = (run: RunRecords) => ids.get(run) ?? ids.set(run, newRunId()).get(run)!
    const started = new Date().toISOString()
    for (const [folder, { run, kept }] of cut.runs) {
      const header: TraceHeader = { ...run.header, run: idOf(run), format: TRACE_FORMAT, started, fork: { run: run.header.run, step } }
      // A subplan's run belongs to a visit of its note in the fork's run, which has a new id.
      if (run.parent) header.source = visitKey(idOf(run.parent.run), run.parent.node, run.parent.visit)
      await writeRun(join(temp, folder), header, run, run.entries.slice(0, kept), fsync)
    }
    await copyLedger(source, temp, trace.header.run, step, cut.last, fsync)
  }
  await intoPlace(target, fill, { fsync })
  return target
}

/** A vault's trace with what its entries' outputs need, starting at `header`; the final answer too when the run reached its terminal. */
async function writeRun(vault: string, header: TraceHeader, run: RunRecords, entries: TraceEntry[], fsync: boolean): Promise<void> {
  await writeTraceHeader(vault, header, { fsync })
  await appendFile(tracePaths(vault).trace, entries.map((entry) => entry.text).join(''))
  const files = entries.map(({ record }) => (record.kind === 'hop' ? record.output : outputFile(record.step, record.node)))
  const last = entries.at(-1)?.record
  if (last?.kind === 'hop' && last.next === null) files.push(FINAL_FILE)
  for (const file of files) {
    const from = await outputOf(run.from, file)
    if (!(await statOrNothing(from))?.isFile()) continue
    await copyFile(from, runFilePath(vault, `${TRACE_FOLDER}/${file}`))
  }
}

/**
 * Where an output named by a trace hop is read from: the trace is a file a
 * person may edit, so its `output` passes the path gate, inside the trace
 * folder `from` it belongs to.
 *
 * @throws {@link RunStateError} `trace-outside-vault` for an output that climbs out, is absolute or leads out through a symlink
 */
async function outputOf(from: string, file: string): Promise<string> {
  try {
    return (await confine(from, file, 'an output of the trace')).path
  } catch (error) {
    if (!(error instanceof PathRefusal)) throw error
    throw new RunStateError(
      'trace-outside-vault',
      `The trace in \`${from}\` names the output \`${file}\`, which is not a file of its own (${error.message}); restore the trace, then fork again.`,
      { path: join(from, file) },
      { cause: error },
    )
  }
}

/** Sets the status of every note of the fork's plan `graph` and of its subplans, `pending` where `wanted` says nothing. */
async function setStatuses(root: string, graph: PlanGraph, wanted: ForkCut['statuses'], fsync: boolean): Promise<void> {
  for (const { folder, vault: plan } of subplanTree(graph)) {
    const statuses = wanted.get(folder)
    for (const node of plan.nodes.values()) {
      const status = statuses?.get(node.id) ?? 'pending'
      if (node.status !== status) await updateStatus(join(root, folder), node.id, status, { fsync })
    }
  }
}

/**
 * The run of the top vault and, through the subplan notes of its plan, of
 * every subplan: for each visit a record counts (and the visit under way),
 * the run whose trace header names that visit as its source, in the folder
 * or among its archived runs.
 */
async function readRuns(source: string, header: TraceHeader): Promise<RunRecords> {
  const from = tracePaths(source).folder
  const top: RunRecords = { folder: '', from, header, entries: await entriesIn(from), subplans: new Map() }
  await addSubplans(top, source, await loadPlan(source))
  return top
}

/** Adds to `run` (of the vault `vault`, whose plan is `graph`) the subplan runs of its subplan notes' visits, theirs in turn. */
async function addSubplans(run: RunRecords, vault: string, graph: PlanGraph): Promise<void> {
  const visits = new Map<string, number>()
  const counted = new Set<string>()
  for (const { record } of run.entries) {
    visits.set(record.node, Math.max(visits.get(record.node) ?? 0, record.visit))
    if (record.works !== undefined) counted.add(`${record.node}\n${record.visit}`)
  }
  for (const node of graph.nodes.values()) if (node.plan) counted.add(`${node.id}\n${(visits.get(node.id) ?? 0) + 1}`)
  for (const visit of counted) {
    const [id, number] = visit.split('\n') as [string, string]
    const node = graph.nodes.get(id)
    if (!node?.plan) continue
    const found: RunRecords[] = []
    for (const { folder, outside } of subplanFoldersOf(node)) {
      const subplan = graph.subplans?.get(folder)
      if (outside || !subplan) continue
      const dir = join(vault, folder)
      const inner = await runOfVisit(dir, visitKey(run.header.run, id, Number(number)))
      if (!inner) continue
      const child: RunRecords = {
        folder: run.folder ? `${run.folder}/${folder}` : folder,
        ...inner,
        parent: { run, node: id, visit: Number(number) },
        subplans: new Map(),
      }
      await addSubplans(child, dir, subplan)
      found.push(child)
    }
    if (found.length > 0) run.subplans.set(visit, found)
  }
}

/** The run of a subplan folder that belongs to the visit `key`: the one in place, or an archived one (an earlier visit's). */
async function runOfVisit(dir: string, key: string): Promise<Pick<RunRecords, 'from' | 'header' | 'entries'> | undefined> {
  const folder = tracePaths(dir).folder
  const archive = join(folder, ARCHIVE_FOLDER)
  const archived = (await readdir(archive).catch(() => [] as string[])).map((name) => join(archive, name))
  for (const from of [folder, ...archived]) {
    const text = await readFile(join(from, TRACE_FILE), 'utf8').catch(() => undefined)
    if (text === undefined) continue
    let header: TraceHeader
    try {
      header = parseTrace(dir, text).trace.header
    } catch {
      continue
    }
    if (header.source === key) return { from, header, entries: withoutStops(entriesOf(text)) }
  }
  return undefined
}

/** The entries of the trace in a trace folder. */
async function entriesIn(folder: string): Promise<TraceEntry[]> {
  return withoutStops(entriesOf(await readFile(join(folder, TRACE_FILE), 'utf8')))
}

/** Budget stops are left out: the fork checks its budgets again as it goes. */
function withoutStops(entries: TraceEntry[]): TraceEntry[] {
  return entries.filter(({ record }) => record.kind !== 'stop')
}

/** The complete entries of a trace (or ledger), each with the text that renders it and its record. */
function entriesOf(text: string): TraceEntry[] {
  const start = text.indexOf('\n## ')
  if (start === -1) return []
  const found: TraceEntry[] = []
  let from = start
  let at = start
  for (;;) {
    const end = text.indexOf('\n', at + 1)
    const line = text.slice(at + 1, end === -1 ? text.length : end)
    const marker = MARKER.exec(line)
    if (marker) {
      try {
        found.push({ text: text.slice(from, end === -1 ? text.length : end + 1), record: JSON.parse(marker[1]!) as TraceRecord })
      } catch {
        // a torn entry is left behind
      }
      from = end === -1 ? text.length : end + 1
    }
    if (end === -1) break
    at = end
  }
  return found
}

/** The ledger up to the fork's step: entries of earlier runs, and of this run up to the step (by time when one has no step). */
async function copyLedger(source: string, target: string, run: string, step: number, last: TraceRecord | undefined, fsync: boolean): Promise<void> {
  const text = await readFile(join(source, LEDGER_FILE), 'utf8').catch(() => undefined)
  if (text === undefined) return
  const first = text.indexOf('\n## ')
  const head = first === -1 ? text : text.slice(0, first)
  const cutoff = last?.at
  const kept = entriesOf(text).filter(({ record }) => {
    const entry = record as { run?: string; step?: number; at?: string }
    if (entry.run !== run) return true
    if (entry.step !== undefined) return entry.step <= step
    return cutoff !== undefined && entry.at !== undefined && entry.at <= cutoff
  })
  await writeFileAtomic(join(target, LEDGER_FILE), head + kept.map((entry) => entry.text).join(''), { fsync })
}
