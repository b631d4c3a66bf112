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

/** Vitest's global teardown: runs once, after every test file. */
export function teardown(): void {
  const notice = queueNotice()
  if (notice) process.stdout.write(`\n${notice}\n`)
}
