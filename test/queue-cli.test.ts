import { spawn } from 'node:child_process'
import { afterEach, describe, expect, test } from 'vitest'
import { enqueueRun } from 'vaultplan/queue'
import { bin, vaultplan } from './helpers/cli.js'
import { freshQueueName, openQueue, testDatabase, waitForStatus } from './helpers/queue.js'
import { traceHeadings, writeVault } from './helpers/vault.js'
import { startChatServer, stepOf, type ChatRequest } from './support/chat-server.js'
import { reviewedLoop } from './support/plans.js'

const servers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

function reviewer(request: ChatRequest): string {
  if (request.kind === 'judge') return /\(visit 1\)/.test(request.prompt) ? '1: NO\n2: YES' : '1: YES\n2: NO'
  return `work for ${stepOf(request)}`
}

describe('vaultplan worker and vaultplan queue status', () => {
  test('the worker works a queued run with the env-configured model, one line per hop; the status counts it', async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const vault = await writeVault(reviewedLoop)
    const name = freshQueueName()
    const queue = await openQueue(name)
    const env = { PATH: process.env.PATH ?? '', LLM_MODEL: 'm', LLM_BASE_URL: model.url, NO_COLOR: '1' }
    const worker = spawn(process.execPath, [bin, 'worker', '--queue', testDatabase(), '--queue-name', name, '--concurrency', '2', '--no-fsync'], { env })
    let stdout = ''
    let stderr = ''
    worker.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    worker.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = new Promise<number | null>((done) => worker.on('exit', (code) => done(code)))
    try {
      await enqueueRun(queue, { vault, query: 'announce it' })
      await waitForStatus(queue, (status) => status.completed === 1)
    } finally {
      worker.kill('SIGTERM')
    }
    expect(await exited).toBe(0)
    expect(stderr).toContain(`vaultplan worker: queue ${name} on ${testDatabase()}, 2 at a time`)
    const lines = stdout.trim().split('\n')
    expect(lines.map((line) => line.replace(/^\S+ {2}\S+ {2}/, '').replace(/ {2}\d+\.\d\ds$/, ''))).toEqual([
      'step   1  draft (visit 1)  -> next review',
      'step   2  review (visit 1)  -> next draft',
      'step   3  draft (visit 2)  -> next review',
      'step   4  review (visit 2)  -> next send',
      'step   5  send (visit 1)  -> completed at send',
    ])
    expect(lines[0]).toContain(`  ${vault}  `)
    expect(await traceHeadings(vault)).toHaveLength(5)

    const status = await vaultplan(['queue', 'status', '--queue', testDatabase(), '--queue-name', name])
    expect(status).toEqual({ code: 0, stdout: `queue ${name}: 0 queued, 0 in flight, 0 waiting for a person, 0 failed, 1 completed, 0 stopped\n`, stderr: '' })
  })
})
