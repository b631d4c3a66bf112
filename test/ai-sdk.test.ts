import { getEventListeners } from 'node:events'
import { createOpenAICompatible } from '@ai-sdk/openai-compatible'
import { tool } from 'ai'
import { afterEach, expect, test } from 'vitest'
import { z } from 'zod'
import { runPlan } from 'vaultplan'
import { llmFromAISDK, toolsFromAISDK } from 'vaultplan/ai-sdk'
import { startChatServer, stepOf } from './support/chat-server.js'
import { writeVault } from './helpers/vault.js'
import { reviewedLoop } from './support/plans.js'

const servers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

test('AI SDK models route by role and AI SDK tools run in the built-in worker', async () => {
  const sent: unknown[] = []
  const model = await startChatServer((request) => {
    if (request.kind === 'judge') return /\(visit 1\)/.test(request.prompt) ? '1: NO\n2: YES' : '1: YES\n2: NO'
    if (request.kind === 'tool-choice') return stepOf(request) === 'Send' && !request.prompt.includes('Tool call 1') ? '1: YES' : '1: NO'
    if (request.kind === 'arguments') return '{"to": "team@example.org"}'
    return `work for ${stepOf(request)}`
  })
  servers.push(model)
  const local = createOpenAICompatible({ name: 'local', baseURL: model.url })
  const llm = llmFromAISDK({ default: local('drafter'), review: local('reviewer') }, { maxRetries: 0 })
  const tools = toolsFromAISDK({
    send_email: tool({
      description: 'send an email',
      inputSchema: z.object({ to: z.string().email() }),
      execute: async ({ to }) => {
        sent.push(to)
        return { id: 'msg-1' }
      },
    }),
  })
  const vault = await writeVault(reviewedLoop)
  const result = await runPlan(vault, { query: 'q', llm, tools, fsync: false })

  expect(result).toMatchObject({ status: 'completed', steps: 5 })
  expect(sent).toEqual(['team@example.org'])
  const review = model.requests.filter((r) => stepOf(r) === 'Review').map((r) => [r.kind, r.model])
  expect(review).toEqual([
    ['tool-choice', 'reviewer'],
    ['work', 'reviewer'],
    ['judge', 'reviewer'],
    ['tool-choice', 'reviewer'],
    ['work', 'reviewer'],
    ['judge', 'reviewer'],
  ])
  expect(model.requests.filter((r) => stepOf(r) === 'Draft').every((r) => r.model === 'drafter')).toBe(true)
})

test('a role without a model and no default is a clear error', async () => {
  const local = createOpenAICompatible({ name: 'local', baseURL: 'http://127.0.0.1:9/v1' })
  const llm = llmFromAISDK({ review: local('reviewer') })
  await expect(llm('hi', { role: 'action' })).rejects.toThrow('No model for role `action`')
})

test("an AI SDK model gets no temperature unless one is set, and one abort listener per call on the run's signal, removed after it", async () => {
  const controller = new AbortController()
  const during: number[] = []
  const temperatures: unknown[] = []
  const model = await startChatServer((request) => {
    during.push(getEventListeners(controller.signal, 'abort').length)
    temperatures.push(request.temperature)
    return 'ok'
  })
  servers.push(model)
  const provider = createOpenAICompatible({ name: 'local', baseURL: model.url })
  const llm = llmFromAISDK(provider('m'), { maxRetries: 0 })
  for (let call = 0; call < 12; call++) expect(await llm('p', { role: 'action', signal: controller.signal })).toBe('ok')
  expect(await llmFromAISDK(provider('m'), { temperature: 0.5 })('p', { role: 'action' })).toBe('ok')
  expect(during).toEqual([...Array.from({ length: 12 }, () => 1), 0])
  expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
  expect(temperatures).toEqual([...Array.from({ length: 12 }, () => undefined), 0.5])
})
