import { appendFile, copyFile, mkdir, readFile, readdir, stat } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { RunStateError } from '../core/errors.js'
import { assertFolder, writeFileAtomic } from '../vault/fs-atomic.js'
import { LEDGER_FILE } from '../vault/run-folder.js'
import { loadPlan } from '../plan/load-plan.js'
import { updateStatus } from '../vault/update-status.js'
import { newRunId } from './run-id.js'
import { copyVault, intoPlace } from './run-vault.js'
import { outputFile, readTrace, TRACE_FORMAT, tracePaths, writeTraceHeader, type TraceRecord } from './trace.js'

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
 * @returns the fork's path
 * @throws {TypeError} when `step` is not a step of the source run (0 up to its last)
 * @throws {RunStateError} `no-run` when the source holds no run; `run-vault-not-empty` when `into` holds anything
 */
export async function forkRun(vault: string, options: ForkOptions): Promise<string> {
  if (!options || typeof options.into !== 'string' || options.into === '')
    throw new TypeError(`Expected \`into\` to be a folder path, got \`${String(options?.into)}\``)
  const source = resolve(vault)
  await assertFolder(source, vault)
  const trace = await readTrace(source)
  if (!trace) throw new RunStateError('no-run', `\`${vault}\` holds no run to fork (no \`00_plan-trace/trace.md\`); run it first.`, { vault })
  const steps = trace.records.reduce((most, record) => Math.max(most, record.step), 0)
  const { step } = options
  if (!Number.isInteger(step) || step < 0 || step > steps)
    throw new TypeError(`Expected \`step\` to be an integer from 0 to ${steps} (the steps of run \`${trace.header.run}\`), got \`${String(step)}\``)
  const target = resolve(options.into)
  const entries = await readdir(target).catch(() => [] as string[])
  if (entries.length > 0)
    throw new RunStateError('run-vault-not-empty', `\`${options.into}\` is not empty; fork into a new or empty folder.`, { folder: options.into })
  const fsync = options.fsync ?? true
  const text = await readFile(tracePaths(source).trace, 'utf8')
  // Budget stops are left out: the fork checks its budgets again as it goes.
  const kept = entriesOf(text).filter(({ record }) => record.kind !== 'stop' && record.step <= step)
  const last = kept.at(-1)?.record
  const fill = async (temp: string) => {
    await copyVault(source, temp, [target])
    // Statuses are the run's, not the person's: the fork's trace says where it stands.
    const graph = await loadPlan(temp)
    for (const node of graph.nodes.values()) {
      const wanted = last?.kind === 'waiting' && last.node === node.id ? 'waiting' : 'pending'
      if (node.status !== wanted) await updateStatus(temp, node.id, wanted, { fsync })
    }
    const header = { ...trace.header, run: newRunId(), format: TRACE_FORMAT, started: new Date().toISOString(), fork: { run: trace.header.run, step } }
    await writeTraceHeader(temp, header, { fsync })
    await appendFile(tracePaths(temp).trace, kept.map((entry) => entry.text).join(''))
    for (const { record } of kept) {
      const file = record.kind === 'hop' ? record.output : outputFile(record.step, record.node)
      const from = join(tracePaths(source).folder, file)
      if (!(await stat(from).catch(() => undefined))?.isFile()) continue
      await mkdir(dirname(join(tracePaths(temp).folder, file)), { recursive: true })
      await copyFile(from, join(tracePaths(temp).folder, file))
    }
    await copyLedger(source, temp, trace.header.run, step, last, fsync)
  }
  await intoPlace(target, fill, { fsync })
  return target
}

/** The complete entries of a trace (or ledger), each with the text that renders it and its record. */
function entriesOf(text: string): { text: string; record: TraceRecord }[] {
  const start = text.indexOf('\n## ')
  if (start === -1) return []
  const found: { text: string; record: TraceRecord }[] = []
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
