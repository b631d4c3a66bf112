import { browserNotice, requireBrowserUnderCi } from './browser-notice.js'

/**
 * The queue tests (test/queue*.test.ts) need a PostgreSQL database; without
 * `VAULTPLAN_TEST_PG` they are not collected (vitest.config.ts), and this
 * says so at the end of the run, after the summary, so that a green run is
 * not taken for one that tested the queue.
 */
export function queueNotice(env: Record<string, string | undefined> = process.env): string | undefined {
  if (env.VAULTPLAN_TEST_PG) return undefined
  return 'NOTE: the queue tests (test/queue*.test.ts) did not run: VAULTPLAN_TEST_PG is not set. Run them against a throwaway PostgreSQL with `scripts/test-pg.sh npm test` (.ci/run does this).'
}

/** Whether this run is CI's (`CI=true`, as CI services set it): there, tests that did not run fail the run. */
export function isCi(env: Record<string, string | undefined> = process.env): boolean {
  return env.CI !== undefined && env.CI !== '' && env.CI !== 'false' && env.CI !== '0'
}

/** Throws under CI when the queue tests cannot run. */
export function requireQueueUnderCi(env: Record<string, string | undefined> = process.env): void {
  const notice = queueNotice(env)
  if (notice && isCi(env)) throw new Error(`CI=true, and the queue tests cannot run: CI must test the queue (.ci/run starts PostgreSQL). ${notice}`)
}

/**
 * Vitest's global setup: under CI, a run that would leave the queue untested
 * fails before it starts. It reads `process.env`: vitest passes its project
 * as the first argument, so an `env` parameter here would get that.
 */
export function setup(): void {
  requireQueueUnderCi(process.env)
  requireBrowserUnderCi(process.env)
}

/** Vitest's global teardown: runs once, after every test file. */
export function teardown(): void {
  for (const notice of [queueNotice(), browserNotice()]) if (notice) process.stdout.write(`\n${notice}\n`)
}
