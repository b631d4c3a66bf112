/**
 * The run queue: runs whose hops many workers take from PostgreSQL through
 * pg-boss (needs the `pg-boss` package).
 *
 * @module vaultplan/queue
 */
export type { HopReport } from './hop-report.js'
export { enqueueRun, resumeRun, type EnqueuedRun, type EnqueueRunOptions, type HopJobData } from './enqueue-run.js'
export { readQueueStatus, type QueueStatus } from './queue-status.js'
export { RunQueue, type QueueConnection, type RunQueueOptions, type Sql } from './run-queue.js'
export { listScheduledRuns, scheduleRun, unscheduleRun } from './schedule-run.js'
export { startWorker, type QueueWorker, type StartWorkerOptions } from './start-worker.js'
