import { trace } from '@opentelemetry/api'
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base'
import { afterAll, expect, it } from 'vitest'
import { runPlan } from 'vaultplan'
import { draftReview } from './helpers/plans.js'
import { scriptedWorker } from './helpers/scripted.js'
import { writeVault } from './helpers/vault.js'

const exporter = new InMemorySpanExporter()
trace.setGlobalTracerProvider(new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }))
afterAll(() => trace.disable())

it('a run is one span, each hop a child span with work and judge spans under it, with node, visit, decidedBy, model and tokens', async () => {
  const dir = await writeVault(draftReview())
  // A judge that reports its usage, as the model client does for a real endpoint.
  const llm = async (
    _prompt: string,
    options: { role: string; onUsage?: (usage: { role: string; model: string; input?: number; output?: number }) => void },
  ) => {
    options.onUsage?.({ role: options.role, model: 'judge-model', input: 120, output: 8 })
    return '1: YES\n2: NO'
  }
  const result = await runPlan(dir, { query: 'q', fsync: false, work: scriptedWorker(), llm })
  expect(result.status).toBe('completed')
  const spans = exporter.getFinishedSpans()
  const run = spans.find((span) => span.name === 'vaultplan.run')!
  expect(run.attributes).toMatchObject({ 'vaultplan.vault': dir, 'vaultplan.run_id': result.runId, 'vaultplan.outcome': 'completed' })
  const hops = spans.filter((span) => span.name === 'vaultplan.hop')
  expect(hops.map((span) => [span.attributes['vaultplan.node'], span.attributes['vaultplan.visit'], span.attributes['vaultplan.decided_by']])).toEqual([
    ['draft', 1, 'unconditional'],
    ['review', 1, 'llm'],
    ['send', 1, 'terminal'],
  ])
  for (const hop of hops) expect(hop.parentSpanContext?.spanId).toBe(run.spanContext().spanId)
  const review = hops[1]!
  expect(review.attributes).toMatchObject({ 'gen_ai.request.model': 'judge-model', 'gen_ai.usage.input_tokens': 120, 'gen_ai.usage.output_tokens': 8 })
  const children = spans.filter((span) => span.parentSpanContext?.spanId === review.spanContext().spanId).map((span) => span.name)
  expect(children).toEqual(['vaultplan.work', 'vaultplan.judge'])
})
