import type PgBoss from 'pg-boss'
import { sleep } from '../core/abort.js'
import type { StepInput } from '../core/types.js'
import { createLLM } from '../models/llm-client.js'
import { createWorker } from '../models/worker.js'
import type { StepOptions } from '../run/entry/stepping.js'
import { advanceHop } from './advance-hop.js'
import type { HopReport } from './hop-report.js'
import type { HopJobData } from './enqueue-run.js'
import { RunQueue, type QueueConnection, type RunQueueOptions } from './run-queue.js'
import { watchWaiting } from './watch-waiting.js'
import { takeTicks } from './schedule-run.js'

/**
 * Options of `startWorker`: the stepping calls' `llm`, `predicates`,
 * `checks` (defined by whoever runs the worker, never by a vault),
 * `maxSteps` and `fsync` for every hop it works, and its own.
 */
export interface StartWorkerOptions extends RunQueueOptions, Pick<StepOptions, 'llm' | 'predicates' | 'checks' | 'maxSteps' | 'fsync'> {
  /**
   * Hops this worker works at once (of any runs: the branches of one run may have a job each).
   *
   * @default 1
   */
  concurrency?: number
  /**
   * Works one visit, as `RunOptions.work`.
   *
   * @default the built-in LLM worker, on `llm`
   */
  work?: (step: StepInput) => Promise<string>
  /**
   * The folder the checks were read from (`vaultplan worker` passes its
   * working folder when its `vaultplan.config.json` defined checks): a run
   * whose vault is that folder or holds it is failed with `RunStateError`
   * `checks-in-vault` before any hop, as a vault must not define the
   * commands it runs.
   */
  checksFrom?: string
  /** Called after every job with what it did to its run; a listener that throws is reported and the worker goes on. */
  onHop?: (report: HopReport) => void
  /**
   * Called with an error the worker survived (the database went away, a
   * transaction failed); the job then expires and is retried.
   *
   * @default a process warning
   */
  onError?: (error: unknown) => void
  /**
   * How long an idle worker waits before asking the queue again.
   *
   * @default 500
   */
  pollIntervalMs?: number
  /**
   * How often the worker looks at the notes of waiting runs for a decision, and at the schedules for ticks.
   *
   * @default 2000
   */
  watchIntervalMs?: number
  /** Stops the worker, as `stop()` does. */
  signal?: AbortSignal
}

/** A running worker. */
export interface QueueWorker {
  /**
   * Stops taking jobs, lets the hops in flight finish (after `timeoutMs`
   * their workers' `signal` is aborted; an aborted hop is retried by another
   * worker), then disconnects.
   */
  stop(options?: { timeoutMs?: number }): Promise<void>
  /** The open queue the worker uses. */
  readonly queue: RunQueue
}

const DEFAULTS = { concurrency: 1, pollIntervalMs: 500, watchIntervalMs: 2000, stopTimeoutMs: 30_000 }

/**
 * Starts a worker that takes hop jobs from the queue (`enqueueRun`) and
 * advances each job's run by one hop; any worker may take any run's next
 * hop, so start as many as the runs need, on any machine that sees the
 * vaults at the same paths. It also queues again the runs whose waiting
 * note a person changed. Resolves once connected.
 *
 * @param connection - a postgres URL, or pg-boss options (`maintenanceIntervalSeconds` sets how soon a dead worker's hop is retried)
 * @throws `TypeError` on a bad option.
 */
export async function startWorker(connection: QueueConnection, options: StartWorkerOptions = {}): Promise<QueueWorker> {
  const { concurrency, pollIntervalMs, watchIntervalMs } = { ...DEFAULTS, ...options }
  for (const [key, value, least] of [
    ['concurrency', concurrency, 1],
    ['pollIntervalMs', pollIntervalMs, 10],
    ['watchIntervalMs', watchIntervalMs, 10],
  ] as const) {
    if (!Number.isInteger(value) || value < least) throw new TypeError(`Expected \`${key}\` to be an integer from ${least} up, got \`${String(value)}\``)
  }
  const queueOptions: RunQueueOptions = {}
  for (const key of ['queue', 'hopTimeoutSeconds', 'retryLimit', 'retryDelaySeconds'] as const)
    if (options[key] !== undefined) Object.assign(queueOptions, { [key]: options[key] })
  const work = options.work ?? createWorker(options.llm ?? createLLM())
  const stepOptions: StepOptions = {}
  if (options.llm) stepOptions.llm = options.llm
  if (options.predicates) stepOptions.predicates = options.predicates
  if (options.checks) stepOptions.checks = options.checks
  if (options.maxSteps !== undefined) stepOptions.maxSteps = options.maxSteps
  if (options.fsync !== undefined) stepOptions.fsync = options.fsync
  const onError = options.onError ?? ((error: unknown) => process.emitWarning(`vaultplan worker: ${error instanceof Error ? error.message : String(error)}`))

  const checkNames = options.checks ? Object.keys(options.checks) : undefined
  const queue = await RunQueue.open(connection, queueOptions)
  const controller = new AbortController()
  const context = { queue, work, stepOptions, signal: controller.signal, ...(options.checksFrom !== undefined && { checksFrom: options.checksFrom }) }
  const inFlight = new Set<Promise<void>>()
  let stopping = false
  let warned = false
  const sleeper = new Sleeper()

  const report = (hop: HopReport) => {
    try {
      options.onHop?.(hop)
    } catch (error) {
      if (!warned) process.emitWarning(`vaultplan worker: an onHop listener threw (reported once; the worker goes on): ${(error as Error)?.message ?? error}`)
      warned = true
    }
  }
  const take = (job: PgBoss.JobWithMetadata<HopJobData>) => {
    const hop: Promise<void> = advanceHop(context, job)
      .then(report, onError)
      .finally(() => inFlight.delete(hop))
    inFlight.add(hop)
  }
  const fetching = (async () => {
    while (!stopping) {
      const free = concurrency - inFlight.size
      if (free <= 0) {
        await Promise.race(inFlight)
        continue
      }
      let jobs: PgBoss.JobWithMetadata<HopJobData>[] = []
      try {
        jobs = await queue.boss.fetch<HopJobData>(queue.name, { batchSize: free, includeMetadata: true })
      } catch (error) {
        onError(error)
      }
      if (stopping) {
        // Taken after stop() was called: back to the queue at once rather than at its expiry.
        for (const job of jobs) await queue.boss.fail(queue.name, job.id, { message: 'the worker stopped' }).catch(onError)
        break
      }
      for (const job of jobs) take(job)
      if (jobs.length === 0) await sleeper.sleep(pollIntervalMs)
    }
  })()
  const watching = (async () => {
    while (!stopping) {
      await sleeper.sleep(watchIntervalMs)
      if (stopping) break
      await watchWaiting(queue).catch(onError)
      await takeTicks(queue, { fsync: stepOptions.fsync ?? true, checks: checkNames }).catch(onError)
    }
  })()

  let stopped: Promise<void> | undefined
  const stop = (stopOptions: { timeoutMs?: number } = {}) =>
    (stopped ??= (async () => {
      stopping = true
      sleeper.wake()
      // From now on, not after the loops end: a full worker's loop waits for a hop in flight.
      const timer = setTimeout(() => controller.abort(new Error('the worker stopped')), stopOptions.timeoutMs ?? DEFAULTS.stopTimeoutMs)
      await Promise.all([fetching, watching])
      await Promise.allSettled([...inFlight])
      clearTimeout(timer)
      await queue.close()
    })())
  if (options.signal?.aborted) void stop()
  else options.signal?.addEventListener('abort', () => void stop(), { once: true })
  return { stop, queue }
}

/** Timers that `wake()` ends early, all at once. */
class Sleeper {
  private alarm = new AbortController()

  /** Waits `ms`, or until {@link wake}. */
  async sleep(ms: number): Promise<void> {
    // Cut short by `wake` is a wait ended, not a failure.
    await sleep(ms, this.alarm.signal).catch(() => undefined)
  }

  wake(): void {
    this.alarm.abort()
    this.alarm = new AbortController()
  }
}
