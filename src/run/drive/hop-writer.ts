import { RunStateError } from '../../core/errors.js'
import { createLLM } from '../../models/llm-client.js'
import type { VaultLock } from '../../vault/lock.js'
import { countedModel } from './run-models.js'
import { hopRecordOf, waitingStep } from '../core/steps.js'
import { tell } from './events.js'
import { addClaim, applyRecord, feedbackToHandOn } from '../core/run-core.js'
import type { DriverOptions, Step } from '../core/run-options.js'
import type { RunState } from './run-state.js'
import { outputFile, TraceAppender, writeFinal, writeTraceHeader, type HopRecord, type TraceRecord } from '../../store/trace.js'
import { chooseEdge, conditionsOf, failureEdge, type Decision } from '../../models/transitions.js'
import type { CallLLM, ModelUsage, PlanNode, RunEvent, TransitionContext } from '../../core/types.js'
import { readLedger } from '../../memory/ledger.js'
import { waitsForPerson } from '../../core/knobs.js'
import { effectsOf, type Effect } from '../core/hop-effects.js'
import type { VaultSession } from '../../store/vault-session.js'
import type { VisitOutcome } from '../../store/output-note.js'
import { checkWords, type CheckResult } from '../core/checks.js'
import { timeoutHop, waitClock } from '../core/deadline.js'
import { forgetUntickedBoxes, readUntickedBoxes } from '../../store/unticked-boxes.js'
import { feedbackAsTyped } from '../../vault/note-edits.js'

/** What decided a worked visit before any judge: its checks (with their results when they ran in this call), or its worker's failure. */
export interface Verdict {
  outcome?: VisitOutcome
  checks?: CheckResult[]
  /** The worker's error, for `outcome: 'error'`. */
  error?: string
}

/** How long a journaled write waits at most for a quiet moment before the hop's path applies it. */
const APPLY_LAG_MS = 20
/** How soon after the caller or a model takes the turn the journaled writes are applied. */
const IDLE_APPLY_MS = 2
/** How long a look at the lock stands within a turn of the run's own (a takeover takes seconds of a holder's silence). */
const LOCK_LOOK_MS = 5

/*
 * The end of a hop and the writes of a run: a worked visit's transition
 * judged (predicates, the caller's choice, the model, the unconditional
 * edge; its model calls counted), a waiting note's ticked box followed, and
 * the writes the pure `effectsOf` decides performed in order on the locked
 * vault, the replay kept in step with the trace. `RunDriver` builds the
 * stepping on it: where the run stands, and what the caller gets next.
 */

/**
 * The hop's judgment and the writes of a run on one locked vault: a worked
 * visit's transition judged, a waiting note's ticked box followed, and the
 * effects `effectsOf` decides performed in order, the run's state kept in
 * step with the trace. A `RunDriver` holds one.
 */
export class HopWriter {
  private appender: TraceAppender | undefined
  private envLLM: CallLLM | undefined
  /** Whether the caller (its work) or a model has the turn: journaled writes may be applied meanwhile. */
  private idle = false
  private applying: Promise<void> | undefined
  private applyFailed: { error: unknown } | undefined
  private timer: NodeJS.Timeout | undefined
  /** When the lock was last looked at in this turn of the run's own (`performance.now()`). */
  private lockSeen: number | undefined

  constructor(
    readonly vault: string,
    private readonly session: VaultSession,
    private readonly lock: VaultLock,
    private readonly options: DriverOptions,
    private readonly run: RunState,
  ) {}

  /**
   * Performs the writes the pure `effectsOf` decided, in order; `after` is
   * told each one done. Returns the notes a status or box write followed to
   * a new name (a note renamed meanwhile), by the id the effect named.
   */
  async perform(effects: Effect[], after?: (effect: Effect) => void): Promise<Map<string, string>> {
    const renamed = new Map<string, string>()
    for (const effect of effects) {
      const node = 'node' in effect ? (renamed.get(effect.node) ?? effect.node) : ''
      switch (effect.kind) {
        case 'header':
          await writeTraceHeader(this.vault, effect.header, { fsync: this.options.fsync })
          this.run.traced = true
          break
        case 'claim':
          this.checkLock()
          await this.openAppender()
          this.appender!.appendClaim(effect.claim)
          addClaim(this.run.state, effect.claim)
          break
        case 'status':
          // Journaled with the hop's next append, written into the note off the hop's path (or by `show`); else written now.
          if (this.session.deferStatus(node, effect.status)) renamed.set(effect.node, node)
          else renamed.set(effect.node, await this.session.setStatus(node, effect.status))
          break
        case 'empty-boxes':
          // Written now, after every write journaled before it.
          await this.apply()
          renamed.set(effect.node, await this.session.emptyBoxes(node, effect.handed))
          break
        case 'output':
          this.session.saveOutput(effect.file, effect.meta, effect.output)
          break
        case 'record':
          await this.record(effect.record, effect.rationale, effect.output)
          break
        case 'final':
          await this.apply()
          await writeFinal(this.vault, node, effect.output, { fsync: this.options.fsync })
          break
      }
      after?.(effect)
    }
    // One append: from here a crash loses none of what the effects journaled.
    this.session.commit()
    return renamed
  }

  /** Closes the trace file this writer appended to. */
  async closeAppender(): Promise<void> {
    await this.appender?.close()
  }

  /** Opens the trace for appending; its entries go through the run's journal. */
  private async openAppender(): Promise<void> {
    this.appender ??= await TraceAppender.open(this.vault, {
      fsync: this.options.fsync,
      journal: (offset, text, record) => this.session.journalTrace(offset, text, this.run.runId, record),
    })
  }

  /**
   * The caller (its work) or a model has the turn: what the hops journaled
   * is applied to the files a moment later, so a person sees each hop in
   * their notes app within milliseconds while the work goes on.
   */
  leave(): void {
    this.idle = true
    this.lockSeen = undefined
    if (this.timer || this.session.unappliedFor === undefined) return
    this.timer = setTimeout(() => {
      this.timer = undefined
      if (!this.idle || this.applying) return
      this.applying = this.apply()
        .catch((error: unknown) => {
          this.applyFailed = { error }
        })
        .finally(() => {
          this.applying = undefined
        })
    }, IDLE_APPLY_MS)
    this.timer.unref()
  }

  /** The run has the turn again: an apply under way is waited for, and one that failed fails the call here. */
  async enter(): Promise<void> {
    this.idle = false
    clearTimeout(this.timer)
    this.timer = undefined
    if (this.applying) await this.applying
    const failed = this.applyFailed
    this.applyFailed = undefined
    if (failed) throw failed.error
  }

  /**
   * Applies what the hops journaled: all of it (`all`, before the caller is
   * told the run waits, stopped or ended), or once the oldest write has
   * waited {@link APPLY_LAG_MS} (a run whose works return at once).
   */
  async settle(all: boolean): Promise<void> {
    const waited = this.session.unappliedFor
    if (waited !== undefined && (all || waited >= APPLY_LAG_MS)) await this.apply()
  }

  /**
   * Throws when this runner lost the vault's lock (a runner paused past a
   * takeover writes nothing on waking). Looked at once a turn of the run's
   * own (a few milliseconds at most): the caller or a model taking the turn
   * makes the next look a new one.
   */
  checkLock(): void {
    const now = performance.now()
    if (this.lockSeen !== undefined && now - this.lockSeen < LOCK_LOOK_MS) return
    this.lock.check()
    this.lockSeen = now
  }

  /**
   * Writes the status the hop journaled for the note of `id` into the note
   * now, before anyone reads it: the worker its visit is handed to sees it
   * `active`, the judge asked about it `done` (a person watching the note
   * too). The journal holds the durable copy; the rest of the hop's writes
   * still wait for the turn to pass.
   */
  async show(id: string): Promise<void> {
    this.checkLock()
    await this.session.writeStatusNow(id)
  }

  /** Applies what the hops journaled, as long as this runner still holds the vault (one paused past a takeover writes nothing). */
  private async apply(): Promise<void> {
    this.lock.check()
    await this.session.apply()
  }

  /** Judges the transition of a worked visit and records the hop. */
  async judge(
    id: string,
    visit: number,
    step: number,
    output: string,
    file: string,
    choice: string | undefined,
    checked: boolean,
    works?: number,
    verdict: Verdict = {},
  ): Promise<void> {
    // Writing `done` just compared the note with what we knew, and read it again if a person had edited it.
    await this.session.refresh(checked ? [] : [id])
    const node = this.nodeOrFail(id)
    this.run.pending = undefined
    const claim = this.run.claim?.node === id && this.run.claim.visit === visit ? this.run.claim : undefined
    this.run.state.lastNode = id
    this.run.state.lastOutput = output
    if (waitsForPerson(node)) {
      const record: TraceRecord = {
        kind: 'waiting',
        step,
        node: id,
        visit,
        at: new Date().toISOString(),
        maxSteps: this.options.maxSteps,
        ...(works !== undefined && { works }),
      }
      await this.perform(effectsOf(undefined, this.run.state.lastRecord, { type: 'judged', record, rationale: '', waits: true, output }))
      return
    }
    const context: TransitionContext = { query: this.run.query, node, visit, step, output, outputs: this.run.state.outputs.slice() }
    const chooseOptions: Parameters<typeof chooseEdge>[3] = {}
    if (this.options.predicates) chooseOptions.predicates = this.options.predicates
    if (this.options.signal) chooseOptions.signal = this.options.signal
    if (choice !== undefined) chooseOptions.choice = choice
    if (verdict.outcome === 'passed' || verdict.outcome === 'failed') chooseOptions.check = verdict.outcome
    const needsModel =
      choice === undefined &&
      verdict.outcome !== 'failed' &&
      verdict.outcome !== 'error' &&
      conditionsOf(node, this.options.predicates).some((label) => label !== 'next')
    // The judge sees the facts and valid assumptions, as they stand after the work (it may have recorded some).
    if (needsModel) context.ledger = await readLedger(this.vault)
    const decision =
      verdict.outcome === 'error'
        ? failureDecision(node, verdict.error ?? '')
        : await chooseEdge(node, context, needsModel ? this.model(id) : undefined, chooseOptions)
    const record = hopRecordOf(decision, { step, node: id, visit, output: file, choice, works, claim, usage: this.run.usage })
    if (verdict.checks) record.checks = verdict.checks.map(({ name, exit, ms, timedOut }) => ({ name, exit, ms, ...(timedOut && { timedOut }) }))
    if (verdict.outcome === 'error') record.error = verdict.error ?? ''
    if (verdict.checks) decision.rationale += `\n\n${verdict.checks.map((check) => `${check.name}: ${checkWords(check)}`).join('\n')}`
    this.run.usage = []
    // The terminal's final answer is written after its event is told.
    const effects = effectsOf(undefined, this.run.state.lastRecord, { type: 'judged', record, rationale: decision.rationale, waits: false, output })
    await this.perform(effects.filter((effect) => effect.kind !== 'final'))
    const event: RunEvent = { type: 'transition', node: id, visit, step, edge: decision.edge, decidedBy: decision.decidedBy, rationale: decision.rationale }
    if (record.tokens) event.tokens = record.tokens
    if (record.model) event.model = record.model
    tell(this.options.onEvent, event)
    await this.perform(effects.filter((effect) => effect.kind === 'final'))
  }

  /** A waiting `judge: human` note: follow the one ticked box, or say it still waits. */
  async humanDecision(id: string, visit: number, step: number): Promise<Step | undefined> {
    await this.session.refresh([id])
    const node = this.nodeOrFail(id)
    const ticked = node.edges.filter((edge) => edge.at?.checked === true)
    if (ticked.length > 1) {
      throw new RunStateError(
        'ambiguous-decision',
        `\`${this.fileOf(id)}\` has ${ticked.length} boxes ticked (${ticked.map((edge) => `\`${edge.label || 'next'} -> [[${edge.target}]]\``).join(', ')}); ` +
          `tick exactly one, then run the vault again.`,
        { node: id, file: this.fileOf(id), ticked: ticked.map((edge) => edge.label || 'next') },
      )
    }
    const edge = ticked[0]
    if (!edge) {
      const since = this.waitingSince(id, visit)
      const now = Date.now()
      // Past its `wait:` deadline with a `timeout` edge: the wait ends here, as a decision nobody made.
      const timeout = since === undefined ? undefined : timeoutHop(node, { node: id, visit, step, since }, now)
      if (timeout) {
        const rationale = `Nobody decided within \`wait: ${node.wait}\` (waiting since ${since}).`
        await this.perform(
          effectsOf(undefined, this.run.state.lastRecord, { type: 'decided', record: timeout, rationale, output: this.run.state.lastOutput, handed: '' }),
        )
        tell(this.options.onEvent, { type: 'transition', node: id, visit, step, edge: timeout.edge, decidedBy: 'timeout', rationale })
        return undefined
      }
      await this.settle(true)
      const waiting = waitingStep(this.run.runId, node, this.fileOf(id), since === undefined ? undefined : waitClock(node, since, now))
      tell(this.options.onEvent, { type: 'waiting', node: id, reason: waiting.reason })
      return waiting
    }
    const feedback = this.session.feedbackOf(id)
    const handed = feedbackToHandOn(this.run.state.feedback.get(id), feedback)
    const record: HopRecord = {
      kind: 'hop',
      step,
      node: id,
      visit,
      edge,
      decidedBy: 'human',
      next: edge.target,
      output: outputFile(step, id),
      at: new Date().toISOString(),
    }
    if (feedback) record.feedback = feedback
    const unticked = await readUntickedBoxes(this.vault, { run: this.run.runId, node: id, visit, edge: edge.label || 'next' })
    if (unticked) record.unticked = unticked
    const rationale = handed ? `Feedback:\n${feedbackAsTyped(handed)}` : 'A person ticked this edge.'
    await this.perform(effectsOf(undefined, this.run.state.lastRecord, { type: 'decided', record, rationale, output: this.run.state.lastOutput, handed }))
    if (unticked) await forgetUntickedBoxes(this.vault, id)
    tell(this.options.onEvent, { type: 'transition', node: id, visit, step, edge, decidedBy: 'human', rationale })
    return undefined
  }

  /** When the wait of a visit began: its `waiting` record's time (none for a record from before times were kept). */
  private waitingSince(id: string, visit: number): string | undefined {
    const last = this.run.state.lastRecord
    return last?.kind === 'waiting' && last.node === id && last.visit === visit ? last.at : undefined
  }

  private async record(record: TraceRecord, rationale: string, output: string | undefined): Promise<void> {
    this.checkLock()
    await this.openAppender()
    await this.appender!.append(record, rationale)
    applyRecord(this.run.state, record, output)
    if (record.kind !== 'waiting') this.run.claim = undefined
  }

  /** Counts a model call of the hop under way (the worker's calls come through here too). */
  noteUsage(usage: ModelUsage): void {
    this.run.usage.push(usage)
  }

  /** The judge's model for the note of `id`, its calls counted for the hop's record; the note says `done` before it is asked. */
  private model(id: string): CallLLM {
    const counted = countedModel(
      () => this.options.llm ?? (this.envLLM ??= createLLM()),
      (usage) => this.noteUsage(usage),
    )
    return async (prompt, options) => {
      await this.show(id)
      this.leave()
      try {
        return await counted(prompt, options)
      } finally {
        await this.enter()
      }
    }
  }

  nodeOrFail(id: string): PlanNode {
    const node = this.session.graph.nodes.get(id)
    if (!node)
      throw new RunStateError(
        'node-missing',
        `The run is at \`${id}\`, but the vault has no such note any more. Restore it, or set another note \`status: active\` to move the run there.`,
        { node: id },
      )
    return node
  }

  fileOf(id: string): string {
    return this.session.graph.nodes.get(id)?.file ?? `${id}.md`
  }
}

/** A visit whose worker failed after its retries: the `failed` edge (the note is worked again if an edit took the edge away). */
function failureDecision(node: PlanNode, error: string): Decision {
  const edge = failureEdge(node) ?? null
  return { edge, rationale: `The worker failed: ${error}`, decidedBy: 'failure' }
}
