import { join } from 'node:path'
import type PgBoss from 'pg-boss'
import { RunStateError, StepError } from '../core/errors.js'
import type { StepInput } from '../core/types.js'
import { failureEdge } from '../models/transitions.js'
import { completeStep, nextStep, type Step, type StepOptions } from '../run/entry/stepping.js'
import type { WorkItem } from '../run/core/claims.js'
import type { WorkFailure } from '../run/drive/tree-vaults.js'
import { afterWorkerFailure, workVisit } from '../run/drive/work-visit.js'
import { stampOf } from '../vault/fs-atomic.js'
import { CONFIG_FILE, configRefusal } from '../vault/runner-config.js'
import { commitHop, endOfFailedRun, pathOf } from './commit-hop.js'
import type { HopJobData } from './enqueue-run.js'
import { adoptClaim, agentOf, leaseOf, readyItems, stepping } from './hop-claims.js'
import { NoteFailure, recordFailure } from './hop-failure.js'
import type { RunQueue } from './run-queue.js'
import type { WaitingStamp } from './runs-table.js'
import type { HopReport } from './hop-report.js'

/** What a worker brings to each hop. */
export interface HopContext {
  queue: RunQueue
  work: (step: StepInput) => Promise<string>
  stepOptions: StepOptions
  signal: AbortSignal
  /** The folder the checks were read from: a vault that is it or holds it is refused. */
  checksFrom?: string
}

/**
 * Advances one run by one hop: `nextStep` claims the visit to work as the
 * job's agent (the visit its agent holds when a job handed it on, or a
 * killed attempt of this job left it claimed; else a ready visit nobody
 * holds, in any branch), the worker works it, `completeStep` saves the
 * output, judges the transition and claims what follows for the same
 * agent; then one transaction completes this job and sends the next ones
 * (`commitHop`). A job that finds every ready visit held by the run's
 * other jobs ends; one held by a job that stopped is taken over. A job
 * of a run recorded as failed ends without stepping it.
 */
export async function advanceHop(context: HopContext, job: PgBoss.JobWithMetadata<HopJobData>): Promise<HopReport> {
  const started = Date.now()
  const { queue, signal } = context
  const vault = job.data.vault
  const base = { vault, jobId: job.id }
  let agent = agentOf(job)
  const options = (): StepOptions => ({
    ...context.stepOptions,
    signal,
    agent,
    leaseMs: leaseOf(job),
    ...(job.data.query !== undefined && { query: job.data.query }),
  })
  let worked: HopReport['worked']
  let after: Step
  let stamps: WaitingStamp[] | undefined
  let ready: WorkItem[]
  try {
    const ended = await endOfFailedRun(queue, job)
    if (ended) return { ...base, ...ended, ms: Date.now() - started }
    await refuseChecksInVault(context, vault)
    let step = await stepping(() => nextStep(vault, options()), signal)
    if (step.kind === 'busy') {
      const adopted = await adoptClaim(queue, job, step.claims)
      if (adopted !== undefined) {
        agent = adopted
        step = await stepping(() => nextStep(vault, options()), signal)
      }
    }
    after = step
    if (step.kind === 'work') {
      worked = { node: pathOf(step), visit: step.visit, step: step.step, key: step.key }
      const output = await workHop(context, job, step)
      after = await completeOrFollow(vault, step.key, output, options())
    }
    if (after.kind === 'waiting') ({ step: after, stamps } = await settleWaiting(vault, after, options()))
    ready = await readyItems(vault, after)
  } catch (error) {
    const report = await recordFailure(queue, job, error)
    return { ...base, ...(worked ? { worked } : {}), ...report, ms: Date.now() - started }
  }
  const outcome = await commitHop(queue, job, { after, agent, worked: worked !== undefined, stamps, ready })
  const runId = after.runId
  return { ...base, runId, ...(worked ? { worked } : {}), ...outcome, ms: Date.now() - started }
}

/** A vault that holds the folder the worker's checks were read from gives itself programs to run: its run fails, for a person to see. */
async function refuseChecksInVault(context: HopContext, vault: string): Promise<void> {
  if (context.checksFrom === undefined) return
  const refusal = await configRefusal(context.checksFrom, { folders: [vault], as: 'vault' })
  if (refusal !== undefined) throw new RunStateError('checks-in-vault', refusal, { config: join(context.checksFrom, CONFIG_FILE), vault })
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
 * taken over, or its claim's lease ended and another job took the visit),
 * the run is already past it: the step that follows is asked for instead,
 * so the chain of jobs goes on.
 */
async function completeOrFollow(vault: string, key: string, output: string | WorkFailure, options: StepOptions): Promise<Step> {
  try {
    return await stepping(() => completeStep(vault, key, typeof output === 'string' ? { output } : output, options), options.signal!)
  } catch (error) {
    if (error instanceof RunStateError && error.code === 'stale-step') return stepping(() => nextStep(vault, options), options.signal!)
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
  const again = await stepping(() => nextStep(vault, options), options.signal!)
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
