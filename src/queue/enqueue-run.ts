import { realpath } from 'node:fs/promises'
import { resolve } from 'node:path'
import type PgBoss from 'pg-boss'
import { withQueue, type QueueConnection, type RunQueue, type RunQueueOptions, type Sql } from './run-queue.js'
import { liveJobs, lockRun, type RunRow } from './run-rows.js'
import type { RunState } from './runs-table.js'

/** What a hop job carries: the vault (an absolute path every worker sees) and, for a run's first hop, its query. */
export interface HopJobData {
  vault: string
  query?: string
  /**
   * The agent the job claims its visit as (`nextStep`'s `agent`): the one of
   * the job that claimed the visit and handed it on, or of a job that
   * stopped and whose claim this one took over. Without it, `queue:<job id>`.
   */
  agent?: string
}

/** Options of `enqueueRun`. */
export interface EnqueueRunOptions extends RunQueueOptions {
  /** The run vault: a folder on storage every worker sees, at the same path (made absolute here). */
  vault: string
  /** What the run is for; required for a vault with no run yet, the recorded one is used on resume. */
  query?: string
}

/** What `enqueueRun` did. */
export interface EnqueuedRun {
  /** The vault, by its real path: the run's name in the queue. */
  vault: string
  /** The job of the run's next hop (when the run had jobs already, the first of them). */
  jobId: string
  /** `true` when the run already had a job: no other one was sent (its jobs send the ones its branches need). */
  alreadyQueued: boolean
}

/**
 * Queues a run: its next hop becomes a job that any worker
 * (`startWorker`, `vaultplan worker`) may take; each hop then sends the
 * next. A run that already has a job keeps it and gets no second one; a
 * run recorded as waiting, stopped, failed or completed is queued again
 * (it resumes from its vault as `runPlan` would).
 *
 * @param connection - a postgres URL, pg-boss options, or an open `RunQueue`
 * @throws `TypeError` when `vault` is not a non-empty string, or on a bad queue setting.
 */
export async function enqueueRun(connection: QueueConnection | RunQueue, options: EnqueueRunOptions): Promise<EnqueuedRun> {
  const { vault: given, query, ...queueOptions } = options ?? ({} as EnqueueRunOptions)
  if (typeof given !== 'string' || given === '') throw new TypeError(`Expected \`vault\` to be the path of a run vault, got \`${String(given)}\``)
  if (query !== undefined && typeof query !== 'string') throw new TypeError(`Expected \`query\` to be a string, got \`${String(query)}\``)
  const vault = await runVault(given)
  return withQueue(connection, queueOptions, (queue) =>
    queue.transaction(async (sql, db) => {
      // The row first, so that two calls for one new vault queue behind each other here.
      await sql.query(`INSERT INTO ${queue.runs} (queue, vault, state, query) VALUES ($1, $2, 'queued', $3) ON CONFLICT DO NOTHING`, [
        queue.name,
        vault,
        query ?? null,
      ])
      const row = (await lockRun(sql, queue, vault))!
      const live = row.state === 'queued' ? await liveJobs(sql, queue, row.jobs) : []
      if (live.length > 0) return { vault, jobId: live[0]!.id, alreadyQueued: true }
      const jobId = await queueAgain(sql, db, queue, vault, row, query)
      await sql.query(`UPDATE ${queue.runs} SET query = COALESCE($3, query) WHERE queue = $1 AND vault = $2`, [queue.name, vault, query ?? null])
      return { vault, jobId, alreadyQueued: false }
    }),
  )
}

/**
 * Queues a run again after a person decided (call it after `decide`), or
 * after a failure or a budget stop was dealt with: a run recorded as
 * `waiting`, `failed` or `stopped`, or queued with no job left (its jobs'
 * retries were spent by dead workers), gets a job for its next hop; the job
 * takes back the claims of the run's jobs that stopped. Resolves to `true`
 * when a job was sent, `false` when the run has a job already, has
 * completed, or was never queued. Workers also notice a tick in a waiting
 * note on their own (by the note's stamp); calling both queues one job.
 *
 * @throws `TypeError` when `vault` is not a non-empty string.
 */
export async function resumeRun(connection: QueueConnection | RunQueue, vault: string, options: RunQueueOptions = {}): Promise<boolean> {
  if (typeof vault !== 'string' || vault === '') throw new TypeError(`Expected \`vault\` to be the path of a run vault, got \`${String(vault)}\``)
  const run = await runVault(vault)
  return withQueue(connection, options, (queue) => resumeInQueue(queue, run, ['waiting', 'failed', 'stopped', 'queued']))
}

/**
 * The name the queue knows a run by: its vault's real path. By any other
 * path (a symlink, a folder linked on the way) one vault would get a row
 * and a job chain per path, and every visit worked once per chain. A vault
 * that does not exist (yet) keeps its absolute path.
 */
async function runVault(vault: string): Promise<string> {
  const path = resolve(vault)
  return realpath(path).catch(() => path)
}

/**
 * Sends a job for a run in one of `from` states (a `queued` one only when none of its jobs is live), in one
 * transaction with the row's change; whether it did. The job takes over the claims of the run's jobs that
 * stopped (a failure), so the run goes on where they were.
 */
export function resumeInQueue(queue: RunQueue, vault: string, from: RunState[]): Promise<boolean> {
  return queue.transaction(async (sql, db) => {
    const row = await lockRun(sql, queue, vault)
    if (!row || !from.includes(row.state)) return false
    if (row.state === 'queued' && (await liveJobs(sql, queue, row.jobs)).length > 0) return false
    await queueAgain(sql, db, queue, vault, row)
    return true
  })
}

/**
 * Sends a job for a run and records it with the run's jobs that are still
 * live (a run queued again after a failure may have jobs that finish the
 * visits they were working); a waiting run's deadline job is cancelled
 * first, as the new job looks at the run now.
 */
async function queueAgain(sql: Sql, db: PgBoss.Db, queue: RunQueue, vault: string, row: RunRow, query?: string): Promise<string> {
  if (row.state === 'waiting' && row.job_id !== null) await queue.boss.cancel(queue.name, row.job_id, { db })
  const live = row.state === 'waiting' ? [] : await liveJobs(sql, queue, row.jobs)
  const jobId = await sendHop(queue, { vault, ...(query === undefined ? {} : { query }) }, db)
  await sql.query(
    `UPDATE ${queue.runs} SET state = 'queued', jobs = $3::uuid[], job_id = $4, waiting = NULL, error = NULL, updated_on = now() WHERE queue = $1 AND vault = $2`,
    [queue.name, vault, [...live.map((job) => job.id), jobId], jobId],
  )
  return jobId
}

/**
 * Sends the job of a run's next hop through `db` (so that it commits with the caller's transaction); with
 * `startAfter`, a job no worker takes before then (a waiting note's `wait:` deadline).
 */
export async function sendHop(queue: RunQueue, data: HopJobData, db: PgBoss.Db, startAfter?: Date): Promise<string> {
  const id = await queue.boss.send(queue.name, data as object, startAfter ? { db, startAfter } : { db })
  if (id === null) throw new Error(`pg-boss sent no job for \`${data.vault}\` on queue \`${queue.name}\``)
  return id
}
