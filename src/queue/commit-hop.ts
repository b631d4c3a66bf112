import type PgBoss from 'pg-boss'
import type { WorkItem } from '../run/core/claims.js'
import type { Step } from '../run/entry/stepping.js'
import type { HopReport } from './hop-report.js'
import { sendHop, type HopJobData } from './enqueue-run.js'
import { busyRecheck, itemsToSend } from './hop-claims.js'
import type { RunQueue } from './run-queue.js'
import { liveJobs, lockRun } from './run-rows.js'
import type { RunState, WaitingStamp } from './runs-table.js'

/** The job was taken over while this worker held it (it expired); its transaction must write nothing. */
export class Superseded extends Error {}

/** What a hop did, for its commit. */
export interface HopDone {
  /** Where the run stands for the job's agent after the hop. */
  after: Step
  /** The agent the job claimed as. */
  agent: string
  /** Whether the job worked a visit. */
  worked: boolean
  /** The stamps of the waiting notes, when the run waits. */
  stamps?: WaitingStamp[] | undefined
  /** The run's ready items with their claims, when the hop claimed a visit in a subplan (other branches may be ready). */
  ready: WorkItem[]
}

/**
 * Completes this job and, in the same transaction, sends the jobs the run
 * needs next and records the run: the job that goes on with the visit this
 * one claimed (under the same agent, so it finds its claim), one for each
 * ready visit nobody holds (another branch, for an idle worker), a job at
 * a `wait:` deadline, or none (the run waits for a person with no job
 * left, it ended, or the run's other jobs hold its ready work). The run's
 * row is locked meanwhile: its jobs commit one at a time, each seeing the
 * jobs the others sent. A run recorded as failed gets no new job: the
 * visit this one worked is saved, and `resumeRun` goes on from there.
 */
export async function commitHop(
  queue: RunQueue,
  job: PgBoss.JobWithMetadata<HopJobData>,
  hop: HopDone,
): Promise<Pick<HopReport, 'outcome' | 'node' | 'error' | 'fannedOut'>> {
  const vault = job.data.vault
  const { after } = hop
  try {
    return await queue.transaction(async (sql, db) => {
      // Only the holder of the job's active attempt completes it. When the job expired while this worker
      // held it, it waits for its retry, or another worker holds it, or finished it: that one goes on.
      const done = await queue.boss.complete(queue.name, job.id, summary(after), { db })
      if (affected(done) !== 1) throw new Superseded()
      const row = await lockRun(sql, queue, vault)
      if (!row) throw new Error(`The queue has no row for the run \`${vault}\``)
      let others = (await liveJobs(sql, queue, row.jobs)).filter((other) => other.id !== job.id)
      const sent: string[] = []
      const send = async (data: HopJobData, startAfter?: Date) => void sent.push(await sendHop(queue, data, db, startAfter))
      const record = async (state: RunState, fields: { node?: string | undefined; waiting?: WaitingStamp[]; error?: string | null }) => {
        const jobs = [...others.map((other) => other.id), ...sent]
        await sql.query(
          `UPDATE ${queue.runs} SET state = $3, jobs = $4::uuid[], job_id = $5, run_id = $6, node = $7, waiting = $8, error = $9, hops = hops + $10, updated_on = now()
            WHERE queue = $1 AND vault = $2`,
          [
            queue.name,
            vault,
            state,
            jobs,
            sent.at(-1) ?? (state === 'queued' ? row.job_id : null),
            after.runId,
            fields.node ?? null,
            fields.waiting ? JSON.stringify(fields.waiting) : null,
            fields.error ?? null,
            hop.worked ? 1 : 0,
          ],
        )
      }
      const stillRunning = () => others.length + sent.length > 0
      if (after.kind === 'completed') {
        await record('completed', { node: after.node })
        return { outcome: 'completed', node: after.node }
      }
      if (after.kind === 'stopped') {
        await record('stopped', { node: after.stop.node, error: after.reason })
        return { outcome: 'stopped', node: after.stop.node, error: after.reason }
      }
      if (row.state === 'failed') {
        await record('failed', { error: row.error })
        return { outcome: 'failed', error: row.error ?? 'the run failed' }
      }
      switch (after.kind) {
        case 'work': {
          const node = pathOf(after)
          await send({ vault, agent: hop.agent })
          const fanned = itemsToSend(hop.ready, others, hop.agent, Date.now())
          for (const _item of fanned) await send({ vault })
          const working = hop.ready.length > 0 ? hop.ready.map((item) => item.node) : [node]
          await record('queued', { node: working.join(', ') })
          return { outcome: 'queued', node, ...(fanned.length > 0 && { fannedOut: fanned.map((item) => item.node) }) }
        }
        case 'waiting': {
          const node = after.waiting.map((note) => note.node).join(', ')
          // The run waited already (this job was sent before): the job of its deadline, if any, is sent again below.
          if (row.state === 'waiting' && row.job_id !== null) {
            await queue.boss.cancel(queue.name, row.job_id, { db })
            others = others.filter((other) => other.id !== row.job_id)
          }
          // Other jobs of the run still work its other branches: they record the wait when they are done.
          if (stillRunning()) {
            await record('queued', { node })
            return { outcome: 'busy', node }
          }
          // A `wait:` deadline with a `timeout` edge: a job no worker takes before it, which then takes the edge.
          const due = deadlineOf(after)
          if (due !== undefined) await send({ vault }, due)
          await record('waiting', { node, waiting: hop.stamps ?? [] })
          return { outcome: 'waiting', node }
        }
        case 'busy': {
          const node = after.claims.map((item) => item.node).join(', ')
          // Jobs of the run hold every ready visit: they go on. A claim nobody in the queue holds is looked at again.
          const recheck = busyRecheck(after.claims, others, Date.now())
          if (recheck !== undefined) await send({ vault }, recheck)
          // A busy answer that names no claim (nothing the queue can wait for): looked at again in a second rather than stranded.
          if (!stillRunning()) await send({ vault }, new Date(Date.now() + 1000))
          await record('queued', { node })
          return { outcome: sent.length > 0 ? 'queued' : 'busy', node }
        }
      }
    })
  } catch (error) {
    if (error instanceof Superseded) return { outcome: 'superseded' }
    throw error
  }
}

/**
 * Ends a job of a run recorded as failed before it touches the vault (it was
 * sent before another job failed the run): the run waits for a person, and
 * `resumeRun` sends the job that goes on. `undefined` when the run is not
 * failed.
 */
export async function endOfFailedRun(queue: RunQueue, job: PgBoss.JobWithMetadata<HopJobData>): Promise<Pick<HopReport, 'outcome' | 'error'> | undefined> {
  try {
    return await queue.transaction(async (sql, db) => {
      const row = await lockRun(sql, queue, job.data.vault)
      if (row?.state !== 'failed') return undefined
      const error = row.error ?? 'the run failed'
      const done = await queue.boss.complete(queue.name, job.id, { failed: error }, { db })
      if (affected(done) !== 1) throw new Superseded()
      const others = (await liveJobs(sql, queue, row.jobs)).filter((other) => other.id !== job.id)
      await sql.query(`UPDATE ${queue.runs} SET jobs = $3::uuid[], updated_on = now() WHERE queue = $1 AND vault = $2`, [
        queue.name,
        job.data.vault,
        others.map((other) => other.id),
      ])
      return { outcome: 'failed', error }
    })
  } catch (error) {
    if (error instanceof Superseded) return { outcome: 'superseded' }
    throw error
  }
}

/** Rows a pg-boss `complete` or `fail` changed (its typings say `void`; it resolves to `{ jobs, requested, affected }`). */
export function affected(result: unknown): number {
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
export function pathOf(step: Extract<Step, { kind: 'work' }>): string {
  return step.plan === undefined ? step.node.id : `${step.plan}/${step.node.id}`
}
