import { RunStateError } from '../../core/errors.js'
import type { RunDriver } from './run-driver.js'
import type { RunResult } from '../core/run-options.js'
import type { DriverStep, Step } from '../core/run-options.js'
import { checkChoice, staleStep } from '../core/messages.js'
import { fromSubplan } from '../core/steps.js'
import { stopOf } from '../core/stops.js'
import { waitsForPerson } from '../../core/knobs.js'
import { decompose } from './decompose.js'
import { isGenerate, runsSubplans, subplanFoldersOf } from '../../vault/subplan-folders.js'
import { readRecords } from '../read/observe-run.js'
import { completedWith } from '../read/saved-output.js'
import { snapshotOf, visitsOfSnapshot } from '../core/run-snapshot.js'
import type { VaultSession } from '../../store/vault-session.js'
import { passingGate, type ClaimPass, type PassedVisit } from '../core/claims.js'
import {
  claimPasses,
  passesAfterCompletion,
  endsRun,
  joinBranches,
  offeringNote,
  offersParentChoices,
  type BranchAnswer,
  type Within,
} from '../core/tree-rules.js'
import { TreeVaults, type OpenBranch, type TreeSettings, type WorkStep } from './tree-vaults.js'

/*
 * The walk of a run tree: the top vault's plan stepped until the caller has
 * something to do, a note with `plan:` running its subplans as branches (at
 * once for `runPlan`, in turn for the stepping calls) joined when all
 * completed, a visit completed wherever in the tree it is pending, and a
 * subplan terminal's choice carried to the note that offered it. The vaults
 * the walk opens and what they spend are `TreeVaults`' (tree-vaults.ts).
 */

/** A branch's answer once it has gone as far as it can (see `BranchAnswer`). */
type Branch = BranchAnswer

/**
 * A run over a vault and its subplans. The top vault's
 * driver walks its plan; entering a note with `plan:` runs each of its folders
 * as a plan of its own, with its own driver (statuses, trace), under the top
 * runner's lock, branches at once. The note's output is its subplans' final
 * output, joined under headings for branches; the worker is not called for
 * it. What the tree reports names nested notes by their path from the top
 * vault; `maxSteps` counts the works of every vault of the tree.
 */
export class PlanTree {
  /** The last nested node worked in this call, by its path from the top vault, and the top's steps then. */
  private lastNode = ''
  private lastAt = 0
  /** `completeStep` (or `deferStep`, `blockStep`: `release`): the visit to complete, wherever in the tree it is pending. */
  private completion:
    { key: string; result: { output: string; choice?: string | undefined }; done: boolean; release?: { kind: 'defer' | 'block'; reason: string } } | undefined
  /** The stepping calls: which visits this pass of the walk takes (see `ClaimPass`). */
  private pass: ClaimPass = { kind: 'any' }
  /** A choice given when completing a subplan's terminal: it decides the transition of the note `at` (its folder and id) that offered it. */
  private carried: { choice: string; at: string } | undefined
  /** The notes running subplans the walk is inside now, outermost first (stepping walks one branch at a time); `lone`: it runs one folder. */
  private readonly within: Within[] = []
  /** Steps relayed from a subplan's terminal, and whether a choice given with them goes past the note that offered their conditions. */
  private readonly carries = new WeakMap<Step, boolean>()
  /** `runPlan`'s branches waiting for their first work to begin (or for them to end), by folder from the top vault: the next branch's turn. */
  private readonly firstWork = new Map<string, () => void>()

  private constructor(
    private readonly session: VaultSession,
    private readonly settings: TreeSettings,
    private readonly vaults: TreeVaults,
    /** The claimed visits the walk passed by, as a stale key's error names them. */
    private readonly passed: PassedVisit[] = [],
  ) {}

  /** The agent of a stepping call, if it named one. */
  private get agent(): string | undefined {
    return this.settings.driver.agent?.name
  }

  /**
   * Opens the run of a locked top vault (see `RunDriver.open`).
   *
   * @throws {@link PlanValidationError} when the plan (its subplans included) is invalid
   * @throws {@link RunStateError} `query-mismatch` for another query than the recorded one
   */
  static async open(vault: string, session: VaultSession, settings: TreeSettings): Promise<PlanTree> {
    let tree: PlanTree | undefined
    const passed: PassedVisit[] = []
    // The stepping calls hand out visits by claims (docs/stepping.md, several agents): the pass of the walk decides which it takes.
    if (!settings.work) settings.driver.gate = passingGate(() => tree!.pass, settings.driver.agent?.name, passed)
    tree = new PlanTree(session, settings, await TreeVaults.open(vault, session, settings), passed)
    return tree
  }

  /** The top vault's driver. */
  get top(): RunDriver {
    return this.vaults.top
  }

  /** Goes on until the caller has something to do: a visit to work (`runPlan` works them all), people to wait for, a stop, the result. */
  async next(): Promise<Step> {
    if (this.settings.work) return forCaller(await this.drive(this.vaults.top, '', 0))
    return this.passes(claimPasses(this.agent))
  }

  /**
   * The first visit to work inside the subplan folder `plan` (from the top
   * vault), claimed: a step just decomposed hands its agent the subplan's
   * start. Anything else when nothing inside is ready, as `next` answers.
   */
  async nextWithin(plan: string): Promise<Step> {
    this.pass = { kind: 'within', plan }
    const step = forCaller(await this.drive(this.vaults.top, '', 0))
    return step.kind === 'busy' ? this.next() : step
  }

  /**
   * Walks the tree once per pass until one hands out a visit (or says
   * anything but `busy`): an agent's own claim first, then a visit nobody
   * else holds, deferred ones last. `busy` names the claims of others.
   */
  private async passes(kinds: ('own' | 'fresh' | 'any')[], first?: Step): Promise<Step> {
    let step = first
    for (const kind of kinds) {
      if (step && step.kind !== 'busy') return step
      this.pass = { kind }
      step = forCaller(await this.drive(this.vaults.top, '', 0))
    }
    if (step!.kind !== 'busy') return step!
    return { ...step!, claims: step!.claims.filter((item) => item.claim !== undefined) }
  }

  /**
   * Lets go of the pending visit whose key is `key` (`deferStep`,
   * `blockStep`), wherever in the tree it is, and goes on to the step that follows.
   *
   * @throws {@link RunStateError} `stale-step` when no pending visit has that key (nothing is written for it)
   */
  async release(key: string, kind: 'defer' | 'block', reason: string): Promise<Step> {
    return this.complete(key, { output: '' }, { kind, reason })
  }

  /**
   * Completes the pending visit whose key is `key`, at the top or inside a
   * subplan, and goes on to the next step.
   *
   * @throws {@link RunStateError} `stale-step` when no pending visit has that key (nothing is written for it)
   */
  async complete(key: string, result: { output: string; choice?: string | undefined }, release?: { kind: 'defer' | 'block'; reason: string }): Promise<Step> {
    const top = this.vaults.top
    // What follows a completion: a visit nobody else holds.
    this.pass = { kind: 'fresh' }
    // A visit of the top vault (a crash after its output was saved included) is the top driver's to complete.
    const done = release ? top.release(key, release.kind, release.reason) : top.complete(key, result)
    const first = await done.catch((error: unknown) => {
      if (error instanceof RunStateError && error.code === 'stale-step') return undefined
      throw error
    })
    if (first) return this.afterCompletion(forCaller(await this.drive(top, '', 0, first)))
    this.completion = { key, result, done: false, ...(release && { release }) }
    this.pass = { kind: 'complete', key }
    const step = forCaller(await this.drive(top, '', 0))
    if (this.completion.done) return this.afterCompletion(step)
    // The same completion repeated after its answer got lost (a dropped connection, a lost context): answered with where the run is now.
    if (!release && (await completedWith(top.vault, key, result.output))) {
      this.completion = undefined
      return { ...(await this.passes(claimPasses(this.agent))), saved: true }
    }
    // Nothing was written: the pending step named is the caller's own claim, else the first claimed one.
    const found = this.passed.find((each) => each.agent === this.agent) ?? this.passed[0]
    const pending = found && { key: found.key, node: found.node, visit: found.visit, step: found.step, ...(found.plan !== undefined && { plan: found.plan }) }
    throw staleStep(top.vault, key, step.kind === 'work' ? { key: step.key, node: step.node.id, visit: step.visit, step: step.step } : (pending ?? null))
  }

  /** The step a completion ends on: walked again when the branch it was in had nothing more for the caller. */
  private async afterCompletion(step: Step): Promise<Step> {
    return step.kind === 'busy' ? this.passes(passesAfterCompletion()) : step
  }

  /**
   * The run's outcome as `runPlan` returns it: steps, visits and the last
   * node across every vault of the tree (visits of subplans as their traces
   * say, those that finished in an earlier call too).
   */
  async resultOf(step: Exclude<Step, { kind: 'work' | 'busy' }>): Promise<RunResult> {
    const result = this.vaults.top.resultOf(step)
    result.steps = this.vaults.spent()
    result.plannerCalls = this.vaults.budget.plannerCalls
    // Visits as the run's snapshot counts them (subplans' by path, a note working through its subplans included): what status and the pictures show.
    const snapshot = snapshotOf(this.vaults.top.vault, await readRecords(this.vaults.top.vault), { maxSteps: this.settings.driver.maxSteps, hops: 0 })
    const counted = visitsOfSnapshot(snapshot)
    // A note the read just now left out (a person's editor was saving it that moment) keeps the visits the trace records.
    for (const [id, visits] of this.vaults.top.replayed.visits) if (!Object.hasOwn(counted, id)) counted[id] = visits
    result.visits = Object.fromEntries(Object.entries(counted).filter(([, visits]) => visits > 0))
    // Unless the top worked a note since, the last node worked is the nested one (the top's is the note that ran the subplan).
    const since = this.vaults.top.replayed.steps - this.lastAt
    if (this.lastNode !== '' && (since === 0 || (since === 1 && this.session.graph.nodes.get(result.lastNode)?.plan))) result.lastNode = this.lastNode
    return result
  }

  /** Closes the drivers (the top's too) and releases the subplans' locks. */
  async close(): Promise<void> {
    await this.vaults.close()
  }

  /** A work begins in the vault `plan` (or a branch there ended): the branches it is inside have begun, the next ones take their turn. */
  private began(plan: string): void {
    for (const [top, next] of this.firstWork)
      if (plan === top || plan.startsWith(`${top}/`)) {
        this.firstWork.delete(top)
        next()
      }
  }

  /** Remembers the last nested node worked (`plan`: its folder from the top vault). */
  private worked(plan: string, id: string): void {
    if (!plan) return
    this.lastNode = id
    this.lastAt = this.vaults.top.replayed.steps
  }

  /** A driver's step; a claim the budget refused on the way is asked again, and the driver then stops (a vault with no run begun does not begin: the refusal is its answer). */
  private async unrefused(driver: RunDriver, folder: string, step: Promise<DriverStep>): Promise<DriverStep> {
    const answer = await step
    return answer.kind === 'refused' && this.vaults.budget.begun(folder) ? driver.next() : answer
  }

  /** Walks one vault of the tree, nested `depth` deep, until it has something for the caller; `plan` is its folder relative to the top vault. */
  private async drive(driver: RunDriver, plan: string, depth: number, first?: DriverStep): Promise<DriverStep> {
    let step = first ?? (await this.unrefused(driver, plan, driver.next()))
    for (;;) {
      if (step.kind === 'refused') return step
      // A subplan's step is the run's: its id the top vault's, its notes by their path from the top vault.
      if (step.kind !== 'work') return plan ? { ...fromSubplan(step, plan), runId: this.vaults.runId() } : step
      const id = plan ? `${plan}/${step.node.id}` : step.node.id
      if (runsSubplans(step.node, depth)) {
        const inner = await this.runSubplans(driver, plan, step, depth)
        // No step left for the planner call: the note that runs the subplans stops.
        if (!inner.step) {
          step = await driver.refuse(step.node.id, step.visit)
          continue
        }
        if (inner.step.kind !== 'completed') return inner.step
        // The choice carried from a terminal below is this note's only if this note offered it (else it goes on up).
        const choice = this.carried?.at === `${plan}\n${step.node.id}` ? this.carried.choice : undefined
        if (choice !== undefined) this.carried = undefined
        step = await this.unrefused(
          driver,
          plan,
          driver.complete(step.key, {
            output: inner.step.output,
            works: inner.works,
            ...(inner.last > 0 && { step: inner.last }),
            ...(choice !== undefined && { choice }),
          }),
        )
        continue
      }
      const completion = this.completion
      if (completion && !completion.done && completion.key === step.key) {
        completion.done = true
        this.pass = { kind: 'fresh' }
        if (completion.release) {
          step = await this.unrefused(driver, plan, driver.release(step.key, completion.release.kind, completion.release.reason))
          continue
        }
        let { result } = completion
        // A subplan's terminal takes no choice: the choice decides the note that offered it, checked before anything is written.
        if (plan && step.node.edges.length === 0 && result.choice !== undefined) {
          const offering = offeringNote(this.within)
          if (offering && !waitsForPerson(offering.node)) checkChoice(offering.node, result.choice, this.settings.driver.predicates)
          if (offering) this.carried = { choice: result.choice, at: `${offering.plan}\n${offering.node.id}` }
          result = { output: result.output }
        }
        this.worked(plan, id)
        step = await this.unrefused(driver, plan, driver.complete(step.key, result))
        continue
      }
      if (!this.settings.work) return plan ? { ...step, plan, runId: this.vaults.runId(), terminal: endsRun(step.node, this.within) } : step
      // A visit claimed before this call (left `active`) reserves its step now; with none left, the driver stops it.
      if (!this.vaults.budget.reserve(plan, driver)) {
        step = await driver.next()
        continue
      }
      this.began(plan)
      const worked = await this.settings.work(step, driver, plan)
      this.worked(plan, id)
      step = await this.unrefused(driver, plan, driver.complete(step.key, typeof worked === 'string' ? { output: worked } : worked))
    }
  }

  /**
   * Runs the subplans of a claimed note of a vault nested `depth` deep,
   * branches at once, each as far as it goes; joins them when all completed.
   * Every branch is open before any claims: the budget counts what each has
   * recorded. No step when the budget refused the planner call.
   */
  private async runSubplans(parent: RunDriver, plan: string, step: WorkStep, depth: number): Promise<Branch> {
    const planned = isGenerate(step.node.plan)
      ? await decompose(parent.vault, step.node, { ...this.settings.driver, run: this.vaults.runId(), claim: () => this.vaults.budget.plan(plan) })
      : undefined
    if (planned?.kind === 'refused') return { step: undefined, works: 0, last: 0 }
    const degraded = planned?.kind === 'planned' ? planned.degraded : undefined
    const folders = subplanFoldersOf(step.node)
    this.within.push({ node: step.node, plan, lone: folders.length === 1 })
    const opened = await Promise.allSettled(folders.map(({ folder }) => this.vaults.openBranch(parent, plan, folder, step, depth + 1, degraded)))
    const open = opened.flatMap((each) => (each.status === 'fulfilled' ? [each.value] : []))
    let branches: Branch[]
    try {
      const failed = opened.find((each) => each.status === 'rejected')
      if (failed) throw failed.reason
      branches = await this.driveBranches(open, depth + 1)
    } finally {
      this.within.pop()
      for (const branch of open) await this.vaults.closeBranch(branch)
    }
    const join = joinBranches(branches, folders, this.vaults.runId())
    if (join.kind === 'none') return { step: undefined, works: 0, last: 0 }
    if (join.kind === 'step') {
      if (join.step.kind !== 'work') return join.from ?? { step: join.step, works: 0, last: 0 }
      // A lone subplan's terminal: the choice given with it decides the parent note, so offer the parent's choices
      // (and the choices of the note above, when the parent is itself a lone subplan's terminal: see `offeringNote`).
      const inner = join.step
      if (offersParentChoices(folders.length === 1, this.carries.get(inner), inner.node)) {
        const offered: WorkStep = { ...inner, conditions: step.conditions }
        this.carries.set(offered, plan !== '' && step.node.edges.length === 0)
        return { step: offered, works: 0, last: 0 }
      }
      this.carries.set(inner, false)
      return join.from!
    }
    // The works of the joined branches go into the parent note's record from here on; the budget counts them until it holds them.
    this.vaults.handOver(plan, parent, join.works)
    return { step: { kind: 'completed', runId: '', node: step.node.id, output: join.output }, works: join.works, last: join.last }
  }

  /**
   * Walks the open branches as far as each goes: at once for `runPlan`; one
   * after another for the stepping calls, which hand out the first visit of
   * the first branch, in the listed order, that has one.
   * `runPlan`'s branches claim their first visits in the listed order too
   * (each starts once the one before began its first work, or ended), so
   * the last steps of the budget go where the snapshot's frontier says. A
   * branch whose turn comes after one failed does not start: the call fails.
   */
  private async driveBranches(open: OpenBranch[], depth: number): Promise<Branch[]> {
    if (this.settings.work) {
      let before: Promise<void> = Promise.resolve()
      let broken: { error: unknown } | undefined
      const walks = open.map((branch) => {
        const turn = before
        before = new Promise<void>((resolve) => this.firstWork.set(branch.top, resolve))
        return turn
          .then(() => {
            if (broken) throw broken.error
            return this.driveBranch(branch, depth)
          })
          .catch((error: unknown) => {
            broken ??= { error }
            throw error
          })
          .finally(() => this.began(branch.top))
      })
      const settled = await Promise.allSettled(walks)
      const failed = settled.find((each) => each.status === 'rejected')
      if (failed) throw failed.reason
      return settled.map((each) => (each as PromiseFulfilledResult<Branch>).value)
    }
    const branches: Branch[] = []
    for (const branch of open) {
      branches.push(await this.driveBranch(branch, depth))
      if (branches.at(-1)!.step?.kind === 'work') break
    }
    return branches
  }

  /** Walks an open branch as far as it goes; its works move to the parked ones as it leaves the open drivers, in one turn. */
  private async driveBranch({ top, driver, session }: OpenBranch, depth: number): Promise<Branch> {
    const inner = await this.drive(driver, top, depth)
    const works = this.vaults.park(top, driver)
    if (inner.kind !== 'refused') return { step: inner, works, last: driver.replayed.lastStep }
    // The budget kept the branch's run from beginning: its first visit is the stop, unless a sibling has more to say.
    const { node } = inner
    const at = { node: node.id, visit: (driver.replayed.visits.get(node.id) ?? 0) + 1, budget: 'maxSteps' as const }
    const { reason, ...stop } = stopOf(session.graph, driver.replayed, at, this.settings.driver.maxSteps)
    return { step: undefined, works, last: driver.replayed.lastStep, refused: fromSubplan({ kind: 'stopped', runId: this.vaults.runId(), stop, reason }, top) }
  }
}

/** A tree's answer as its caller gets it: a refused claim never leaves the tree (the top vault's run has begun, so a refusal there is asked again). */
function forCaller(step: DriverStep): Step {
  if (step.kind === 'refused') throw new Error(`Internal: the budget's refusal of \`${step.node.id}\` reached the caller`)
  return step
}
