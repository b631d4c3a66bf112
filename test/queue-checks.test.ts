import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { enqueueRun } from 'vaultplan/queue'
import { freshQueueName, openQueue, testWorker, waitForStatus } from './helpers/queue.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { note, readTree, traceEntries, writeVault } from './helpers/vault.js'

const plan = {
  'code.md': note({ front: { type: 'start', check: 'test' }, title: 'Write the code', next: ['passed -> [[ship]]', 'failed -> [[fix]]'] }),
  'fix.md': note({ title: 'Fix it' }),
  'ship.md': note({ title: 'Ship it' }),
}

describe('checks in the queue', () => {
  it('a worker runs the checks whoever started it defined, and they route the run', async () => {
    const vault = await writeVault(plan)
    const name = freshQueueName()
    const queue = await openQueue(name)
    const checks = { test: { command: [process.execPath, '-e', 'process.exit(2)'] } }
    await testWorker(name, { work: scriptedWorker(), llm: noJudge(), checks })
    await enqueueRun(queue, { vault, query: 'Add a flag' })
    await waitForStatus(queue, (status) => status.completed === 1)
    expect((await traceEntries(vault)).map((entry) => [entry.heading, entry.decidedBy])).toEqual([
      ['Step 1 · [[code]] · visit 1', 'check'],
      ['Step 2 · [[fix]] · visit 1', 'terminal'],
    ])
  })

  it('a worker whose checks came from a folder inside the vault fails that run before any hop, saying why', async () => {
    const vault = await writeVault(plan)
    const name = freshQueueName()
    const queue = await openQueue(name)
    const checks = { test: { command: [process.execPath, '-e', `require('fs').writeFileSync('ran', '')`], cwd: vault } }
    await testWorker(name, { work: scriptedWorker(), llm: noJudge(), checks, checksFrom: join(vault, 'sub') })
    await enqueueRun(queue, { vault, query: 'Add a flag' })
    const failed = await waitForStatus(queue, (status) => status.failed === 1)
    expect(failed.failures).toEqual([
      { vault, error: expect.stringMatching(/vaultplan\.config\.json in .* is inside the vault being run .*Give the checks with --check/) },
    ])
    expect(await readTree(vault)).toEqual(plan)
  })
})
