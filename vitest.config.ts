import { fileURLToPath } from 'node:url'
import { defineConfig } from 'vitest/config'

export default defineConfig({
  resolve: {
    // Tests import the package by its public name, as users do, but run the
    // TypeScript sources so no build is needed between edit and test.
    alias: [
      { find: /^vaultplan$/, replacement: fileURLToPath(new URL('./src/index.ts', import.meta.url)) },
      { find: /^vaultplan\/ai-sdk$/, replacement: fileURLToPath(new URL('./src/ai-sdk.ts', import.meta.url)) },
    ],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
  },
})
