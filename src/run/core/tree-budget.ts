import type { Replay } from './run-core.js'

/** A driver of one vault of a run tree, as the budget reads it: what its trace records so far. */
interface Recorder {
  readonly replayed: Readonly<Replay>
}

/** The works a vault's records hold: its steps, a subplan note's step counting its subplans' works. */
export function recordedWorks(driver: Recorder): number {
  return driver.replayed.steps + driver.replayed.extraWorks
}

/**
 * The one budget of a run tree (budgets compose):
 * `maxSteps` bounds the works of every vault of the tree plus the planner
 * calls. Branches run at once, so a check and what it allows happen in one
 * turn of the event loop: a visit claimed for a worker reserves its step
 * until its vault records it, and a planner call is counted before it is
 * made. What a vault's driver reads as spent counts what the other vaults
 * reserved; its own reserved visit it counts once, when recorded.
 */
export class TreeBudget {
  /** Planner calls of the run: those of earlier calls (read from the vault) and this call's. */
  plannerCalls: number
  /** Per vault (its folder from the top vault, `''` the top), the visit it claimed for a worker, reserved while its replay's steps are still those of the claim. */
  private readonly claims = new Map<string, { driver: Recorder; steps: number }>()
  /** Vaults not open yet whose visit an earlier call claimed (left `active`), by folder: each holds its step until its vault opens and claims it again. */
  private readonly held = new Set<string>()
  /** Vaults open with no run begun, by folder: see {@link spentBy}. */
  private readonly fresh = new Set<string>()
  /** Works of joined subplans on their way into the record of the note that ran them (in the vault `folder`): counted until that record holds them. */
  private readonly handovers: { folder: string; driver: Recorder; until: number }[] = []

  /**
   * @param recorded - the works the tree's records hold now (every open vault's, and what finished subplans left)
   * @param plannerCalls - the planner calls the run made in earlier calls
   */
  constructor(
    readonly maxSteps: number,
    private readonly recorded: () => number,
    plannerCalls: number,
  ) {
    this.plannerCalls = plannerCalls
  }

  /**
   * What `maxSteps` bounds, as the driver of the vault `folder` reads it. A
   * vault whose run has not begun reads nothing spent: its driver's stop
   * would be recorded in a trace not yet written, so its first claim is
   * checked by {@link admit}, and refused it leaves the vault as it was.
   */
  spentBy(folder: string): number {
    return this.fresh.has(folder) ? 0 : this.used(folder)
  }

  /** Whether the run of the vault `folder` has begun (it was opened with a run, or a claim of it was admitted). */
  begun(folder: string): boolean {
    return !this.fresh.has(folder)
  }

  /** The vault `folder` is open; `begun`: with a run. */
  opened(folder: string, begun: boolean): void {
    if (!begun) this.fresh.add(folder)
  }

  /** The vault `folder` is closed. */
  closed(folder: string): void {
    this.fresh.delete(folder)
  }

  /**
   * The check as the vault `folder` claims a visit; `reserve` for a visit
   * `runPlan`'s worker will work, which holds its step until recorded.
   * Admitted, the vault's run has begun.
   */
  admit(folder: string, driver: Recorder, reserve: boolean): boolean {
    if (reserve ? !this.claim(folder, driver) : this.fresh.has(folder) && this.used(folder) >= this.maxSteps) return false
    this.fresh.delete(folder)
    return true
  }

  /**
   * The visit `driver` (the vault `folder`'s) hands a worker now has a step:
   * one it reserved already, or one reserved now; `false` when no step is
   * left (the driver, asked again, stops it).
   */
  reserve(folder: string, driver: Recorder): boolean {
    return this.holds(folder, driver) || this.claim(folder, driver)
  }

  /** Whether `driver`, the vault `folder`'s, holds a reserved visit now. */
  holds(folder: string, driver: Recorder): boolean {
    const claim = this.claims.get(folder)
    return claim?.driver === driver && driver.replayed.steps === claim.steps
  }

  /** The vault `folder`, not open yet, holds a visit claimed in an earlier call: its step is held until the vault claims it again. */
  hold(folder: string): void {
    this.held.add(folder)
  }

  /** Reserves a step for the visit the vault `folder` claims now; `false`, reserving nothing, when no step is left. */
  claim(folder: string, driver: Recorder): boolean {
    // A held visit claimed again competes with the others held as they open (folder order), not with all of them at once.
    const renewing = this.held.has(folder)
    // Claimed again or not, it holds nothing from now: a held visit the budget refuses now stops with its vault.
    this.held.delete(folder)
    if (this.used(folder, renewing) >= this.maxSteps) return false
    this.claims.set(folder, { driver, steps: driver.replayed.steps })
    return true
  }

  /** Counts a planner call the vault `folder` is about to make; `false`, counting nothing, when no step is left. */
  plan(folder: string): boolean {
    if (this.used(folder) >= this.maxSteps) return false
    this.plannerCalls++
    return true
  }

  /** `works` of joined subplans leave the records of their vaults: they count until the record of the note that ran them, by `driver` of the vault `folder`, holds them. */
  handOver(folder: string, driver: Recorder, works: number): void {
    for (let index = this.handovers.length - 1; index >= 0; index--) {
      const handover = this.handovers[index]!
      if (recordedWorks(handover.driver) >= handover.until) this.handovers.splice(index, 1)
    }
    this.handovers.push({ folder, driver, until: recordedWorks(driver) + works })
  }

  /**
   * What `maxSteps` bounds, as the vault `folder` sees it: works recorded,
   * planner calls, and what the other vaults reserved or hand over. Its own
   * reserved visit, or the works its subplan note is completing with, it
   * counts when its record holds them: checking its claim again as it
   * completes it finds the claim within the budget.
   */
  private used(folder: string, renewing = false): number {
    let spent = this.recorded() + this.plannerCalls
    for (const [other, claim] of this.claims) if (other !== folder && claim.driver.replayed.steps === claim.steps) spent++
    if (!renewing) for (const other of this.held) if (other !== folder) spent++
    for (const handover of this.handovers) if (handover.folder !== folder) spent += Math.max(0, handover.until - recordedWorks(handover.driver))
    return spent
  }
}
