import { checkSchedule, startTick, type ScheduleDefinition } from '../run/schedules/schedules.js'
import { enqueueRun } from './enqueue-run.js'
import { withQueue, type QueueConnection, type RunQueue, type RunQueueOptions } from './run-queue.js'

/*
 * Schedules in the queue, on pg-boss's own cron: one pg-boss queue per
 * schedule (a schedule's name must be a queue's), whose tick jobs a worker
 * turns into runs (a run vault copied from the template, then enqueued).
 * pg-boss reads 5-field crons, by the minute; its `archiveSeconds` must stay
 * 60 or more, or its cron stops without a word.
 */

/** The pg-boss queue of a schedule, beside the hop queue it enqueues into. */
export function scheduleQueue(hops: string, name: string): string {
  return `${hops}-schedule-${name}`
}

/**
 * Schedules runs in the queue: at each tick of `schedule.cron` (5 fields,
 * minute granularity, read in `schedule.tz`), a worker (`startWorker`,
 * `vaultplan worker`) copies the template into a new run vault
 * (`<runs>/<name>-<time>/`) and enqueues it for `schedule.query`. The
 * template and `runs` must be paths every worker sees. Adding a schedule
 * under a name that exists replaces it.
 *
 * @param connection - a postgres URL, pg-boss options, or an open `RunQueue`
 * @throws `TypeError` on a bad schedule
 */
export async function scheduleRun(connection: QueueConnection | RunQueue, schedule: ScheduleDefinition, options: RunQueueOptions = {}): Promise<void> {
  checkSchedule(schedule, 5)
  await withQueue(connection, options, async (queue) => {
    const name = scheduleQueue(queue.name, schedule.name)
    await queue.boss.createQueue(name, { name, policy: 'standard' })
    const { tz, ...data } = schedule
    await queue.boss.schedule(name, schedule.cron, tz === undefined ? data : { ...data, tz }, tz === undefined ? {} : { tz })
  })
}

/**
 * Removes a schedule of the queue; runs it started go on. Resolves to whether it existed.
 *
 * @param connection - a postgres URL, pg-boss options, or an open `RunQueue`
 */
export async function unscheduleRun(connection: QueueConnection | RunQueue, name: string, options: RunQueueOptions = {}): Promise<boolean> {
  if (typeof name !== 'string' || name === '') throw new TypeError(`Expected \`name\` to be a schedule's name, got \`${String(name)}\``)
  return withQueue(connection, options, async (queue) => {
    const queueName = scheduleQueue(queue.name, name)
    const existed = (await queue.boss.getSchedules()).some((each) => each.name === queueName)
    if (existed) await queue.boss.unschedule(queueName)
    return existed
  })
}

/**
 * The schedules of the queue, by name.
 *
 * @param connection - a postgres URL, pg-boss options, or an open `RunQueue`
 */
export async function listScheduledRuns(connection: QueueConnection | RunQueue, options: RunQueueOptions = {}): Promise<ScheduleDefinition[]> {
  return withQueue(connection, options, async (queue) => schedulesOf(queue))
}

async function schedulesOf(queue: RunQueue): Promise<ScheduleDefinition[]> {
  const prefix = scheduleQueue(queue.name, '')
  return (await queue.boss.getSchedules())
    .filter((each) => each.name.startsWith(prefix))
    .map((each) => ({ ...(each.data as ScheduleDefinition), cron: each.cron }))
    .sort((a, b) => a.name.localeCompare(b.name))
}

/** How many waiting ticks of a schedule one look takes (and makes one run of). */
const TICKS_AT_ONCE = 1000

/**
 * One look at the schedules' queues: the tick jobs waiting in a schedule's
 * queue become one run vault (the template copied, for the latest tick)
 * enqueued on the hop queue, then the ticks are completed. Ticks that piled
 * up while no worker took them (a process held the queue open, and so
 * pg-boss's cron, while every worker was stopped or paused) are one run,
 * never one each. A tick whose run vault exists already (a worker died
 * after making it) enqueues that vault. Resolves to the vaults enqueued.
 */
export async function takeTicks(queue: RunQueue, options: { fsync: boolean; checks?: string[] | undefined }): Promise<string[]> {
  const started: string[] = []
  for (const schedule of await schedulesOf(queue)) {
    const name = scheduleQueue(queue.name, schedule.name)
    const jobs = await queue.boss.fetch<ScheduleDefinition>(name, { batchSize: TICKS_AT_ONCE, includeMetadata: true })
    if (jobs.length === 0) continue
    const ids = jobs.map((job) => job.id)
    const at = (job: (typeof jobs)[number]) => (job.createdOn instanceof Date ? job.createdOn : new Date())
    const latest = jobs.reduce((last, job) => (at(job) > at(last) ? job : last))
    try {
      const vault = await startTick(latest.data, at(latest), options)
      await enqueueRun(queue, { vault, query: latest.data.query })
      await queue.boss.complete(name, ids)
      started.push(vault)
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error)
      for (const id of ids) await queue.boss.fail(name, id, { message })
      throw error
    }
  }
  return started
}
