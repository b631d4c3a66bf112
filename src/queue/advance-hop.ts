import { join } from 'node:path'
import type PgBoss from 'pg-boss'
import { PlanValidationError, RunStateError, StepError } from '../core/errors.js'
import type { StepInput } from '../core/types.js'
import { ModelConfigError } from '../models/llm-client.js'
import { failureEdge } from '../models/transitions.js'
import { completeStep, nextStep, type Step, type StepOptions } from '../run/stepping.js'
import type { WorkFailure } from '../run/tree-vaults.js'
import { afterWorkerFailure, workVisit } from '../run/work-visit.js'
import { stampOf } from '../vault/fs-atomic.js'
import { sendHop, type HopJobData } from './enqueue-run.js'
import type { RunQueue, Sql } from './run-queue.js'
import type { WaitingStamp } from './runs-table.js'

/** What one job did to its run, as `onHop` reports it and `vaultplan worker` logs it. */
export interface HopReport {
  /** The run vault, absolute. */
  vault: string
  jobId: string
  /** The run id of the trace, once the run has one. */
  runId?: string
  /** The visit this job worked (its note by its path from the top vault), when it worked one (a job that only followed a person's decision, or found the run ended, worked none). */
  worked?: { node: string; visit: number; step: number; key: string }
  /**
   * What the run does now: `queued` (the next hop's job is sent), `waiting`
   * (for a person; no job until the decision, or one that starts at its `wait:`
   * deadline to take the `timeout` edge), `completed`, `stopped` (a
   * budget), `failed` (the notes or the retries need a person), `retrying`
   * (the hop failed; pg-boss tries it again), or `superseded` (the job had
   * expired and was taken over: another attempt completes it, and this one
   * changes nothing in the queue; the vault lock and the step's key kept
   * the vault consistent).
   */
  outcome: 'queued' | 'waiting' | 'completed' | 'stopped' | 'failed' | 'retrying' | 'superseded'
  /** The node the next hop works (`queued`, by its path from the top vault), that waits (`waiting`), or the terminal (`completed`). */
  node?: string
  /** Why the hop failed (`failed`, `retrying`), or the budget that ran out (`stopped`). */
  error?: string
  /** Wall time of the job. */
  ms: number
}

/** What a worker brings to each hop. */
export interface HopContext {
  queue: RunQueue
  work: (step: StepInput) => Promise<string>
  stepOptions: StepOptions
  signal: AbortSignal
}

/** RunStateError codes that a later attempt may not meet again: the hop is retried, the others need a person. */
const PASSING_STATES = new Set(['vault-locked', 'vault-lock-lost'])

/** The job was taken over while this worker held it (it expired); its transaction must write nothing. */
class Superseded extends Error {}

/** A worker's failure on a note whose `retries:` decided it: another attempt of the job after `delayMs`, or none (the run fails). */
class NoteFailure extends Error {
  constructor(
    error: StepError,
    readonly delayMs: number | undefined,
  ) {
    super(error.message, { cause: error })
  }
}

/**
 * Advances one run by one hop: `nextStep` claims the visit to work (the
 * same one again when a killed worker left it claimed), the worker works
 * it, `completeStep` saves the output and judges the transition; then one
 * transaction completes this job and sends the next hop's job, so the run
 * always has exactly one. A run that now waits for a person, or has ended,
 * gets no next job.
 */
export async function advanceHop(context: HopContext, job: PgBoss.JobWithMetadata<HopJobData>): Promise<HopReport> {
  const started = Date.now()
  const { queue } = context
  const vault = job.data.vault
  const base = { vault, jobId: job.id }
  const options: StepOptions = { ...context.stepOptions, signal: context.signal }
  if (job.data.query !== undefined) options.query = job.data.query
  let worked: HopReport['worked']
  let after: Step
  let stamps: WaitingStamp[] | undefined
  try {
    const step = await nextStep(vault, options)
    after = step
    if (step.kind === 'work') {
      worked = { node: pathOf(step), visit: step.visit, step: step.step, key: step.key }
      const output = await workHop(context, job, step)
      after = await completeOrFollow(vault, step.key, output, options)
    }
    if (after.kind === 'waiting') ({ step: after, stamps } = await settleWaiting(vault, after, options))
  } catch (error) {
    const report = await recordFailure(queue, job, error)
    return { ...base, ...(worked ? { worked } : {}), ...report, ms: Date.now() - started }
  }
  const outcome = await commitHop(queue, job, after, worked !== undefined, stamps)
  const runId = after.runId
  return { ...base, runId, ...(worked ? { worked } : {}), ...outcome, ms: Date.now() - started }
}

/**
 * Works the hop's visit. A worker that throws on a note that says how its
 * failures go (`retries:`, or a `failed` edge it takes) meets the rule
 * `runPlan` follows, each attempt of this job one attempt of the worker:
 * another attempt after the backoff (a `NoteFailure` with its delay, which
 * pg-boss performs), the `failed` edge (the failure returned, to be
 * recorded), or the `StepError` with no attempt left (a `NoteFailure`
 * without delay). On other notes the `StepError` is the queue's to retry
 * (`RunQueueOptions.retryLimit`).
 */
async function workHop(context: HopContext, job: PgBoss.JobWithMetadata<HopJobData>, step: Extract<Step, { kind: 'work' }>): Promise<string | WorkFailure> {
  try {
    return await workVisit(step, context.work, { vault: job.data.vault, plan: step.plan, signal: context.signal })
  } catch (error) {
    if (!(error instanceof StepError) || (step.node.retries === undefined && !failureEdge(step.node))) throw error
    // Every attempt of the job counts, one whose worker died included: nextStep handed each the same visit, under the same key.
    const next = afterWorkerFailure(step.node, job.retryCount + 1, error)
    if (next.kind === 'failed') return next.failure
    throw new NoteFailure(error, next.kind === 'retry' ? next.delayMs : undefined)
  }
}

/**
 * Completes the visit (a worker's failure is recorded as `runPlan` records
 * it: `completeStep` hands the result on to the run's driver as it is);
 * when another worker completed it first (this job had expired and was
 * taken over), the run is already past it: the step that follows is asked
 * for instead, so the chain of jobs goes on.
 */
async function completeOrFollow(vault: string, key: string, output: string | WorkFailure, options: StepOptions): Promise<Step> {
  try {
    return await completeStep(vault, key, typeof output === 'string' ? { output } : output, options)
  } catch (error) {
    if (error instanceof RunStateError && error.code === 'stale-step') return nextStep(vault, options)
    throw error
  }
}

/**
 * Takes the stamps of the waiting notes, then asks the run once more: a
 * box ticked before the stamps were taken shows now, and one ticked after
 * changes a stamp, which the workers' watcher notices. Either way no
 * decision is missed.
 */
async function settleWaiting(vault: string, step: Extract<Step, { kind: 'waiting' }>, options: StepOptions): Promise<{ step: Step; stamps?: WaitingStamp[] }> {
  const stamps = await stampsOf(
    vault,
    step.waiting.map((note) => note.file),
  )
  const again = await nextStep(vault, options)
  if (again.kind !== 'waiting') return { step: again }
  const files = new Set(step.waiting.map((note) => note.file))
  // Another note waits now (a parallel branch reached its own): stamp those too.
  if (again.waiting.some((note) => !files.has(note.file))) return settleWaiting(vault, again, options)
  return { step: again, stamps }
}

/** The stamps of notes, for the watcher to compare with later. */
export async function stampsOf(vault: string, files: string[]): Promise<WaitingStamp[]> {
  return Promise.all(
    files.map(async (file) => {
      const stamp = await stampOf(join(vault, file)).catch(() => undefined)
      return { file, stamp: stamp ? `${stamp.mtimeMs}:${stamp.size}:${stamp.ino}` : 'missing' }
    }),
  )
}

/** Completes this job and queues the next hop (or records the wait or the end), all in one transaction. */
async function commitHop(
  queue: RunQueue,
  job: PgBoss.JobWithMetadata<HopJobData>,
  after: Step,
  worked: boolean,
  stamps: WaitingStamp[] | undefined,
): Promise<Pick<HopReport, 'outcome' | 'node' | 'error'>> {
  const vault = job.data.vault
  try {
    return await queue.transaction(async (sql, db) => {
      // Only the holder of the job's active attempt completes it. When the job expired while this worker
      // held it, it waits for its retry, or another worker holds it, or finished it: that one goes on.
      const done = await queue.boss.complete(queue.name, job.id, summary(after), { db })
      if (affected(done) !== 1) throw new Superseded()
      const record = (state: string, fields: { node?: string; jobId?: string | null; waiting?: WaitingStamp[]; error?: string }) =>
        sql.query(
          `UPDATE ${queue.runs} SET state = $3, job_id = $4, run_id = $5, node = $6, waiting = $7, error = $8, hops = hops + $9, updated_on = now() WHERE queue = $1 AND vault = $2`,
          [
            queue.name,
            vault,
            state,
            fields.jobId ?? null,
            after.runId,
            fields.node ?? null,
            fields.waiting ? JSON.stringify(fields.waiting) : null,
            fields.error ?? null,
            worked ? 1 : 0,
          ],
        )
      switch (after.kind) {
        case 'work': {
          const jobId = await sendHop(queue, { vault }, db)
          await record('queued', { jobId, node: pathOf(after) })
          return { outcome: 'queued', node: pathOf(after) }
        }
        case 'waiting': {
          const node = after.waiting.map((note) => note.node).join(', ')
          // A `wait:` deadline with a `timeout` edge: a job no worker takes before it, which then takes the edge.
          const due = deadlineOf(after)
          const jobId = due === undefined ? null : await sendHop(queue, { vault }, db, due)
          await record('waiting', { node, waiting: stamps ?? [], jobId })
          return { outcome: 'waiting', node }
        }
        case 'completed':
          await record('completed', { node: after.node })
          return { outcome: 'completed', node: after.node }
        case 'stopped':
          await record('stopped', { node: after.stop.node, error: after.reason })
          return { outcome: 'stopped', node: after.stop.node, error: after.reason }
        case 'busy': {
          // Agents hold every ready visit: the run is looked at again when the first lease ends.
          const node = after.claims.map((item) => item.node).join(', ')
          const until = Math.min(...after.claims.map((item) => Date.parse(item.claim?.until ?? '') || Date.now()))
          const jobId = await sendHop(queue, { vault }, db, new Date(until))
          await record('queued', { jobId, node })
          return { outcome: 'queued', node }
        }
      }
    })
  } catch (error) {
    if (error instanceof Superseded) return { outcome: 'superseded' }
    throw error
  }
}

/**
 * A hop that threw. Problems in the notes, the run's state or the model
 * configuration need a person: the run is recorded as failed with the
 * message and not retried (`resumeRun` queues it again after the fix).
 * Anything else (the worker threw, a model or the disk failed, the vault
 * was busy) is failed in pg-boss, which retries it; the last retry's
 * failure fails the run. A worker's failure on a note with `retries:` is
 * retried as the note says, or fails the run when it says no more.
 */
async function recordFailure(queue: RunQueue, job: PgBoss.JobWithMetadata<HopJobData>, error: unknown): Promise<Pick<HopReport, 'outcome' | 'error'>> {
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
      await sql.query(`UPDATE ${queue.runs} SET state = $3, job_id = $4, error = $5, updated_on = now() WHERE queue = $1 AND vault = $2`, [
        queue.name,
        vault,
        failed ? 'failed' : 'queued',
        failed ? null : job.id,
        message,
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

/** Rows a pg-boss `complete` or `fail` changed (its typings say `void`; it resolves to `{ jobs, requested, affected }`). */
function affected(result: unknown): number {
  return (result as { affected?: number } | undefined)?.affected ?? 0
}

/** The first `wait:` deadline of a waiting step whose note takes a `timeout` edge then (an overdue note has none). */
function deadlineOf(step: Extract<Step, { kind: 'waiting' }>): Date | undefined {
  const due = step.waiting
    .filter((note) => note.deadline !== undefined && !note.overdue && note.choices.includes('timeout'))
    .map((note) => Date.parse(note.deadline!))
  return due.length === 0 ? undefined : new Date(Math.min(...due))
}

/** What the completed job keeps as its output: where the run went. */
function summary(step: Step): object {
  switch (step.kind) {
    case 'work':
      return { next: step.node.id, visit: step.visit, step: step.step }
    case 'waiting':
      return { waiting: step.waiting.map((note) => note.node) }
    case 'completed':
      return { completed: step.node }
    case 'stopped':
      return { stopped: step.stop }
    case 'busy':
      return { busy: step.claims.map((item) => item.node) }
  }
}

/** A visit's note by its path from the top vault (`research/find` inside a subplan). */
function pathOf(step: Extract<Step, { kind: 'work' }>): string {
  return step.plan === undefined ? step.node.id : `${step.plan}/${step.node.id}`
}
