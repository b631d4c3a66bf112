import { withQueue, type QueueConnection, type RunQueue, type RunQueueOptions } from './run-queue.js'

/** The runs of a queue by where they stand. */
export interface QueueStatus {
  /** The pg-boss queue. */
  queue: string
  /** Runs whose next hop waits for a worker (a new job, or a retry after a failure or a dead worker). */
  queued: number
  /** Runs whose hop a worker holds now. */
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
 * Counts the runs of a queue: queued, in flight, waiting for a person,
 * completed, stopped, failed (with the latest failures and why). Changes
 * no run (a connection installs pg-boss's schema and the queue when they
 * are missing, as every connection does).
 *
 * @param connection - a postgres URL, pg-boss options, or an open `RunQueue`
 */
export async function readQueueStatus(connection: QueueConnection | RunQueue, options: RunQueueOptions = {}): Promise<QueueStatus> {
  return withQueue(connection, options, async (queue) => {
    // A queued run's job tells whether it waits for a worker or is being worked; a job that failed
    // for good (its retries spent by dead workers) leaves a run that needs a person.
    const { rows } = await queue.query<{ state: string; count: string }>(
      `SELECT CASE WHEN r.state <> 'queued' THEN r.state
                   WHEN j.state IN ('created', 'retry') THEN 'queued'
                   WHEN j.state = 'active' THEN 'inFlight'
                   ELSE 'failed' END AS state,
              count(*) AS count
         FROM ${queue.runs} r LEFT JOIN ${queue.schema}.job j ON j.name = r.queue AND j.id = r.job_id
        WHERE r.queue = $1
        GROUP BY 1`,
      [queue.name],
    )
    const counts: Record<string, number> = Object.fromEntries(rows.map((row) => [row.state, Number(row.count)]))
    const failures = await queue.query<{ vault: string; error: string | null; job_state: string | null }>(
      `SELECT r.vault, r.error, j.state AS job_state
         FROM ${queue.runs} r LEFT JOIN ${queue.schema}.job j ON j.name = r.queue AND j.id = r.job_id
        WHERE r.queue = $1 AND (r.state = 'failed' OR (r.state = 'queued' AND (j.state IS NULL OR j.state NOT IN ('created', 'retry', 'active'))))
        ORDER BY r.updated_on DESC LIMIT ${SHOWN_FAILURES}`,
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
