import { RunStateError } from '../../core/errors.js'
import type { VaultLock } from '../../vault/lock.js'
import { openRun } from './run-open.js'
import { pendingOutput } from '../read/run-outputs.js'
import { blockedStep, toRunResult } from '../core/steps.js'
import { checkChoice, staleStep, twoActiveReason } from '../core/messages.js'
import { checkJudgeModel } from './run-models.js'
import { tell } from './events.js'
import { stopOf } from '../core/stops.js'
import { claimKey, highestNumber, locate, nextStepNumber, notesOf, visitKey, type BudgetEntry, type Position, type Replay } from '../core/run-core.js'
import { checkOwnClaim, passedBy } from '../core/claims.js'
import { timeoutHop, waitClock } from '../core/deadline.js'
import type { DriverOptions, DriverStep, RunResult, Step } from '../core/run-options.js'
import { outputFile, tracePaths, type ClaimRecord, type HopRecord, type Trace, type TraceRecord } from '../../store/trace.js'
import type { OutputMeta } from '../../store/output-note.js'
import { waitsForPerson } from '../../core/knobs.js'
import { effectsOf } from '../core/hop-effects.js'
import type { VaultSession } from '../../store/vault-session.js'
import { HopWriter } from './hop-writer.js'
import { claimVisit, type DriverParts } from './claim-visit.js'
import { runStateOf, type RunState } from './run-state.js'
import { verdictOf, verdictSaved } from './verdict.js'
import type { ModelUsage } from '../../core/types.js'
import { statOrNothing } from '../../vault/stat-or-nothing.js'

/*
 * A run on one locked vault, step by step: where the run stands (the pure
 * `locate`) and what the caller gets next, a visit to work, a person to wait
 * for, a stop or the result. Judging a hop and performing its writes is
 * `HopWriter`'s (hop-writer.ts).
 */

/**
 * The effects of a run on one locked vault: it asks the pure core
 * (`locate`) where the run stands and performs what it answers (claims,
 * outputs, statuses, judgments, trace records). `runPlan` and the stepping
 * calls are thin loops over `next` and `complete`.
 */
export class RunDriver {
  /** What the driver knows of its run, shared with its hop writer. */
  private readonly run: RunState
  /** Judges a hop and performs the run's writes. */
  private readonly hops: HopWriter
  /** What the claim of a visit works with. */
  private readonly parts: DriverParts

  private constructor(
    readonly vault: string,
    private readonly session: VaultSession,
    lock: VaultLock,
    private readonly options: DriverOptions,
    trace: Trace | undefined,
    outputs: Map<string, string>,
  ) {
    this.run = runStateOf(trace, outputs, options)
    this.hops = new HopWriter(vault, session, lock, options, this.run)
    this.parts = { session, options, run: this.run, hops: this.hops }
  }

  /**
   * Reads the run of a locked vault: validates the plan, applies `fresh`,
   * the query policy (a resumed run keeps its recorded query) and replays the trace.
   *
   * @throws {@link PlanValidationError} when the plan is invalid
   * @throws {@link RunStateError} `query-mismatch` for another query than the recorded one
   * @throws `TypeError` for a new run without a query
   */
  static async open(vault: string, session: VaultSession, lock: VaultLock, options: DriverOptions): Promise<RunDriver> {
    const { trace, outputs, reader } = await openRun(vault, session, options)
    const driver = new RunDriver(vault, session, lock, options, trace, outputs)
    if (trace) driver.run.pending = await pendingOutput(vault, driver.run.state.lastStep, reader, trace.claims)
    return driver
  }

  /**
   * A person's decision is recorded before its boxes are cleared and its note
   * set `done` (so a tick is never lost): a kill in between leaves the note
   * waiting and ticked after its hop. Finish that first.
   */
  private async finishDecision(): Promise<void> {
    const last = this.run.state.lastRecord
    if (last?.kind !== 'hop' || (last.decidedBy !== 'human' && last.decidedBy !== 'timeout')) return
    await this.hops.perform(effectsOf(undefined, last, { type: 'recover', status: this.session.graph.nodes.get(last.node)?.status }))
  }

  /** Says the run starts or resumes (`start` event); a new run says it at its first claim. */
  begin(): void {
    if (this.run.traced) tell(this.options.onEvent, { type: 'start', runId: this.run.runId, resumed: true })
  }

  /** The highest step number this vault recorded, or saved an output with that is not recorded yet. */
  get highestStep(): number {
    return Math.max(highestNumber(this.run.state), this.run.pending?.step ?? 0)
  }

  /** Counts a model call of the hop under way (the worker's), for its trace record. */
  noteUsage(usage: ModelUsage): void {
    this.hops.noteUsage(usage)
  }

  /** What this vault's trace says of the step budget: its latest entry that says one, and the one the run started with. */
  get budgetRecorded(): { entries: BudgetEntry[]; started: number | undefined } {
    return { entries: this.run.state.budget ? [this.run.state.budget] : [], started: this.run.startedWith }
  }

  /** What the run has done, as replayed and recorded so far (read only). */
  get replayed(): Readonly<Replay> {
    return this.run.state
  }

  /**
   * Goes on until the caller has something to do: a visit to work (claimed:
   * `active` on disk), a person to wait for, a budget stop or the result.
   * A saved output is judged and a ticked box followed on the way.
   */
  async next(): Promise<DriverStep> {
    await this.hops.enter()
    try {
      const step = await this.walk()
      // The note says `active` before its visit is handed out (to a worker, an agent, a person watching the note).
      if (step.kind === 'work') await this.hops.show(step.node.id)
      await this.hops.settle(step.kind !== 'work')
      return step
    } finally {
      this.hops.leave()
    }
  }

  private async walk(): Promise<DriverStep> {
    await this.finishDecision()
    for (;;) {
      this.options.signal?.throwIfAborted()
      const position = this.position()
      switch (position.kind) {
        case 'two-active':
          throw new RunStateError('two-active', twoActiveReason(position.nodes.map((id) => this.hops.fileOf(id))), { nodes: position.nodes })
        case 'no-start':
          this.session.graph.startNode()
          throw new RunStateError('no-start', 'The plan has no start node.', { vault: this.vault })
        case 'work':
          return this.passedBy(position) ?? claimVisit(this.parts, position)
        case 'blocked': {
          const waiting = await this.blockedWait(position)
          if (waiting) return waiting
          break
        }
        case 'judge': {
          const { saved } = position
          // Cut short between saving the output and writing `done`: finish that first.
          await this.session.refresh([position.node])
          await this.hops.perform(
            effectsOf(position, this.run.state.lastRecord, { type: 'recover', status: this.session.graph.nodes.get(position.node)?.status }),
          )
          await this.hops.judge(position.node, saved.visit, saved.step, saved.output, saved.file, saved.choice, false, saved.works, verdictSaved(saved))
          break
        }
        case 'decide': {
          const waiting = await this.hops.humanDecision(position.node, position.visit, position.step)
          if (waiting) return waiting
          break
        }
        case 'completed':
          return this.recordedResult(position.hop)
        case 'stopped':
          return this.stop(position)
      }
    }
  }

  /**
   * Completes the claimed visit whose key is `key`: saves the output (and
   * the choice) together, marks the note `done`, judges the transition
   * (predicates, the caller's choice, the LLM, the unconditional edge,
   * rework), records the hop, and goes on to the next step.
   *
   * @throws {@link RunStateError} `stale-step` for any other key, `bad-choice` for a choice outside the step's conditions; nothing is written then
   * @throws {@link ModelConfigError} when conditions remain, no choice is given and no model is configured; nothing is written then
   */
  async complete(
    key: string,
    result: { output: string; choice?: string | undefined; works?: number; step?: number; failure?: string | undefined },
  ): Promise<DriverStep> {
    await this.hops.enter()
    const position = this.position()
    const claimed = position.kind === 'work' && position.claimed ? position : undefined
    // A completion cut short after its output was saved is finished by judging what was saved.
    if (position.kind === 'judge' && visitKey(this.run.runId, position.node, position.visit) === key) return this.next()
    const renamed =
      claimed && this.session.held.renamedInto(key, this.run.runId, this.hops.nodeOrFail(claimed.node).file ?? `${claimed.node}.md`, this.session.graph) // a note renamed since its step was handed out
    if (!claimed || (visitKey(this.run.runId, claimed.node, claimed.visit) !== key && !renamed)) {
      throw staleStep(
        this.vault,
        key,
        claimed ? { key: visitKey(this.run.runId, claimed.node, claimed.visit), node: claimed.node, visit: claimed.visit, step: claimed.step } : null,
      )
    }
    checkOwnClaim(key, this.run.state.claims.get(claimKey(claimed.node, claimed.visit)), this.options.agent?.name, Date.now())
    // No refresh here: an edit that breaks the plan during the work must not cost the work (the judge refreshes).
    const node = this.hops.nodeOrFail(claimed.node)
    const choice = result.choice
    if (typeof result.output !== 'string') throw new TypeError(`Expected \`output\` to be a string, got \`${typeof result.output}\``)
    const human = waitsForPerson(node)
    if (choice !== undefined && !human) checkChoice(node, choice, this.options.predicates)
    if (choice === undefined && !human && !this.options.llm) checkJudgeModel(node, this.options.predicates)
    // A subplan note's hop has the step of its subplans' last work; a visit claimed in this call, the number it was given;
    // a note renamed since its claim, the number the trace gave it under its old name.
    const before = renamed ? [...this.run.state.claims.values()].find((claim) => visitKey(this.run.runId, claim.node, claim.visit) === key) : undefined
    const step =
      result.step ?? (this.run.claim?.node === node.id && this.run.claim.visit === claimed.visit ? this.run.claim.step : (before?.step ?? claimed.step))
    const file = outputFile(step, node.id)
    const meta: OutputMeta = { run: this.run.runId, step, node: node.id, visit: claimed.visit }
    if (choice !== undefined && !human) meta.choice = choice
    // Saved with the output too: a crash before the hop is recorded must not lose what the subplans did.
    if (result.works !== undefined) meta.works = result.works
    // The checks run after the work and before anything says it was worked: a crash during one works the visit again.
    const verdict = await verdictOf(node, result, this.options, this.hops)
    if (verdict.outcome) meta.outcome = verdict.outcome
    const output = verdict.output
    // One flush with fsync: the output's bytes, journaled with the notes this hop may rewrite (VaultSession.saveOutput); then `done`.
    const followed = await this.hops.perform(
      effectsOf(position, this.run.state.lastRecord, { type: 'worked', node: node.id, file, meta, output }),
      (effect) => {
        if (effect.kind === 'output') tell(this.options.onEvent, { type: 'work', node: node.id, visit: claimed.visit, output })
      },
    )
    // The note may have been renamed during the work: the hop is recorded under the name it has now.
    const id = followed.get(node.id) ?? node.id
    await this.hops.judge(id, claimed.visit, step, output, file, meta.choice, true, meta.works, verdict)
    return this.next()
  }

  /**
   * Lets go of the claimed visit whose key is `key` (docs/stepping.md, several agents): `defer`
   * leaves it `pending`, to be worked later, the same visit and step;
   * `block` hands it to a person (`waiting` until unblocked). The trace
   * records who and why. Resolves to the step that follows, as `next` does.
   *
   * @throws {@link RunStateError} `stale-step` when no claimed visit has that key (nothing is written)
   */
  async release(key: string, kind: 'defer' | 'block', reason: string): Promise<DriverStep> {
    await this.hops.enter()
    const position = this.position()
    const claimed = position.kind === 'work' && position.claimed ? position : undefined
    if (!claimed || visitKey(this.run.runId, claimed.node, claimed.visit) !== key)
      throw staleStep(
        this.vault,
        key,
        claimed ? { key: visitKey(this.run.runId, claimed.node, claimed.visit), node: claimed.node, visit: claimed.visit, step: claimed.step } : null,
      )
    checkOwnClaim(key, this.run.state.claims.get(claimKey(claimed.node, claimed.visit)), this.options.agent?.name, Date.now())
    const record: ClaimRecord = { kind, step: claimed.step, node: claimed.node, visit: claimed.visit, at: new Date().toISOString(), reason }
    if (this.options.agent) record.agent = this.options.agent.name
    await this.hops.perform(effectsOf(position, this.run.state.lastRecord, { type: 'released', record }))
    this.run.claim = undefined
    tell(this.options.onEvent, { type: 'waiting', node: claimed.node, reason: `${kind === 'block' ? 'Blocked' : 'Deferred'}: ${reason}` })
    return this.next()
  }

  /** A visit the gate passes by (another agent holds it, or it was deferred and other work is ready): `busy`. */
  private passedBy(position: Extract<Position, { kind: 'work' }>): Step | undefined {
    const node = this.hops.nodeOrFail(position.node)
    if (!this.options.gate || this.options.runsSubplans?.(node)) return undefined
    const record = this.run.state.claims.get(claimKey(node.id, position.visit))
    const at = {
      plan: this.options.folder ?? '',
      key: visitKey(this.run.runId, node.id, position.visit),
      node,
      visit: position.visit,
      claimed: position.claimed,
      record,
    }
    return this.options.gate(at) === 'take' ? undefined : passedBy(this.run.runId, { ...position, node: node.id }, record)
  }

  /** A blocked visit: past its `wait:` deadline with a `timeout` edge the wait ends (recorded), else it waits to be unblocked. */
  private async blockedWait(position: Extract<Position, { kind: 'blocked' }>): Promise<Step | undefined> {
    await this.session.refresh([position.node])
    const node = this.hops.nodeOrFail(position.node)
    const since = position.block.at
    const now = Date.now()
    const timeout = since === undefined ? undefined : timeoutHop(node, { ...position, since }, now)
    if (timeout) {
      const rationale = `Nobody unblocked it within \`wait: ${node.wait}\` (blocked since ${since}).`
      await this.hops.perform(effectsOf(undefined, this.run.state.lastRecord, { type: 'decided', record: timeout, rationale, output: '', handed: '' }))
      tell(this.options.onEvent, {
        type: 'transition',
        node: node.id,
        visit: position.visit,
        step: position.step,
        edge: timeout.edge,
        decidedBy: 'timeout',
        rationale,
      })
      return undefined
    }
    await this.hops.settle(true)
    const step = blockedStep(this.run.runId, node, this.hops.fileOf(node.id), position.block, since === undefined ? undefined : waitClock(node, since, now))
    tell(this.options.onEvent, { type: 'waiting', node: node.id, reason: step.reason })
    return step
  }

  /**
   * Stops the run at the claimed visit of a note that runs subplans when the
   * budget refuses its planner call (the note itself is not a work, so
   * `next` does not refuse it); the stop is recorded once, as any stop.
   */
  async refuse(node: string, visit: number): Promise<Step> {
    const last = this.run.state.lastRecord
    const recorded = last?.kind === 'stop' && last.node === node && last.visit === visit && last.budget === 'maxSteps' && last.step === this.run.state.steps
    return this.stop({ kind: 'stopped', node, visit, budget: 'maxSteps', recorded })
  }

  /** The run's outcome as `runPlan` returns it, for a step that is not `work`. */
  resultOf(step: Exclude<Step, { kind: 'work' | 'busy' }>): RunResult {
    return toRunResult(step, { runId: this.run.runId, replay: this.run.state, vault: this.vault, degraded: this.options.degraded })
  }

  /**
   * Applies what the hops journaled, as long as this runner holds the vault,
   * and closes the trace file. What cannot be written now stays journaled,
   * for the next open: closing never fails a call that ended otherwise.
   */
  async close(): Promise<void> {
    await this.hops
      .enter()
      .then(() => this.hops.settle(true))
      .catch(() => undefined)
    await this.hops.closeAppender()
  }

  private position(): Position {
    this.hops.checkLock() // Looked up before anything is written: a runner paused past a takeover (in its work, between calls) writes nothing on waking.
    const graph = this.session.graph
    const active = this.session.withStatus('active')
    let start: string | undefined
    if (active.length === 0 && !this.run.state.lastRecord && !this.run.pending) start = graph.startNode().id
    const subplans = this.options.runsSubplans
    return locate(
      { runId: this.run.runId, replay: this.run.state, pending: this.run.pending, maxSteps: this.options.maxSteps, spent: this.options.spent?.() },
      notesOf(graph, active, start, subplans && ((id) => subplans(graph.nodes.get(id)!))),
    )
  }

  private async stop(position: Extract<Position, { kind: 'stopped' }>): Promise<Step> {
    const { reason, ...stop } = stopOf(this.session.graph, this.run.state, position, this.options.maxSteps)
    const record: TraceRecord = {
      kind: 'stop',
      step: this.options.steps?.last() ?? nextStepNumber(this.run.state) - 1,
      node: stop.node,
      visit: stop.visit,
      budget: stop.budget,
      reason,
      at: new Date().toISOString(),
      maxSteps: this.options.maxSteps,
    }
    await this.hops.perform(effectsOf(position, this.run.state.lastRecord, { type: 'stopped', record, recorded: position.recorded }))
    await this.hops.settle(true)
    tell(this.options.onEvent, { type: 'stop', node: stop.node, reason })
    return { kind: 'stopped', runId: this.run.runId, stop, reason }
  }

  /** The result of a run that reached its terminal: nothing is worked again. */
  private async recordedResult(last: HopRecord): Promise<Step> {
    const saved = await this.session.runFiles.readOutput(last.output)
    const output = saved?.output ?? this.run.state.lastOutput
    const written = (await statOrNothing(tracePaths(this.vault).final)) !== undefined
    await this.hops.perform(effectsOf(undefined, last, { type: 'finished', node: last.node, output, written }))
    await this.hops.settle(true)
    tell(this.options.onEvent, { type: 'end', node: last.node })
    return { kind: 'completed', runId: this.run.runId, node: last.node, output }
  }
}
