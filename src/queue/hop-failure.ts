import type PgBoss from 'pg-boss'
import { PlanValidationError, RunStateError, StepError } from '../core/errors.js'
import { ModelConfigError } from '../models/llm-client.js'
import type { HopReport } from './hop-report.js'
import { affected, Superseded } from './commit-hop.js'
import type { HopJobData } from './enqueue-run.js'
import type { RunQueue, Sql } from './run-queue.js'
import { liveJobs, lockRun } from './run-rows.js'

/** RunStateError codes that a later attempt may not meet again: the hop is retried, the others need a person. */
const PASSING_STATES = new Set(['vault-locked', 'vault-lock-lost'])

/** A worker's failure on a note whose `retries:` decided it: another attempt of the job after `delayMs`, or none (the run fails). */
export class NoteFailure extends Error {
  constructor(
    error: StepError,
    readonly delayMs: number | undefined,
  ) {
    super(error.message, { cause: error })
  }
}

/**
 * A hop that threw. Problems in the notes, the run's state or the model
 * configuration need a person: the run is recorded as failed with the
 * message and not retried (`resumeRun` queues it again after the fix).
 * Anything else (the worker threw, a model or the disk failed, the vault
 * was busy) is failed in pg-boss, which retries it; the last retry's
 * failure fails the run. A worker's failure on a note with `retries:` is
 * retried as the note says, or fails the run when it says no more. The
 * run's other jobs (other branches) save what they are working on and
 * send no more jobs once it is failed.
 */
export async function recordFailure(queue: RunQueue, job: PgBoss.JobWithMetadata<HopJobData>, error: unknown): Promise<Pick<HopReport, 'outcome' | 'error'>> {
  const message = error instanceof Error ? error.message : String(error)
  const needsPerson =
    error instanceof PlanValidationError ||
    error instanceof ModelConfigError ||
    error instanceof TypeError ||
    (error instanceof RunStateError && !PASSING_STATES.has(error.code))
  const last = job.retryCount >= job.retryLimit
  const vault = job.data.vault
  try {
    return await queue.transaction(async (sql, db) => {
      if (error instanceof NoteFailure && !(await retryAs(sql, queue, job, error.delayMs))) throw new Superseded()
      const done = needsPerson
        ? await queue.boss.complete(queue.name, job.id, { failed: message }, { db })
        : await queue.boss.fail(queue.name, job.id, { message }, { db })
      if (affected(done) !== 1) throw new Superseded()
      const failed = needsPerson || (error instanceof NoteFailure ? error.delayMs === undefined : last)
      const row = await lockRun(sql, queue, vault)
      // A retried job stays one of the run's jobs; a run another job failed stays failed, with its message.
      const jobs = failed
        ? (await liveJobs(sql, queue, row?.jobs ?? [])).filter((other) => other.id !== job.id).map((other) => other.id)
        : (row?.jobs ?? [job.id])
      const keep = !failed && row?.state === 'failed'
      await sql.query(`UPDATE ${queue.runs} SET state = $3, jobs = $4::uuid[], error = $5, updated_on = now() WHERE queue = $1 AND vault = $2`, [
        queue.name,
        vault,
        failed || keep ? 'failed' : 'queued',
        jobs,
        keep ? (row?.error ?? message) : message,
      ])
      return { outcome: failed ? 'failed' : 'retrying', error: message }
    })
  } catch (caught) {
    if (caught instanceof Superseded) return { outcome: 'superseded', error: message }
    throw caught
  }
}

/**
 * Sets how pg-boss retries this job when it is failed next: after `delayMs`
 * (with one retry more than the job had, so that a note's retries spend
 * none of those kept for dead workers), or, with no delay, never. pg-boss
 * 10 takes these settings only when a job is sent, and a hop's note is
 * known only once the job is worked: they are set on the job's row, in the
 * transaction that fails it. `false` when this attempt no longer holds the
 * job (it expired and was taken over).
 */
async function retryAs(sql: Sql, queue: RunQueue, job: PgBoss.JobWithMetadata<HopJobData>, delayMs: number | undefined): Promise<boolean> {
  const settings =
    delayMs === undefined ? 'retry_limit = retry_count' : `retry_limit = retry_limit + 1, retry_delay = ${Math.ceil(delayMs / 1000)}, retry_backoff = false`
  const { rowCount } = await sql.query(`UPDATE ${queue.schema}.job SET ${settings} WHERE name = $1 AND id = $2 AND state = 'active' AND retry_count = $3`, [
    queue.name,
    job.id,
    job.retryCount,
  ])
  return rowCount === 1
}
