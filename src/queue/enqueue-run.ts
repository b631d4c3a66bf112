import { realpath } from 'node:fs/promises'
import { resolve } from 'node:path'
import type PgBoss from 'pg-boss'
import { withQueue, type QueueConnection, type RunQueue, type RunQueueOptions, type Sql } from './run-queue.js'

/** What a hop job carries: the vault (an absolute path every worker sees) and, for a run's first hop, its query. */
export interface HopJobData {
  vault: string
  query?: string
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
  /** The job of the run's next hop. */
  jobId: string
  /** `true` when the run already had a job: no second one was sent (a run never has two). */
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
      const { rows } = await sql.query<{ state: string; job_id: string | null }>(
        `SELECT state, job_id FROM ${queue.runs} WHERE queue = $1 AND vault = $2 FOR UPDATE`,
        [queue.name, vault],
      )
      const row = rows[0]
      if (row?.state === 'queued' && row.job_id !== null && (await hasLiveJob(queue, row.job_id, db))) return { vault, jobId: row.job_id, alreadyQueued: true }
      if (row) await cancelDeadline(queue, row, db)
      const jobId = await sendHop(queue, { vault, ...(query === undefined ? {} : { query }) }, db)
      await sql.query(
        `UPDATE ${queue.runs} SET state = 'queued', job_id = $3, query = COALESCE($4, query), waiting = NULL, error = NULL, updated_on = now() WHERE queue = $1 AND vault = $2`,
        [queue.name, vault, jobId, query ?? null],
      )
      return { vault, jobId, alreadyQueued: false }
    }),
  )
}

/**
 * Queues a run again after a person decided (call it after `decide`), or
 * after a failure or a budget stop was dealt with: a run recorded as
 * `waiting`, `failed` or `stopped` gets a job for its next hop. Resolves to
 * `true` when a job was sent, `false` when the run has a job already, has
 * completed, or was never queued. Workers also notice a tick in a waiting
 * note on their own (by the note's stamp); calling both queues one job.
 *
 * @throws `TypeError` when `vault` is not a non-empty string.
 */
export async function resumeRun(connection: QueueConnection | RunQueue, vault: string, options: RunQueueOptions = {}): Promise<boolean> {
  if (typeof vault !== 'string' || vault === '') throw new TypeError(`Expected \`vault\` to be the path of a run vault, got \`${String(vault)}\``)
  const run = await runVault(vault)
  return withQueue(connection, options, (queue) => resumeInQueue(queue, run, ['waiting', 'failed', 'stopped']))
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

/** Sends a job for a run in one of `from` states, in one transaction with the row's change; whether it did. */
export function resumeInQueue(queue: RunQueue, vault: string, from: string[]): Promise<boolean> {
  return queue.transaction(async (sql, db) => {
    const { rows } = await sql.query<{ state: string; job_id: string | null }>(
      `SELECT state, job_id FROM ${queue.runs} WHERE queue = $1 AND vault = $2 AND state = ANY($3) FOR UPDATE`,
      [queue.name, vault, from],
    )
    const row = rows[0]
    if (!row) return false
    await cancelDeadline(queue, row, db)
    const jobId = await sendHop(queue, { vault }, db)
    await setQueued(sql, queue, vault, jobId)
    return true
  })
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

/** Records that a run has a job now. */
export async function setQueued(sql: Sql, queue: RunQueue, vault: string, jobId: string): Promise<void> {
  await sql.query(`UPDATE ${queue.runs} SET state = 'queued', job_id = $3, waiting = NULL, error = NULL, updated_on = now() WHERE queue = $1 AND vault = $2`, [
    queue.name,
    vault,
    jobId,
  ])
}

/** Whether a job is still to be done or being done (not completed, failed, cancelled or gone). */
async function hasLiveJob(queue: RunQueue, jobId: string, db: PgBoss.Db): Promise<boolean> {
  const job = await queue.boss.getJobById(queue.name, jobId, { db, includeArchive: false })
  return job !== null && (job.state === 'created' || job.state === 'retry' || job.state === 'active')
}

/** A waiting run's job is the one its `wait:` deadline starts: the run queued again now, it is cancelled (a run never has two). */
async function cancelDeadline(queue: RunQueue, row: { state: string; job_id: string | null }, db: PgBoss.Db): Promise<void> {
  if (row.state === 'waiting' && row.job_id !== null) await queue.boss.cancel(queue.name, row.job_id, { db })
}
