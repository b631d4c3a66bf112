import type { RunQueue, Sql } from './run-queue.js'
import type { RunState } from './runs-table.js'

/* Reading a run's row and its jobs, in the transactions that change them. */

/** A run's row, as a transaction that changes it reads it. */
export interface RunRow {
  state: RunState
  /** The run's jobs not known to have ended (each hop removes its own and adds those it sends). */
  jobs: string[]
  /** The job sent last. */
  job_id: string | null
  error: string | null
}

/** A job of a run that pg-boss has still to do or is doing, with the agent it claims as. */
export interface LiveJob {
  id: string
  state: 'created' | 'retry' | 'active'
  agent: string
}

/** Reads a run's row and locks it until the transaction ends: the run's jobs commit one at a time. */
export async function lockRun(sql: Sql, queue: RunQueue, vault: string): Promise<RunRow | undefined> {
  const { rows } = await sql.query<RunRow>(`SELECT state, jobs::text[] AS jobs, job_id, error FROM ${queue.runs} WHERE queue = $1 AND vault = $2 FOR UPDATE`, [
    queue.name,
    vault,
  ])
  return rows[0]
}

/** Which of `ids` pg-boss has still to do or is doing, with the agent each claims as. */
export async function liveJobs(sql: Sql, queue: RunQueue, ids: string[]): Promise<LiveJob[]> {
  if (ids.length === 0) return []
  const { rows } = await sql.query<LiveJob>(
    `SELECT id::text AS id, state, COALESCE(data->>'agent', 'queue:' || id::text) AS agent FROM ${queue.schema}.job
      WHERE name = $1 AND id = ANY($2::uuid[]) AND state IN ('created', 'retry', 'active') ORDER BY created_on, id`,
    [queue.name, ids],
  )
  return rows
}
