import { join } from 'node:path'
import { expect, it } from 'vitest'
import { forkRun, readLedger, recordEntry, runPlan } from 'vaultplan'
import { stdioClient } from './helpers/mcp.js'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { note, tempDir, writeVault } from './helpers/vault.js'

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

// A coding agent that records what it found while it works a step handed out by plan_next.
it('an entry recorded over MCP mid-run carries the pending step, so a fork at a later step keeps it and ids go on', async () => {
  const root = await tempDir()
  const vault = join(root, 'launch')
  await writeVault(
    {
      ...draftReview(),
      'review.md': note({
        front: { plan: 'checks' },
        title: 'Review',
        body: 'Review the draft.',
        next: ['approved -> [[send]]', 'needs revision -> [[draft]]'],
      }),
      'checks/facts.md': note({ front: { type: 'start' }, title: 'Check the facts', next: ['[[tone]]'] }),
      'checks/tone.md': note({ title: 'Check the tone' }),
    },
    vault,
  )
  const agent = await stdioClient(root)
  let { step } = await agent.call('plan_next', { vault: 'launch', query: 'Plan the launch' })
  expect(step).toMatchObject({ kind: 'work', node: { id: 'draft' } })
  const handedOut = [step.step]
  expect(await agent.call('plan_fact', { vault: 'launch', text: 'The venue holds 200 people.' })).toMatchObject({ id: 'F1' })
  ;({ step } = await agent.call('plan_finish', { vault: 'launch', key: step.key, output: 'a draft' }))
  // Inside the subplan: the entry names the nested note by its path from the vault.
  expect(step).toMatchObject({ kind: 'work', plan: 'checks', node: { id: 'facts' } })
  handedOut.push(step.step)
  expect(await agent.call('plan_assume', { vault: 'launch', text: 'The launch is in May.' })).toMatchObject({ id: 'A1' })
  expect(await agent.call('plan_invalidate', { vault: 'launch', id: 'A1', reason: 'moved to June' })).toMatchObject({ valid: false })
  ;({ step } = await agent.call('plan_finish', { vault: 'launch', key: step.key, output: 'facts checked' }))
  ;({ step } = await agent.call('plan_finish', { vault: 'launch', key: step.key, output: 'tone checked', choice: 'approved' }))
  expect(step).toMatchObject({ kind: 'work', node: { id: 'send' } })
  ;({ step } = await agent.call('plan_finish', { vault: 'launch', key: step.key, output: 'sent' }))
  expect(step.kind).toBe('completed')
  // No step is pending once the run is over: an entry then names none.
  expect(await agent.call('plan_decision', { vault: 'launch', text: 'Launch again next year.', reason: 'it went well' })).toMatchObject({ id: 'D1' })
  const ledger = await readLedger(vault)
  expect([...ledger.facts, ...ledger.assumptions, ...ledger.decisions].map(({ id, node, step }) => ({ id, node, step }))).toEqual([
    { id: 'F1', node: 'draft', step: handedOut[0] },
    { id: 'A1', node: 'checks/facts', step: handedOut[1] },
    { id: 'D1', node: undefined, step: undefined },
  ])
  expect(ledger.assumptions[0]!.changes.map(({ valid, node, step }) => ({ valid, node, step }))).toEqual([
    { valid: false, node: 'checks/facts', step: handedOut[1] },
  ])

  // A fork after the draft (step 1, by the top trace) keeps the fact recorded while drafting, and the next fact is F2, not F1 again.
  const into = join(await tempDir(), 'fork')
  await forkRun(vault, { step: 1, into })
  expect((await readLedger(into)).facts.map(({ id, step }) => ({ id, step }))).toEqual([{ id: 'F1', step: handedOut[0] }])
  expect(await recordEntry(into, { kind: 'fact', text: 'The venue has parking.' }, { fsync: false })).toBe('F2')
})
