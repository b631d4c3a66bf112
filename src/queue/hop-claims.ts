import type PgBoss from 'pg-boss'
import { sleep } from '../core/abort.js'
import { RunStateError } from '../core/errors.js'
import type { WorkItem } from '../run/core/claims.js'
import { observeRun } from '../run/read/observe-run.js'
import type { Step } from '../run/entry/stepping.js'
import type { HopJobData } from './enqueue-run.js'
import type { RunQueue } from './run-queue.js'
import { liveJobs, lockRun, type LiveJob } from './run-rows.js'

/*
 * Several jobs on one run (the branches of a `plan: [a, b]` note): each job
 * claims as an agent of its own (`agentOf`), hands its claim on to the job
 * it sends, queues a job for ready work nobody holds, and takes over the
 * claim of a job that stopped.
 */

/** The agents of queue jobs are named `queue:<id of the job that first claimed as it>`. */
const QUEUE_AGENT = 'queue:'

/** The agent a hop job claims as: the one its data names (the run's job before it handed its claim on, or one it took over), else its own. */
export function agentOf(job: { id: string; data: { agent?: string } }): string {
  return job.data.agent ?? `${QUEUE_AGENT}${job.id}`
}

/** Tries of a stepping call that met the vault locked by another process (a job of another branch, for milliseconds). */
const LOCK_TRIES = 10

/**
 * The lease of a job's claims: twice the job's expiry, so that a claim
 * renewed at half its lease (every stepping call of its agent) outlives the
 * job's attempt; the job's own retry takes it back sooner, by its agent.
 */
export function leaseOf(job: PgBoss.JobWithMetadata<HopJobData>): number {
  const seconds = Number(job.expireInSeconds)
  return 2 * 1000 * (Number.isFinite(seconds) && seconds > 0 ? seconds : 900)
}

/**
 * A stepping call, tried again for a while when the vault is locked by
 * another process: the jobs of one run's branches step it at once, each for
 * milliseconds. (Calls of one process wait for each other already.)
 */
export async function stepping(call: () => Promise<Step>, signal: AbortSignal): Promise<Step> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await call()
    } catch (error) {
      if (!(error instanceof RunStateError && error.code === 'vault-locked') || attempt >= LOCK_TRIES || signal.aborted) throw error
      await sleep(50 + Math.random() * 50 * attempt)
    }
  }
}

/**
 * Takes over, for `job`, the claim of a queue job that stopped (it failed,
 * or its retries were spent), among the claims a `busy` answer named: the
 * job's data then names that agent, so the job (and its retries) claims as
 * it and gets its visit back, same key. Resolves to the agent, or
 * `undefined` when every claim has a live job, or the run is failed (it
 * waits for a person; `resumeRun` queues the job that takes the claims).
 * The run's row is locked meanwhile, so two jobs never take one claim.
 */
export async function adoptClaim(queue: RunQueue, job: PgBoss.JobWithMetadata<HopJobData>, claims: WorkItem[]): Promise<string | undefined> {
  const agents = claims.flatMap((item) => (item.claim?.agent.startsWith(QUEUE_AGENT) ? [item.claim.agent] : []))
  if (agents.length === 0) return undefined
  return queue.transaction(async (sql) => {
    const row = await lockRun(sql, queue, job.data.vault)
    if (!row || row.state === 'failed') return undefined
    const live = new Set((await liveJobs(sql, queue, row.jobs)).filter((other) => other.id !== job.id).map((other) => other.agent))
    const orphan = agents.find((agent) => !live.has(agent))
    if (orphan === undefined) return undefined
    const { rowCount } = await sql.query(
      `UPDATE ${queue.schema}.job SET data = data || jsonb_build_object('agent', $3::text) WHERE name = $1 AND id = $2 AND state = 'active'`,
      [queue.name, job.id, orphan],
    )
    return rowCount === 1 ? orphan : undefined
  })
}

/**
 * The ready items of the run after a hop that claims a visit inside a
 * subplan (the only place where other branches may be ready too), as the
 * run's snapshot lists them with their claims; none otherwise. A snapshot
 * that cannot be read gives none: the job's own line of work reaches the
 * other branches later, one after the other.
 */
export async function readyItems(vault: string, after: Step): Promise<WorkItem[]> {
  if (after.kind !== 'work' || after.plan === undefined) return []
  return (await observeRun(vault).catch(() => undefined))?.frontier ?? []
}

/**
 * The ready items that need a job of their own: held by nobody (or by a
 * lease that ended, or by a queue job that stopped), beyond those the run's
 * jobs not started yet and holding no claim will take.
 */
export function itemsToSend(items: WorkItem[], others: LiveJob[], agent: string, now: number): WorkItem[] {
  const live = new Set(others.map((other) => other.agent))
  const held = new Set(items.flatMap((item) => (item.claim ? [item.claim.agent] : [])))
  const free = others.filter((other) => other.state === 'created' && !held.has(other.agent)).length
  const unheld = items.filter((item) => {
    const claim = item.claim
    if (claim === undefined || Date.parse(claim.until) <= now) return true
    return claim.agent !== agent && claim.agent.startsWith(QUEUE_AGENT) && !live.has(claim.agent)
  })
  return unheld.slice(free)
}

/**
 * When a job answered `busy` may end: every claim named is held by a live
 * job of the run. Otherwise, when the run is looked at again: at once for
 * a queue job's claim that nobody holds, at the end of its lease for an
 * agent's from outside the queue (a coding agent, a person's tool).
 */
export function busyRecheck(claims: WorkItem[], others: LiveJob[], now: number): Date | undefined {
  const live = new Set(others.map((other) => other.agent))
  const unheld = claims.filter((item) => item.claim === undefined || !live.has(item.claim.agent))
  if (unheld.length === 0) return undefined
  const at = unheld.map((item) => (item.claim === undefined || item.claim.agent.startsWith(QUEUE_AGENT) ? now : Date.parse(item.claim.until) || now))
  return new Date(Math.max(now, Math.min(...at)))
}
