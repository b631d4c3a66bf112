import { describe, expect, it } from 'vitest'
import { enqueueRun } from 'vaultplan/queue'
import { freshQueueName, openQueue, testWorker, waitForStatus } from './helpers/queue.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { note, traceEntries, writeVault } from './helpers/vault.js'

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
})
