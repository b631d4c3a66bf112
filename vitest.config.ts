import { fileURLToPath } from 'node:url'
import { configDefaults, defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: {
    // Tests import the package by its public name, as users do, but run the
    // TypeScript sources so no build is needed between edit and test.
    alias: [
      { find: /^vaultplan$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
      { find: /^vaultplan\/ai-sdk$/, replacement: fileURLToPath(new URL('./src/models/ai-sdk.ts', import.meta.url)) },
      { find: /^vaultplan\/queue$/, replacement: fileURLToPath(new URL('./src/queue/index.ts', import.meta.url)) },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    // The queue tests need PostgreSQL: without a database they are not collected, and the
    // global setup says so after the summary (a skipped test would hide it).
    exclude: [...configDefaults.exclude, ...(process.env.VAULTPLAN_TEST_PG ? [] : ['test/queue*.test.ts'])],
    globalSetup: ['test/setup/queue-notice.ts'],
    testTimeout: 30_000,
    // A killed runner's lock is taken over after 1.1 s instead of 3 s (test/lock.test.ts checks the option itself).
    env: { VAULTPLAN_LOCK_ORPHAN_MS: '1100' },
  },
})
