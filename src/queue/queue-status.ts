import { withQueue, type QueueConnection, type RunQueue, type RunQueueOptions } from './run-queue.js'

/** The runs of a queue by where they stand. */
export interface QueueStatus {
  /** The pg-boss queue. */
  queue: string
  /** Runs whose jobs wait for workers (new jobs, or retries after a failure or a dead worker). */
  queued: number
  /** Runs a worker works on now (at least one of their jobs is active: a run's branches may have a job each). */
  inFlight: number
  /** Runs waiting for a person; they hold no worker. */
  waiting: number
  completed: number
  /** Runs a budget stopped. */
  stopped: number
  /** Runs that need a person: their notes or state are wrong, or their retries ran out. */
  failed: number
  /** The failed runs (at most 20, the latest first), each with why. */
  failures: { vault: string; error: string }[]
}

const SHOWN_FAILURES = 20

/**
 * Each run of the queue (`$1`) with where it stands: its recorded state, or
 * for a queued run `inFlight` (a job of it is active), `queued` (its jobs
 * wait for workers) or `failed` (none is live); `job_state` is `failed`
 * when one of its jobs failed for good, to say why.
 */
function runStandsSql(queue: RunQueue): string {
  return `SELECT r.vault, r.error, r.updated_on,
                 CASE WHEN r.state <> 'queued' THEN r.state
                      WHEN bool_or(j.state = 'active') THEN 'inFlight'
                      WHEN bool_or(j.state IN ('created', 'retry')) THEN 'queued'
                      ELSE 'failed' END AS state,
                 CASE WHEN bool_or(j.state = 'failed') THEN 'failed' END AS job_state
            FROM ${queue.runs} r LEFT JOIN ${queue.schema}.job j ON j.name = r.queue AND j.id = ANY(r.jobs)
           WHERE r.queue = $1
           GROUP BY r.queue, r.vault`
}

/**
 * Counts the runs of a queue: queued, in flight, waiting for a person,
 * completed, stopped, failed (with the latest failures and why). Changes
 * no run (a connection installs pg-boss's schema and the queue when they
 * are missing, as every connection does).
 *
 * @param connection - a postgres URL, pg-boss options, or an open `RunQueue`
 */
export async function readQueueStatus(connection: QueueConnection | RunQueue, options: RunQueueOptions = {}): Promise<QueueStatus> {
  return withQueue(connection, options, async (queue) => {
    // A queued run's jobs tell whether it waits for a worker or is being worked (one of them active); a run
    // whose jobs all failed for good (their retries spent by dead workers) needs a person.
    const { rows } = await queue.query<{ state: string; count: string }>(
      `SELECT state, count(*) AS count FROM (${runStandsSql(queue)}) stands GROUP BY state`,
      [queue.name],
    )
    const counts: Record<string, number> = Object.fromEntries(rows.map((row) => [row.state, Number(row.count)]))
    const failures = await queue.query<{ vault: string; error: string | null; job_state: string | null }>(
      `SELECT vault, error, job_state FROM (${runStandsSql(queue)}) stands WHERE state = 'failed' ORDER BY updated_on DESC LIMIT ${SHOWN_FAILURES}`,
      [queue.name],
    )
    return {
      queue: queue.name,
      queued: counts.queued ?? 0,
      inFlight: counts.inFlight ?? 0,
      waiting: counts.waiting ?? 0,
      completed: counts.completed ?? 0,
      stopped: counts.stopped ?? 0,
      failed: counts.failed ?? 0,
      failures: failures.rows.map((row) => ({
        vault: row.vault,
        error: row.error ?? (row.job_state === 'failed' ? 'its hop failed on every retry (the worker died or timed out)' : 'its job is gone'),
      })),
    }
  })
}
