import { join } from 'node:path'
import { expect, it } from 'vitest'
import { readLedger, runPlan } from 'vaultplan'
import { stdioClient } from './helpers/mcp.js'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { tempDir, writeVault } from './helpers/vault.js'

// The built CLI over stdio, driven by the SDK's own client, as a coding agent would.
it('records facts, assumptions and decisions in the ledger, withdraws an assumption, and searches past runs', async () => {
  const root = await tempDir()
  const vault = join(root, 'launch')
  await writeVault(draftReview(), vault)
  await runPlan(vault, {
    query: 'Plan the launch',
    fsync: false,
    work: scriptedWorker((step) => (step.node.id === 'send' ? 'The venue on Elm Street holds 200 people.' : undefined)),
    llm: reviewJudge('review v1'),
  })
  const agent = await stdioClient(root)

  expect(await agent.call('plan_fact', { vault: 'launch', text: 'The venue holds 200 people.', reason: 'its booking page', node: 'review' })).toEqual({
    vault: 'launch',
    id: 'F1',
    todo: 'Go on with the step.',
  })
  expect(await agent.call('plan_assume', { vault: 'launch', text: 'The launch is in May.' })).toMatchObject({ id: 'A1' })
  expect(await agent.call('plan_decision', { vault: 'launch', text: 'Use the small room.', reason: 'fewer than 50 guests' })).toMatchObject({ id: 'D1' })
  expect(await agent.call('plan_invalidate', { vault: 'launch', id: 'A1', reason: 'moved to June' })).toEqual({ vault: 'launch', id: 'A1', valid: false })
  const ledger = await readLedger(vault)
  expect([
    ledger.facts.map((entry) => entry.id),
    ledger.assumptions.map((entry) => [entry.id, entry.valid]),
    ledger.decisions.map((entry) => entry.id),
  ]).toEqual([['F1'], [['A1', false]], ['D1']])
  // A user's mistake is a tool result with isError, never a protocol error.
  expect(await agent.refuse('plan_invalidate', { vault: 'launch', id: 'A9', reason: 'x' })).toContain('A9')
  expect(await agent.refuse('plan_fact', { vault: '../outside', text: 'x' })).toMatch(/outside|root/i)

  const { hits } = await agent.call('plan_search', { query: 'Elm Street' })
  // The terminal's output is in its output note and in the final answer: both are found.
  expect(hits.map((hit: { kind: string; file: string }) => `${hit.kind} ${hit.file}`).sort()).toEqual([
    'final launch/00_plan-trace/final.md',
    'output launch/00_plan-trace/outputs/0003-send.md',
  ])
  expect((await agent.call('plan_search', { query: 'small room' })).hits[0]).toMatchObject({ vault: 'launch', kind: 'ledger' })
})
