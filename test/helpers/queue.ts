import { randomUUID } from 'node:crypto'
import { afterEach } from 'vitest'
import { RunQueue, startWorker, type QueueStatus, type QueueWorker, type StartWorkerOptions } from 'vaultplan/queue'
import { until } from './until.js'

/** The test database (`VAULTPLAN_TEST_PG`); the queue test files are only collected when it is set. */
export function testDatabase(): string {
  const url = process.env.VAULTPLAN_TEST_PG
  if (!url) throw new Error('VAULTPLAN_TEST_PG is not set: start a database with `scripts/test-pg.sh npm test`')
  return url
}

/**
 * Connection options for tests: pg-boss's maintenance every second, so a
 * hop that expired is retried within a few seconds.
 */
export function testConnection(): { connectionString: string; maintenanceIntervalSeconds: number } {
  return { connectionString: testDatabase(), maintenanceIntervalSeconds: 1 }
}

/** A queue name of its own for each test, so that tests never see each other's jobs. */
export function freshQueueName(): string {
  return `test-${randomUUID().slice(0, 8)}`
}

const opened: { stop(): Promise<void> }[] = []

afterEach(async () => {
  await Promise.all(opened.splice(0).map((thing) => thing.stop()))
})

/** Opens a queue for the test (closed after it). */
export async function openQueue(
  queue: string,
  options: { hopTimeoutSeconds?: number; retryLimit?: number; retryDelaySeconds?: number } = {},
): Promise<RunQueue> {
  const handle = await RunQueue.open(testConnection(), { queue, ...options })
  opened.push({ stop: () => handle.close() })
  return handle
}

/** Starts a worker for the test, polling often (stopped after it). */
export async function testWorker(queue: string, options: StartWorkerOptions = {}): Promise<QueueWorker> {
  const worker = await startWorker(testConnection(), { queue, pollIntervalMs: 50, watchIntervalMs: 100, fsync: false, ...options })
  opened.push({ stop: () => worker.stop({ timeoutMs: 2000 }) })
  return worker
}

/** Waits until the queue's status makes `done` hold, and returns that status; fails with the last status after `timeoutMs`. */
export async function waitForStatus(queue: RunQueue, done: (status: QueueStatus) => boolean, timeoutMs = 20_000): Promise<QueueStatus> {
  const { readQueueStatus } = await import('vaultplan/queue')
  let status: QueueStatus | undefined
  await until(
    async () => done((status = await readQueueStatus(queue))),
    () => `the queue to get there; its status: ${JSON.stringify(status)}`,
    timeoutMs,
  )
  return status!
}

/** The hop jobs of a queue by state, from pg-boss's table. */
export async function jobStates(queue: RunQueue): Promise<Record<string, number>> {
  const { rows } = await queue.query<{ state: string; count: string }>(
    `SELECT state, count(*) AS count FROM ${queue.schema}.job WHERE name = $1 GROUP BY state`,
    [queue.name],
  )
  return Object.fromEntries(rows.map((row) => [row.state, Number(row.count)]))
}
