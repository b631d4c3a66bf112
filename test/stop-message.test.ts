import { afterEach, describe, expect, it } from 'vitest'
import { runPlan, type StepInput } from 'vaultplan'
import { startChatServer } from './support/chat-server.js'
import { vaultplan } from './helpers/cli.js'
import { noJudge } from './helpers/scripted.js'
import { note, writeVault } from './helpers/vault.js'

const servers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

const query = 'Announce the launch'
const work = async (step: StepInput) => `${step.plan ? `${step.plan}/` : ''}${step.node.id} v${step.visit}`

/** Options that decide every condition in code: `yes` names the labels that hold (on a visit, when a function). */
function decided(yes: Record<string, boolean | ((visit: number) => boolean)>) {
  const predicates = Object.fromEntries(
    Object.entries(yes).map(([label, holds]) => [label, ({ visit }: { visit: number }) => (typeof holds === 'function' ? holds(visit) : holds)]),
  )
  return { query, work, predicates, llm: noJudge(), fsync: false }
}

/** approve -> draft -> review -> approve, with draft <-> review inside it: one strongly connected component of three notes. */
const reviewAndApprove = {
  'approve.md': note({ title: 'Approve', body: 'Approve the draft.', next: ['accepted -> [[send]]', 'rejected -> [[draft]]'] }),
  'draft.md': note({ front: { type: 'start', max_visits: 2 }, title: 'Draft', body: 'Write the draft.', next: ['[[review]]'] }),
  'review.md': note({ title: 'Review', body: 'Review the draft.', next: ['ready -> [[approve]]', 'needs revision -> [[draft]]'] }),
  'send.md': note({ title: 'Send', body: 'Send it.' }),
}

describe('a budget stop names the loop the run went round', () => {
  it('names draft <-> review, not every note of the component it sits in', async () => {
    const dir = await writeVault(reviewAndApprove)
    const result = await runPlan(dir, decided({ ready: false, 'needs revision': true, accepted: false, rejected: true }))
    expect(result).toEqual({
      status: 'stopped',
      output: 'review v2',
      reason:
        'Budget stop: `draft` was refused visit 3; its budget is max_visits 2 and it has been visited 2 times. ' +
        'It sits in the loop `draft` -> `review` -> `draft`. Raise `max_visits` in `draft.md` (or change the plan), ' +
        'then run the vault again to go on.',
      runId: result.runId,
      steps: 4,
      plannerCalls: 0,
      visits: { draft: 2, review: 2 },
      lastNode: 'review',
      runVault: dir,
      stop: { budget: 'max_visits', node: 'draft', visit: 3, loop: ['draft', 'review'] },
    })
  })

  it('names the whole way round when the run came back through approve, leaving out the rounds in between', async () => {
    const dir = await writeVault({
      ...reviewAndApprove,
      'approve.md': note({ front: { max_visits: 1 }, title: 'Approve', body: 'Approve.', next: ['accepted -> [[send]]', 'rejected -> [[draft]]'] }),
      'draft.md': note({ front: { type: 'start', max_visits: 3 }, title: 'Draft', body: 'Write the draft.', next: ['[[review]]'] }),
    })
    // draft, review, approve, draft, review (needs revision), draft, review, then approve again: refused.
    const result = await runPlan(dir, decided({ ready: (visit) => visit !== 2, 'needs revision': (visit) => visit === 2, accepted: false, rejected: true }))
    expect(result.stop).toEqual({ budget: 'max_visits', node: 'approve', visit: 2, loop: ['approve', 'draft', 'review'] })
    expect(result.reason).toContain('It sits in the loop `approve` -> `draft` -> `review` -> `approve`.')
  })

  it('names the loop in the order the run went round it, not in file order', async () => {
    const dir = await writeVault({
      'draft.md': note({ front: { type: 'start' }, title: 'Draft', body: 'Write the draft.', next: ['[[review]]'] }),
      'edit.md': note({ title: 'Edit', body: 'Edit the draft.', next: ['[[draft]]'] }),
      'review.md': note({ front: { max_visits: 2 }, title: 'Review', body: 'Review.', next: ['ready -> [[send]]', 'needs revision -> [[edit]]'] }),
      'send.md': note({ title: 'Send', body: 'Send it.' }),
    })
    const result = await runPlan(dir, decided({ ready: false, 'needs revision': true }))
    expect(result.stop).toEqual({ budget: 'max_visits', node: 'review', visit: 3, loop: ['draft', 'review', 'edit'] })
    expect(result.reason).toContain('It sits in the loop `draft` -> `review` -> `edit` -> `draft`.')
  })
})

describe('a stop before a note’s first visit, after a subplan', () => {
  /** outline -> research (find -> summarise) -> draft <-> review -> send. */
  const researchThenDraft = {
    'outline.md': note({ front: { type: 'start' }, title: 'Outline', body: 'Outline it.', next: ['[[research]]'] }),
    'research.md': note({ front: { plan: 'research' }, title: 'Research', body: 'Find the figures.', next: ['[[draft]]'] }),
    'draft.md': note({ title: 'Draft', body: 'Write the draft.', next: ['[[review]]'] }),
    'review.md': note({ title: 'Review', body: 'Review the draft.', next: ['approved -> [[send]]', 'needs revision -> [[draft]]'] }),
    'send.md': note({ title: 'Send', body: 'Send it.' }),
    'research/find.md': note({ front: { type: 'start' }, title: 'Find sources', body: 'Find three sources.', next: ['[[summarise]]'] }),
    'research/summarise.md': note({ title: 'Summarise', body: 'Summarise them.' }),
  }
  const options = { ...decided({ approved: false, 'needs revision': true }), maxSteps: 3 }
  const reason =
    'Budget stop: the run used its maxSteps budget of 3 steps before entering `draft` (visit 1). ' +
    'The run came to it without going round a loop. Pass a larger `maxSteps` and run the vault again to go on.'

  it('names `draft` and no loop: the run has not been round draft <-> review', async () => {
    const dir = await writeVault(researchThenDraft)
    const result = await runPlan(dir, options)
    expect(result).toEqual({
      status: 'stopped',
      output: 'research/summarise v1',
      reason,
      runId: result.runId,
      steps: 3,
      plannerCalls: 0,
      visits: { outline: 1, research: 1, 'research/find': 1, 'research/summarise': 1 },
      lastNode: 'research/summarise',
      runVault: dir,
      stop: { budget: 'maxSteps', node: 'draft', visit: 1, loop: [] },
    })
  })

  it('`vaultplan run` says the run stopped at `draft`, not at the subplan’s last note', async () => {
    const model = await startChatServer(() => 'done')
    servers.push(model)
    const dir = await writeVault(researchThenDraft)
    const run = await vaultplan(['run', dir, '--query', query, '--no-fsync', '--max-steps', '3'], { env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })
    expect(run.code).toBe(3)
    // The same reason, naming the flag a person at the command line passes.
    const said =
      'Budget stop: the run used its --max-steps budget of 3 steps before entering `draft` (visit 1). ' +
      'The run came to it without going round a loop. Pass a larger `--max-steps` and run the vault again to go on.'
    expect(run.stdout).toContain(`\nstopped after 3 steps at draft (visit 1 refused)\n${said}\n`)
  })
})
