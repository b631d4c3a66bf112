import { runPlan } from '../entry/executor.js'
import type { RunOptions, RunResult } from '../core/run-options.js'
import { checkSchedule, lastTick, nextTick, startTick, type ScheduleDefinition } from './schedules.js'

/** Options of `runSchedules`: how each tick's run is run (`RunOptions` less the query, which is the schedule's). */
export interface RunSchedulesOptions extends Omit<RunOptions, 'query' | 'runVault' | 'fresh' | 'signal'> {
  /** Told each run a tick started, once it returned (completed, waiting or stopped). */
  onRun?: (run: { schedule: string; at: Date; vault: string; result: RunResult }) => void
  /** Told a tick that failed (an invalid template, a worker that threw); the schedule goes on. @default a process warning */
  onError?: (error: unknown, tick: { schedule: string; at: Date }) => void
  /** Stops the schedules (as `stop()`). */
  signal?: AbortSignal
}

/** Schedules running in this process. */
export interface RunningSchedules {
  /** Stops ticking and resolves once the runs under way have returned. */
  stop(): Promise<void>
}

/** The longest a timer waits at once (Node's timers take at most about 24.8 days). */
const LONGEST_WAIT_MS = 2 ** 31 - 1

/**
 * Runs schedules in this process, with no database: at each tick of a
 * schedule's cron (5 fields, or 6 with seconds first), its template is
 * copied into a new run vault (`<runs>/<name>-<time>/`) and run there with
 * `runPlan` and `options`. A tick while the previous run of the schedule
 * is still going starts its own run beside it. Ticks missed while the
 * process could not act (paused, a laptop asleep) are one run, for the
 * latest of them, when it wakes: never one run each. `vaultplan schedule
 * run` is this over the `schedules` of `vaultplan.config.json`.
 *
 * @throws `TypeError` on a bad schedule (before any tick)
 */
export function runSchedules(schedules: readonly ScheduleDefinition[], options: RunSchedulesOptions = {}): RunningSchedules {
  return schedulesOnClock(schedules, options, Date.now)
}

/**
 * {@link runSchedules} on the clock `now` (milliseconds since the epoch):
 * the seam a test moves time through, as a process that slept sees it.
 */
export function schedulesOnClock(schedules: readonly ScheduleDefinition[], options: RunSchedulesOptions, now: () => number): RunningSchedules {
  if (!Array.isArray(schedules)) throw new TypeError(`Expected \`schedules\` to be an array, got \`${String(schedules)}\``)
  for (const schedule of schedules) checkSchedule(schedule)
  const { onRun, onError, signal, ...runOptions } = options
  const report =
    onError ??
    ((error: unknown, tick: { schedule: string }) => process.emitWarning(`vaultplan schedule ${tick.schedule}: ${(error as Error)?.message ?? error}`))
  const timers = new Set<NodeJS.Timeout>()
  const runs = new Set<Promise<void>>()
  let stopped = false

  const tick = async (schedule: ScheduleDefinition, at: Date) => {
    const checks = runOptions.checks ? Object.keys(runOptions.checks) : undefined
    const vault = await startTick(schedule, at, { fsync: runOptions.fsync ?? true, checks })
    const result = await runPlan(vault, { ...runOptions, query: schedule.query })
    onRun?.({ schedule: schedule.name, at, vault, result })
  }
  const plan = (schedule: ScheduleDefinition, after: Date) => {
    if (stopped) return
    const at = nextTick(schedule, after)
    const wait = Math.min(at.getTime() - now(), LONGEST_WAIT_MS)
    const timer = setTimeout(
      () => {
        timers.delete(timer)
        const time = now()
        // A timer cut short by the longest wait only plans again.
        if (time < at.getTime()) return plan(schedule, after)
        // Every tick due by now is one run, for the latest: a process that slept through hundreds starts one, not hundreds.
        const due = lastTick(schedule, new Date(time), at)
        const run: Promise<void> = tick(schedule, due)
          .catch((error: unknown) => report(error, { schedule: schedule.name, at: due }))
          .finally(() => runs.delete(run))
        runs.add(run)
        plan(schedule, due)
      },
      Math.max(0, wait),
    )
    timers.add(timer)
  }
  for (const schedule of schedules) plan(schedule, new Date(now()))

  const stop = async () => {
    stopped = true
    for (const timer of timers) clearTimeout(timer)
    timers.clear()
    await Promise.allSettled([...runs])
  }
  signal?.addEventListener('abort', () => void stop(), { once: true })
  return { stop }
}
