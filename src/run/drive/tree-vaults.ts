import { join } from 'node:path'
import { lockVault, type VaultLock } from '../../vault/lock.js'
import { RunDriver } from './run-driver.js'
import { resolveBudget, type DriverOptions } from '../core/run-options.js'
import type { Step } from '../core/run-options.js'
import { plannerCallsOf } from '../read/planner-calls.js'
import { runsSubplans, tooDeepToDecompose } from '../../vault/subplan-folders.js'
import { recordedWorks, TreeBudget } from '../core/tree-budget.js'
import { budgetOf, readRecords } from '../read/observe-run.js'
import { highestBelow, standOf, type VaultRecords, type VaultStand } from '../core/vault-stand.js'
import { nextStepNumber } from '../core/run-core.js'
import { readTrace } from '../../store/trace.js'
import type { PlanNode, RunEvent } from '../../core/types.js'
import { VaultSession } from '../../store/vault-session.js'
import type { SessionOptions } from '../core/run-options.js'

/*
 * The vaults of a run tree and their books: each vault's driver opened under
 * the top runner's lock with the tree's hooks (the one budget, the claim
 * check, the run's step numbers), the subplan folders locked while the call
 * runs, and the works every vault has spent, those recorded in an earlier
 * call included. How the tree is walked is `PlanTree`'s (plan-tree.ts).
 */

/** A visit whose worker failed after its retries, on a note with a `failed` edge: the edge is taken (`decidedBy: 'failure'`). */
export interface WorkFailure {
  /** What is saved as the visit's output: the error, in words. */
  output: string
  /** The worker's error message, for the trace. */
  failure: string
}

/** A visit to work, as a step says it. */
export type WorkStep = Extract<Step, { kind: 'work' }>

/** What every driver of a run tree shares. */
export interface TreeSettings {
  /** The lock of the top vault: every driver of the tree writes under it. */
  lock: VaultLock
  session: SessionOptions
  /** The options of the top driver; a subplan's driver gets the same, its query, `fresh` and the shared budget. */
  driver: DriverOptions
  /**
   * Works a visit (`runPlan`); absent for the stepping calls, which return the
   * first visit to work. `plan` is the subplan's folder relative to the top vault (`''` at the top).
   */
  work?: ((step: WorkStep, driver: RunDriver, plan: string) => Promise<string | WorkFailure>) | undefined
}

/** A branch's vault, opened: its folder from the top vault, its driver and session. */
export type OpenBranch = { top: string; driver: RunDriver; session: VaultSession }

/**
 * The vaults of a run tree as its walk uses them: the top vault's driver,
 * the subplans' drivers open now, their locks, the one budget and the step
 * numbers every vault takes from.
 */
export class TreeVaults {
  /** Drivers of subplans open now, by folder relative to the top vault. */
  private readonly open = new Map<string, RunDriver>()
  /** The subplan folders this call locked, kept until it ends: no other process runs them meanwhile. */
  private readonly locks = new Map<string, VaultLock>()
  /** Works of the subplans this call left unfinished (waiting, stopped, or a visit handed out): no record holds them yet. */
  private parked = 0
  /** Works the subplan runs under way recorded before this call, by folder, counted until their drivers open (a branch may claim before a nested one opens). */
  private readonly before = new Map<string, number>()
  /** The highest step number given so far: a claim anywhere in the tree takes the next, so a step number means one visit across the run. */
  private numbered = 0

  private root!: RunDriver
  /** What `maxSteps` bounds: works and planner calls of the whole tree, and the visits branches claimed for their workers. */
  budget!: TreeBudget
  private constructor(private readonly settings: TreeSettings) {
    settings.driver.spent = () => this.budget.spentBy('')
    settings.driver.runsSubplans = (node) => runsSubplans(node, 0)
    settings.driver.admit = this.admission('', 0)
    settings.driver.steps = this.numbering(0)
  }

  /**
   * Opens the top vault's driver of a locked top vault (see `RunDriver.open`)
   * and reads what the run spent in earlier calls.
   *
   * @throws {@link PlanValidationError} when the plan (its subplans included) is invalid
   * @throws {@link RunStateError} `query-mismatch` for another query than the recorded one
   */
  static async open(vault: string, session: VaultSession, settings: TreeSettings): Promise<TreeVaults> {
    const tree = new TreeVaults(settings)
    tree.root = await RunDriver.open(vault, session, settings.lock, settings.driver)
    const run = tree.runId()
    const planned = run === '' ? 0 : await plannerCallsOf(vault, session.graph, run)
    // Resumed inside subplans: their traces say the budget too, and what they recorded counts from the first claim, wherever it is.
    const inside = [...session.graph.nodes.values()].some((node) => node.plan && node.status === 'active')
    const records = inside ? await readRecords(vault) : undefined
    resolveCallBudget(settings.driver, records, tree.root)
    tree.budget = new TreeBudget(settings.driver.maxSteps, () => tree.spent(), planned)
    let below = 0
    if (records) {
      const stand = standOf(records, settings.driver.maxSteps)
      for (const [folder, works] of recordedBelow(stand)) tree.before.set(folder, works)
      // A visit claimed in an earlier call, in a vault nested deeper, holds its step before any vault opened first claims anew.
      for (const folder of claimedBelow(stand)) tree.budget.hold(folder)
      below = highestBelow(stand)
    }
    tree.numbered = Math.max(nextStepNumber(tree.root.replayed) - 1, below, tree.spent())
    return tree
  }

  /** The top vault's driver. */
  get top(): RunDriver {
    return this.root
  }

  /** The top run's id. */
  runId(): string {
    return this.root.resultOf({ kind: 'waiting', runId: '', waiting: [], reason: '' }).runId
  }

  /** Works of the whole run: every vault's recorded works (a finished subplan's are in its parent's record). */
  spent(): number {
    let works = this.parked + recordedWorks(this.root)
    for (const recorded of this.before.values()) works += recorded
    for (const driver of this.open.values()) works += recordedWorks(driver)
    return works
  }

  /** Opens a branch nested `depth` deep: its driver afresh for a new visit of the parent note, else resumed. */
  async openBranch(parent: RunDriver, plan: string, folder: string, step: WorkStep, depth: number, degraded: string | undefined): Promise<OpenBranch> {
    const top = plan ? `${plan}/${folder}` : folder
    const dir = join(parent.vault, folder)
    if (!this.locks.has(top)) this.locks.set(top, await lockVault(dir))
    const trace = await readTrace(dir).catch(() => undefined)
    // A subplan's run belongs to one visit of its note: the visit's key is its source.
    const fresh = trace?.header.source !== step.key
    const query = [step.node.title, step.node.body, step.query].filter((part) => part.trim() !== '').join('\n\n')
    const session = await VaultSession.open(dir, this.settings.session)
    try {
      const onEvent = this.settings.driver.onEvent
      const driver = await RunDriver.open(dir, session, this.settings.lock, {
        ...this.settings.driver,
        query: fresh ? query : undefined,
        fresh,
        source: step.key,
        // A decomposition that fell back to a path graph, or notes too deep to decompose, say so in the subplan's trace.
        degraded: [degraded, tooDeepToDecompose(session.graph.nodes.values(), depth)].filter((each) => each !== undefined).join('; ') || undefined,
        onEvent: onEvent && ((event) => nested(event, top, onEvent)),
        spent: () => this.budget.spentBy(top),
        folder: top,
        runsSubplans: (node) => runsSubplans(node, depth),
        admit: this.admission(top, depth),
        steps: this.numbering(depth),
      })
      this.open.set(top, driver)
      this.before.delete(top)
      // A visit claimed in an earlier call holds its step, while one is left, before any branch claims a new one (branches open in folder order).
      if (!fresh && [...session.graph.nodes.values()].some((note) => note.status === 'active' && !runsSubplans(note, depth))) this.budget.claim(top, driver)
      this.budget.opened(top, !fresh)
      return { top, driver, session }
    } catch (error) {
      await session.close()
      throw error
    }
  }

  /** A branch has gone as far as it goes: its works move to the parked ones as it leaves the open drivers, in one turn. Returns its works. */
  park(top: string, driver: RunDriver): number {
    const works = recordedWorks(driver)
    this.parked += works
    this.open.delete(top)
    return works
  }

  /** Closes an open branch's driver and session; the budget stops counting it as open. */
  async closeBranch(branch: OpenBranch): Promise<void> {
    this.open.delete(branch.top)
    this.budget.closed(branch.top)
    await branch.driver.close()
    await branch.session.close()
  }

  /** The works of joined branches go into the record of the note (in the vault `plan`, driven by `parent`) that ran them: no longer parked. */
  handOver(plan: string, parent: RunDriver, works: number): void {
    this.parked -= works
    this.budget.handOver(plan, parent, works)
  }

  /** Closes the drivers (the top's too) and releases the subplans' locks. */
  async close(): Promise<void> {
    await this.root?.close()
    for (const driver of this.open.values()) await driver.close()
    this.open.clear()
    for (const lock of this.locks.values()) await lock.release()
    this.locks.clear()
  }

  /**
   * The budget's answer before a visit of the vault `folder` (nested `depth`
   * deep) is claimed: a visit `runPlan`'s worker will work reserves its step
   * in the same turn as the check (branches claim at once); the first claim
   * of a vault with no run begun is checked here. `false`: no step is left,
   * and nothing is written for the visit.
   */
  private admission(folder: string, depth: number): (node: PlanNode) => boolean {
    return (node) => {
      const driver = folder === '' ? this.root : this.open.get(folder)
      return !driver || this.budget.admit(folder, driver, this.settings.work !== undefined && !runsSubplans(node, depth))
    }
  }

  /** The whole run's step numbers as a vault nested `depth` deep takes them: a note that runs subplans takes none (its hop has its subplans' last). */
  private numbering(depth: number): NonNullable<DriverOptions['steps']> {
    return {
      take: (node) => (runsSubplans(node, depth) ? undefined : (this.numbered = this.highestStep() + 1)),
      last: () => this.highestStep(),
    }
  }

  /** The highest step number given or recorded so far: a saved output judged since keeps the number it was saved with. */
  private highestStep(): number {
    let highest = Math.max(this.numbered, this.root.highestStep)
    for (const driver of this.open.values()) highest = Math.max(highest, driver.highestStep)
    return highest
  }
}

/**
 * Resolves the call's step budget (`resolveBudget`): the one it gives, else
 * the run's latest recorded in any vault of its tree (the top's trace, and
 * the subplans' `records` while the run is inside them), else the one it
 * started with, else the fallback. A budget given that differs from the
 * recorded one is recorded with the call's claim.
 */
function resolveCallBudget(options: DriverOptions, records: VaultRecords | undefined, top: RunDriver): void {
  const { told, fallback } = options.budget
  const recorded = records ? budgetOf(records, undefined, fallback) : resolveBudget(undefined, top.budgetRecorded, fallback)
  options.maxSteps = told ?? recorded
  options.budget.record = told !== undefined && told !== recorded
}

/** The subplan runs under way with a visit claimed in an earlier call (left `active`, not recorded), by folder from the top vault. */
function claimedBelow(stand: VaultStand, into: string[] = []): string[] {
  for (const { stand: branch } of stand.branches) {
    const folder = branch.records.folder
    if (branch.items.some((item) => item.kind === 'work' && item.plan === folder && !branch.unclaimed.has(item))) into.push(folder)
    claimedBelow(branch, into)
  }
  return into
}

/** The works each subplan run under way recorded (its own, not its subplans'), by its folder from the top vault. */
function recordedBelow(stand: VaultStand, into = new Map<string, number>()): Map<string, number> {
  for (const { stand: branch } of stand.branches) {
    into.set(branch.records.folder, branch.replay.steps + branch.replay.extraWorks)
    recordedBelow(branch, into)
  }
  return into
}

/** A subplan's event told from the top vault. */
function nested(event: RunEvent, top: string, onEvent: (event: RunEvent) => void): void {
  // Warnings are told once, by the top run, for the whole tree.
  if (event.type === 'start' || event.type === 'end' || event.type === 'warnings') return
  onEvent({ ...event, node: `${top}/${event.node}` })
}
