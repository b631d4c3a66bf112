import { describe, expect, test } from 'vitest'
import { enqueueRun, resumeRun, RunQueue, startWorker } from 'vaultplan/queue'

// Mistakes in the calls are refused before any database is reached (nothing listens on port 9).
const nowhere = 'postgres://127.0.0.1:9/none'

describe('vaultplan/queue refuses bad arguments at once', () => {
  test('a worker with no concurrency from 1 up', async () => {
    await expect(startWorker(nowhere, { concurrency: 0 })).rejects.toThrow(new TypeError('Expected `concurrency` to be an integer from 1 up, got `0`'))
  })

  test('a run without a vault', async () => {
    await expect(enqueueRun(nowhere, { vault: '' })).rejects.toThrow(new TypeError('Expected `vault` to be the path of a run vault, got ``'))
    await expect(resumeRun(nowhere, undefined as unknown as string)).rejects.toThrow(
      new TypeError('Expected `vault` to be the path of a run vault, got `undefined`'),
    )
  })

  test('a pg-boss `db` adapter, which cannot run a hop in one transaction', async () => {
    const db = { executeSql: async () => ({ rows: [] }) }
    await expect(RunQueue.open({ db })).rejects.toThrow(/got a `db` adapter/)
  })

  test('a queue name pg-boss would refuse, and a hop timeout under a second', async () => {
    await expect(RunQueue.open(nowhere, { queue: 'my queue' })).rejects.toThrow(
      new TypeError('Expected `queue` to be a name of letters, digits, `_`, `.` or `-`, got `my queue`'),
    )
    await expect(RunQueue.open(nowhere, { hopTimeoutSeconds: 0 })).rejects.toThrow(
      new TypeError('Expected `hopTimeoutSeconds` to be an integer from 1 up, got `0`'),
    )
  })
})
