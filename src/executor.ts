import { randomBytes } from 'node:crypto'
import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { RunStateError, StepError } from './errors.js'
import { removeStaleTempFiles } from './fs-atomic.js'
import { createLLM, ModelConfigError } from './llm-client.js'
import { lockVault, type VaultLock } from './lock.js'
import { edgeOrigins, type PlanGraph } from './plan-graph.js'
import { checkOptions, DEFAULTS, type RunOptions, type RunResult } from './run-options.js'
import { prepareRunVault } from './run-vault.js'
import {
  archiveTrace,
  findOutputOfStep,
  outputFile,
  readOutput,
  readTrace,
  TRACE_FORMAT,
  tracePaths,
  writeFinal,
  writeOutput,
  writeTraceHeader,
  type HopRecord,
  type TraceRecord,
  TraceAppender,
} from './trace.js'
import { chooseEdge } from './transitions.js'
import type { CallLLM, PlanNode, Predicate, RunEvent, StepInput, StepOutput } from './types.js'
import { loopOf } from './validate.js'
import { VaultSession } from './vault-session.js'
import { createWorker } from './worker.js'

/**
 * Runs a plan: validates it (no model is called for an invalid plan), then
 * walks it from the start node, hop by hop: the node becomes `active`, the
 * worker works it, it becomes `done`, and the transition is judged
 * (predicates, then one YES/NO LLM call, then the unconditional edge, then
 * work again). Every hop is appended to `00_plan-trace/trace.md`. Running
 * the same vault again resumes where it stopped.
 *
 * @param plan - a vault folder, or an in-memory graph (written to a run vault first)
 * @throws {PlanValidationError} when the plan (or an edit made mid-run) is invalid
 * @throws {StepError} when the worker fails; the vault stays resumable
 * @throws {RunStateError} when the vault's state needs a person (two `active` notes, a lock held by another run, ...)
 */
export async function runPlan(plan: string | PlanGraph, options: RunOptions): Promise<RunResult> {
  checkOptions(plan, options)
  const fsync = options.fsync ?? DEFAULTS.fsync
  const vaultOptions: { query: string; fsync: boolean; runVault?: string } = { query: options.query, fsync }
  if (options.runVault !== undefined) vaultOptions.runVault = options.runVault
  const vault = await prepareRunVault(plan, vaultOptions)
  const lock = await lockVault(vault)
  let session: VaultSession | undefined
  let walk: Walk | undefined
  try {
    const sessionOptions: { fsync: boolean; tools?: string[] } = { fsync }
    if (options.tools) sessionOptions.tools = options.tools.map((tool) => tool.name)
    session = await VaultSession.open(vault, sessionOptions)
    await removeStaleTempFilesIn(vault, session)
    const degraded = typeof plan === 'string' ? undefined : plan.degraded
    walk = new Walk(vault, session, lock, options, fsync, degraded)
    return await walk.run()
  } finally {
    await walk?.close()
    session?.close()
    await lock.release()
  }
}

/** The next thing a walk does. `checked`: the note was read again this hop, only watcher reports need a look. */
type Action = { kind: 'enter'; node: string } | { kind: 'judge'; node: string; visit: number; step: number; output: string; file: string; checked?: boolean }

/** One call of `runPlan` on one vault. */
class Walk {
  private runId = ''
  private steps = 0
  private readonly visits = new Map<string, number>()
  private readonly outputs: StepOutput[] = []
  private lastNode = ''
  private lastOutput = ''
  private lastRecord: TraceRecord | undefined
  private lastHop: HopRecord | undefined
  private readonly maxSteps: number
  private readonly work: (step: StepInput) => Promise<string>
  private llm: CallLLM | undefined
  private appender: TraceAppender | undefined

  constructor(
    private readonly vault: string,
    private readonly session: VaultSession,
    private readonly lock: VaultLock,
    private readonly options: RunOptions,
    private readonly fsync: boolean,
    private degraded: string | undefined,
  ) {
    this.maxSteps = options.maxSteps ?? DEFAULTS.maxSteps
    this.llm = options.llm
    const workerOptions = options.tools ? { tools: options.tools } : {}
    this.work = options.work ?? createWorker((prompt, callOptions) => this.model()(prompt, callOptions), workerOptions)
  }

  /** Closes the trace. */
  async close(): Promise<void> {
    await this.appender?.close()
  }

  private get graph(): PlanGraph {
    return this.session.graph
  }

  async run(): Promise<RunResult> {
    this.session.validate()
    let trace = await readTrace(this.vault)
    const fresh = this.options.fresh ?? DEFAULTS.fresh
    let active = this.nodesWithStatus('active')
    if (!fresh && active.length > 1) {
      throw new RunStateError(
        'two-active',
        `Two notes are \`status: active\` (${active.map((node) => `\`${node.file ?? node.id}\``).join(', ')}); a run is at one node at a time. Set all but one to \`done\` or \`pending\`, then run again.`,
      )
    }
    if (fresh) {
      if (trace) await archiveTrace(this.vault, trace.header.run)
      trace = undefined
      for (const node of this.graph.nodes.values()) if (node.status !== 'pending') await this.session.setStatus(node.id, 'pending')
      active = []
    }
    if (trace) {
      this.runId = trace.header.run
      this.degraded ??= trace.header.degraded
      await this.restore(trace.records)
    } else {
      this.runId = newRunId()
      const header: Parameters<typeof writeTraceHeader>[1] = { run: this.runId, format: TRACE_FORMAT, query: this.options.query, started: new Date().toISOString() }
      if (this.degraded !== undefined) header.degraded = this.degraded
      await writeTraceHeader(this.vault, header, { fsync: this.fsync })
    }
    this.emit({ type: 'start', runId: this.runId, resumed: trace !== undefined })
    const first = await this.resumePoint(active[0])
    return 'status' in first ? first : this.loop(first)
  }

  /** Rebuilds counters and outputs from the trace: budgets hold across restarts. */
  private async restore(records: TraceRecord[]): Promise<void> {
    // A human node's visit is recorded twice: when it starts waiting and when the person decides.
    const waited = new Set<string>()
    for (const record of records) {
      this.steps = Math.max(this.steps, record.step)
      if (record.kind === 'stop') continue
      this.visits.set(record.node, Math.max(this.visits.get(record.node) ?? 0, record.visit))
      const visitKey = `${record.node}\n${record.visit}`
      const saved = await readOutput(this.vault, record.kind === 'hop' ? record.output : outputFile(record.step, record.node))
      const output = saved?.output ?? ''
      if (!waited.has(visitKey)) this.outputs.push({ node: record.node, visit: record.visit, output })
      if (record.kind === 'waiting') waited.add(visitKey)
      else {
        this.lastHop = record
        if (record.feedback) this.outputs.push({ node: record.node, visit: record.visit, output: record.feedback })
      }
      this.lastNode = record.node
      this.lastOutput = output
    }
    this.lastRecord = records.at(-1)
  }

  /** Where a run continues (SPEC section 4, "Resume"). */
  private async resumePoint(active: PlanNode | undefined): Promise<Action | RunResult> {
    if (active) return { kind: 'enter', node: active.id }
    const pending = await findOutputOfStep(this.vault, this.steps + 1)
    const saved = pending ? await readOutput(this.vault, pending) : undefined
    if (pending && saved && saved.run === this.runId && this.graph.nodes.has(saved.node)) {
      this.steps = saved.step
      this.visits.set(saved.node, saved.visit)
      this.lastNode = saved.node
      this.lastOutput = saved.output
      return { kind: 'judge', node: saved.node, visit: saved.visit, step: saved.step, output: saved.output, file: pending }
    }
    const last = this.lastRecord
    if (!last) return { kind: 'enter', node: this.graph.startNode().id }
    if (last.kind === 'stop') return { kind: 'enter', node: last.node }
    if (last.kind === 'waiting') return this.humanDecision(last.node, last.visit, last.step)
    if (last.next === null) return this.recordedResult(last)
    return { kind: 'enter', node: last.next }
  }

  private async loop(first: Action): Promise<RunResult> {
    let action = first
    for (;;) {
      this.lock.check()
      this.options.signal?.throwIfAborted()
      const next = action.kind === 'enter' ? await this.enter(action.node) : await this.judge(action)
      if ('status' in next) return next
      action = next
    }
  }

  /** Enters a node as a new visit (or the interrupted one), works it and saves the output. */
  private async enter(id: string): Promise<Action | RunResult> {
    await this.session.refresh([id])
    const node = this.nodeOrFail(id)
    const visit = (this.visits.get(id) ?? 0) + 1
    if (visit > node.maxVisits) return this.stop(node, visit, 'max_visits')
    if (this.steps >= this.maxSteps) return this.stop(node, visit, 'maxSteps')
    const step = this.steps + 1
    this.emit({ type: 'enter', node: id, visit, step })
    if (node.status !== 'active') await this.session.setStatus(id, 'active', { justRefreshed: true })
    const key = `${this.runId}:${id}:${visit}`
    const input: StepInput = { node, query: this.options.query, visit, step, outputs: this.outputs.slice(), key }
    if (this.options.signal) input.signal = this.options.signal
    let output: string
    try {
      output = await this.work(input)
    } catch (error) {
      if (this.options.signal?.aborted) throw this.options.signal.reason
      // No model configured is not this step's failure: say what to set.
      if (error instanceof ModelConfigError) throw error
      throw new StepError(id, visit, error)
    }
    if (typeof output !== 'string') throw new StepError(id, visit, new TypeError(`Expected the worker to return a string, got \`${typeof output}\``))
    const file = outputFile(step, id)
    await writeOutput(this.vault, file, { run: this.runId, step, node: id, visit }, output, { fsync: this.fsync })
    this.steps = step
    this.visits.set(id, visit)
    this.lastNode = id
    this.lastOutput = output
    this.emit({ type: 'work', node: id, visit, output })
    await this.session.setStatus(id, 'done')
    return { kind: 'judge', node: id, visit, step, output, file, checked: true }
  }

  /** Judges the transition of a worked visit and records the hop. */
  private async judge(action: Extract<Action, { kind: 'judge' }>): Promise<Action | RunResult> {
    const { node: id, visit, step, output, file } = action
    // Writing `done` just compared the note with what we knew, and read it again if a person had edited it.
    await this.session.refresh(action.checked ? [] : [id])
    const node = this.nodeOrFail(id)
    const context = { query: this.options.query, node, visit, step, output, outputs: this.outputs.slice() }
    this.outputs.push({ node: id, visit, output })
    if (node.edges.length > 0 && node.judge === 'human') {
      await this.session.emptyBoxes(id)
      await this.session.setStatus(id, 'waiting')
      return this.humanDecision(id, visit, step)
    }
    const chooseOptions: { predicates?: Record<string, Predicate>; signal?: AbortSignal } = {}
    if (this.options.predicates) chooseOptions.predicates = this.options.predicates
    if (this.options.signal) chooseOptions.signal = this.options.signal
    const needsModel = node.edges.some((edge) => edge.conditional)
    const decision = await chooseEdge(node, context, needsModel ? this.model() : undefined, chooseOptions)
    const record: HopRecord = { kind: 'hop', step, node: id, visit, edge: decision.edge, decidedBy: decision.decidedBy, next: decision.edge?.target ?? (decision.decidedBy === 'terminal' ? null : id), output: file }
    await this.record(record, decision.rationale)
    this.emit({ type: 'transition', node: id, visit, step, edge: decision.edge, decidedBy: decision.decidedBy, rationale: decision.rationale })
    if (record.next === null) {
      await writeFinal(this.vault, id, output, { fsync: this.fsync })
      this.emit({ type: 'end', node: id })
      return this.result('completed', output)
    }
    return { kind: 'enter', node: record.next }
  }

  /** A `judge: human` node: follow the one ticked box, or keep waiting. */
  private async humanDecision(id: string, visit: number, step: number): Promise<Action | RunResult> {
    await this.session.refresh([id])
    const node = this.nodeOrFail(id)
    const ticked = node.edges.filter((edge) => edgeOrigins.get(edge)?.checked === true)
    if (ticked.length > 1) {
      throw new RunStateError(
        'ambiguous-decision',
        `\`${node.file ?? id}\` has ${ticked.length} boxes ticked (${ticked.map((edge) => `\`${edge.label || 'next'} -> [[${edge.target}]]\``).join(', ')}); tick exactly one, then run the vault again.`,
      )
    }
    const edge = ticked[0]
    if (!edge) {
      if (this.lastRecord?.kind !== 'waiting' || this.lastRecord.node !== id || this.lastRecord.visit !== visit) {
        await this.record({ kind: 'waiting', step, node: id, visit }, '')
      }
      const reason = `\`${id}\` waits for a person: tick one box under \`## Next\` in \`${node.file ?? `${id}.md`}\` (and write under \`## Feedback\` if you like), then run the vault again.`
      this.emit({ type: 'waiting', node: id, reason })
      return this.result('waiting', this.lastOutput, reason)
    }
    const feedback = this.session.feedbackOf(id)
    const record: HopRecord = { kind: 'hop', step, node: id, visit, edge, decidedBy: 'human', next: edge.target, output: outputFile(step, id) }
    if (feedback) record.feedback = feedback
    const rationale = feedback ? `Feedback:\n${feedback}` : 'A person ticked this edge.'
    await this.record(record, rationale)
    if (feedback) this.outputs.push({ node: id, visit, output: feedback })
    await this.session.emptyBoxes(id)
    await this.session.setStatus(id, 'done')
    this.emit({ type: 'transition', node: id, visit, step, edge, decidedBy: 'human', rationale })
    return { kind: 'enter', node: edge.target }
  }

  private async stop(node: PlanNode, visit: number, budget: 'max_visits' | 'maxSteps'): Promise<RunResult> {
    const loop = loopOf(this.graph, node.id)
    // A node with no condition holding works again without an edge to itself: a loop the graph does not show.
    const reworking = this.lastHop?.node === node.id && this.lastHop.decidedBy === 'rework'
    const where = reworking
      ? 'It was working itself again: no condition held.'
      : loop.length > 0
        ? `It sits in the loop ${[...loop, loop[0]].map((id) => `\`${id}\``).join(' -> ')}.`
        : 'It is not in a loop.'
    const file = node.file ?? `${node.id}.md`
    const reason =
      budget === 'max_visits'
        ? `Budget stop: \`${node.id}\` was refused visit ${visit}; its budget is max_visits ${node.maxVisits} and it has been visited ${visit - 1} time${visit === 2 ? '' : 's'}. ${where} Raise \`max_visits\` in \`${file}\` (or change the plan), then run the vault again to go on.`
        : `Budget stop: the run used its maxSteps budget of ${this.maxSteps} steps before entering \`${node.id}\` (visit ${visit}). ${where} Pass a larger \`maxSteps\` and run the vault again to go on.`
    const last = this.lastRecord
    const repeated = last?.kind === 'stop' && last.node === node.id && last.budget === budget && last.step === this.steps && last.visit === visit
    if (!repeated) await this.record({ kind: 'stop', step: this.steps, node: node.id, visit, budget, reason }, reason)
    this.emit({ type: 'stop', node: node.id, reason })
    return this.result('stopped', this.lastOutput, reason)
  }

  /** The result of a run that already reached its terminal: nothing is worked again. */
  private async recordedResult(last: HopRecord): Promise<RunResult> {
    const saved = await readOutput(this.vault, last.output)
    const output = saved?.output ?? this.lastOutput
    const final = tracePaths(this.vault).final
    if (!(await stat(final).catch(() => undefined))) await writeFinal(this.vault, last.node, output, { fsync: this.fsync })
    this.emit({ type: 'end', node: last.node })
    return this.result('completed', output)
  }

  private async record(record: TraceRecord, rationale: string): Promise<void> {
    this.lock.check()
    this.appender ??= await TraceAppender.open(this.vault, { fsync: this.fsync })
    await this.appender.append(record, rationale)
    this.lastRecord = record
    if (record.kind === 'hop') this.lastHop = record
  }

  private result(status: RunResult['status'], output: string, reason?: string): RunResult {
    const result: RunResult = { status, output, steps: this.steps, visits: Object.fromEntries(this.visits), lastNode: this.lastNode, runVault: this.vault }
    if (reason !== undefined) result.reason = reason
    if (this.degraded !== undefined) result.degraded = this.degraded
    return result
  }

  private nodeOrFail(id: string): PlanNode {
    const node = this.graph.nodes.get(id)
    if (!node) throw new RunStateError('node-missing', `The run is at \`${id}\`, but the vault has no such note any more. Restore it, or set another note \`status: active\` to move the run there.`)
    return node
  }

  private nodesWithStatus(status: PlanNode['status']): PlanNode[] {
    return [...this.graph.nodes.values()].filter((node) => node.status === status)
  }

  private model(): CallLLM {
    this.llm ??= createLLM()
    return this.llm
  }

  private emit(event: RunEvent): void {
    this.options.onEvent?.(event)
  }
}

function newRunId(now = new Date()): string {
  const stamp = now.toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
  return `${stamp}-${randomBytes(3).toString('hex')}`
}

async function removeStaleTempFilesIn(vault: string, session: VaultSession): Promise<void> {
  const folders = new Set([vault, tracePaths(vault).folder, tracePaths(vault).outputs])
  for (const node of session.graph.nodes.values()) if (node.file?.includes('/')) folders.add(join(vault, node.file.slice(0, node.file.lastIndexOf('/'))))
  await Promise.all([...folders].map((folder) => removeStaleTempFiles(folder)))
}

