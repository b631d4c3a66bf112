import { availableParallelism } from 'node:os'
import { fileURLToPath } from 'node:url'
import { configDefaults, defineConfig } from 'vitest/config'
import { hasChromium } from './test/setup/browser-notice.js'

/**
 * The slow suite (`npm run test:slow`): each file here takes long because of
 * what it proves (crash trials, races against an editor process, model- and
 * property-based runs over many random plans, the tarball installed, an
 * outside conformance suite, TypeDoc compiling the sources). `npm test` runs
 * every other file; test/suites.test.ts checks that each test file is in
 * exactly one suite.
 */
export const slowFiles = [
  'test/crash.test.ts',
  'test/torn-reads.test.ts',
  'test/lifecycle.model.test.ts',
  'test/mcp-conformance.test.ts',
  'test/package.test.ts',
  'test/api-reference.test.ts',
  // pg-boss's cron ticks by the minute: the test waits for the next one.
  'test/queue-schedules.test.ts',
]

// The queue tests need PostgreSQL: without a database they are not collected, and the
// global setup says so after the summary (a skipped test would hide it).
const queueFiles = process.env.VAULTPLAN_TEST_PG ? [] : ['test/queue*.test.ts']
// The board's browser tests need Chromium (Debian's package); without it, the same: not collected, and said so.
const browserFiles = hasChromium() ? [] : ['test/board-browser*.test.ts']

export default defineConfig({
  resolve: {
    // Tests import the package by its public name, as users do, but run the
    // TypeScript sources so no build is needed between edit and test.
    alias: [
      { find: /^vaultplan$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
      { find: /^vaultplan\/ai-sdk$/, replacement: fileURLToPath(new URL('./src/models/ai-sdk.ts', import.meta.url)) },
      { find: /^vaultplan\/queue$/, replacement: fileURLToPath(new URL('./src/queue/index.ts', import.meta.url)) },
      { find: /^vaultplan\/board$/, replacement: fileURLToPath(new URL('./src/board/index.ts', import.meta.url)) },
      { find: /^vaultplan\/mcp$/, replacement: fileURLToPath(new URL('./src/mcp/index.ts', import.meta.url)) },
      { find: /^vaultplan\/pictures$/, replacement: fileURLToPath(new URL('./src/plan/index.ts', import.meta.url)) },
      { find: /^vaultplan\/testing$/, replacement: fileURLToPath(new URL('./src/models/scripted-judge.ts', import.meta.url)) },
    ],
  },
  test: {
    testTimeout: 30_000,
    // A killed runner's lock is taken over after 1.1 s instead of 3 s (test/lock.test.ts checks the option itself).
    env: { VAULTPLAN_LOCK_ORPHAN_MS: '1100' },
    // Most files spend their time waiting (settle windows, child processes, servers on 127.0.0.1), not
    // computing; vitest's default of one worker per core but one would run them one by one on 2 cores.
    maxWorkers: Math.max(4, availableParallelism()),
    projects: [
      {
        extends: true,
        test: {
          name: 'fast',
          include: ['test/**/*.test.ts'],
          exclude: [...configDefaults.exclude, ...slowFiles, ...queueFiles, ...browserFiles],
          // Only here, so that its notices print once: the queue and browser tests are in this suite.
          globalSetup: ['test/setup/queue-notice.ts'],
        },
      },
      {
        extends: true,
        // A queue file here too is not collected without a database.
        test: { name: 'slow', include: slowFiles, exclude: [...configDefaults.exclude, ...queueFiles] },
      },
    ],
  },
})
