import { describe, expect, test } from 'vitest'
import { setup } from './setup/queue-notice.js'

// The queue tests need PostgreSQL. A developer without one is told they did not run; CI without one fails.
describe('a test run that cannot reach PostgreSQL', () => {
  test('fails under CI=true, before any test runs', () => {
    expect(() => setup({ CI: 'true' })).toThrow(/CI=true, and the queue tests cannot run/)
    expect(() => setup({ CI: '1' })).toThrow(/queue tests cannot run/)
  })

  test('runs on a developer machine (no CI, or CI=false), and under CI with a database', () => {
    expect(() => setup({})).not.toThrow()
    expect(() => setup({ CI: 'false' })).not.toThrow()
    expect(() => setup({ CI: 'true', VAULTPLAN_TEST_PG: 'postgres://127.0.0.1:5432/test' })).not.toThrow()
  })
})
