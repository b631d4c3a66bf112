import { describe, expect, test } from 'vitest'
import { readRunStatus, runPlan, StepError, type RunStatus } from 'vaultplan'
import { nextSentence } from '../src/cli/cli-status.js'
import { draftReview, humanReview } from './helpers/plans.js'
import { noJudge, reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, writeVault } from './helpers/vault.js'

const query = 'Announce the release'
const shownAs = 'plans/announce'

/** The status with `next` worded as `vaultplan status` words it. */
async function readStatus(dir: string, options: { hops?: number } = {}, shown = shownAs): Promise<RunStatus & { sentence: string }> {
  const status = await readRunStatus(dir, options)
  return { ...status, sentence: nextSentence(status, shown) }
}

/** Each note's id, status and visits of its budget. */
function rows(status: RunStatus): string[] {
  return status.nodes.map((node) => `${node.id} ${node.status} ${node.visits}/${node.maxVisits}`)
}

describe('readRunStatus: the snapshot, with the claims beside its phase', () => {
  test('fresh: no trace yet, where a run would start and how to start it', async () => {
    const dir = await writeVault(draftReview())
    const status = await readStatus(dir)
    expect({ phase: status.phase, run: status.run, next: status.next, claims: status.claims, rows: rows(status) }).toEqual({
      phase: 'fresh',
      run: null,
      next: { kind: 'fresh', node: 'draft' },
      claims: [],
      rows: ['draft pending 0/3', 'review pending 0/3', 'send pending 0/3'],
    })
    expect(status.sentence).toBe('Start the run: `vaultplan run plans/announce --query "..."`. It starts at `draft`.')
  })

  test('ready: the worker threw at `review`, which stays active; resuming works that visit again', async () => {
    const dir = await writeVault(draftReview())
    const work = scriptedWorker((step) => {
      if (step.node.id === 'review') throw new Error('the network is down')
    })
    await expect(runPlan(dir, { query, work, llm: noJudge(), fsync: false })).rejects.toThrow(StepError)
    const status = await readStatus(dir)
    expect({ phase: status.phase, steps: status.steps, next: status.next, holder: status.holder, rows: rows(status) }).toEqual({
      phase: 'ready',
      steps: 1,
      next: { kind: 'work', node: 'review', visit: 1, step: 2 },
      holder: undefined,
      // The visit being worked counts: `active 1/3`, as the sentence says visit 1.
      rows: ['draft done 1/3', 'review active 1/3', 'send pending 0/3'],
    })
    expect(status.hops).toEqual([{ step: 1, node: 'draft', visit: 1, edge: { label: '', target: 'review', conditional: false }, decidedBy: 'unconditional' }])
    expect(status.sentence).toBe('Resume the run: `vaultplan run plans/announce` (it goes on at `review`, visit 1).')
  })

  test('ready, and held: a live run holds the vault while its worker works; the holder is shown beside the phase', async () => {
    const dir = await writeVault(draftReview())
    let release!: () => void
    const held = new Promise<void>((done) => (release = done))
    let seen: Awaited<ReturnType<typeof readStatus>> | undefined
    const work = scriptedWorker(async (step) => {
      if (step.node.id !== 'review' || seen) return
      seen = await readStatus(dir)
      release()
    })
    const run = runPlan(dir, { query, work, llm: reviewJudge('review v1'), fsync: false })
    await held
    expect(seen).toMatchObject({ phase: 'ready', next: { kind: 'work', node: 'review', visit: 1, step: 2 }, holder: { pid: process.pid } })
    expect(seen!.sentence).toBe('A run is working in the vault now, at `review` (visit 1); watch it in your notes app, or ask for the status again later.')
    expect((await run).status).toBe('completed')
    expect((await readRunStatus(dir)).phase).toBe('completed')
  })

  test('waiting: a person decides `review`; once one box is ticked, the run is ready to go on along it', async () => {
    const dir = await writeVault(humanReview())
    const result = await runPlan(dir, { query, work: scriptedWorker(), llm: noJudge(), fsync: false })
    expect(result.status).toBe('waiting')
    const waiting = await readStatus(dir)
    expect({ phase: waiting.phase, next: waiting.next, waiting: waiting.waiting, rows: rows(waiting) }).toEqual({
      phase: 'waiting',
      next: { kind: 'waiting', node: 'review' },
      waiting: [{ kind: 'human', node: 'review', file: 'review.md', choices: ['approved', 'needs revision'] }],
      rows: ['draft done 1/3', 'review waiting 1/3', 'send pending 0/3'],
    })
    expect(waiting.sentence).toBe(
      'Tick one box under `## Next` in `plans/announce/review.md` (write under `## Feedback` if you like), then `vaultplan run plans/announce`.',
    )
    await edit(dir, 'review.md', (text) => text.replace('- [ ] approved', '- [x] approved'))
    const ticked = await readStatus(dir)
    expect({ phase: ticked.phase, next: ticked.next }).toEqual({ phase: 'ready', next: { kind: 'work', node: 'send', visit: 1, step: 3 } })
    expect(ticked.sentence).toBe('Resume the run: `vaultplan run plans/announce` (it goes on at `send`, visit 1).')
  })

  test('stopped: `review` ran out of max_visits; raised in the note, the run is ready to go on', async () => {
    const dir = await writeVault(draftReview({ reviewVisits: 1 }))
    const result = await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge(), fsync: false })
    expect(result.status).toBe('stopped')
    const status = await readStatus(dir, { hops: 2 })
    expect({ phase: status.phase, stop: status.stop, next: status.next, rows: rows(status) }).toEqual({
      phase: 'stopped',
      stop: { ...result.stop, reason: result.reason },
      next: { kind: 'stopped', node: 'review', visit: 2 },
      rows: ['draft done 2/3', 'review done 1/1', 'send pending 0/3'],
    })
    expect(status.sentence).toBe('Raise `max_visits` in `plans/announce/review.md` above 1 (or change the plan), then `vaultplan run plans/announce`.')
    await edit(dir, 'review.md', (text) => text.replace('---\n# Review', '---\nmax_visits: 3\n# Review').replace('max_visits: 1\n', ''))
    const raised = await readStatus(dir)
    expect({ phase: raised.phase, next: raised.next }).toEqual({ phase: 'ready', next: { kind: 'work', node: 'review', visit: 2, step: 4 } })
  })

  test('stopped by maxSteps: run again with a larger --max-steps', async () => {
    const dir = await writeVault(draftReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge(), fsync: false, maxSteps: 2 })
    const status = await readStatus(dir)
    expect({ phase: status.phase, next: status.next, budget: status.stop?.budget }).toEqual({
      phase: 'stopped',
      next: { kind: 'stopped', node: 'draft', visit: 2 },
      budget: 'maxSteps',
    })
    expect(status.sentence).toBe('Run again with a larger step budget: `vaultplan run plans/announce --max-steps 12`.')
  })

  test('completed: the terminal and its output, nothing left to do', async () => {
    const dir = await writeVault(draftReview())
    const long = `${'Dear all, '.repeat(60)}the end.`
    const work = scriptedWorker((step) => (step.node.id === 'send' ? long : undefined))
    await runPlan(dir, { query, work, llm: reviewJudge('review v2'), fsync: false })
    const status = await readStatus(dir, { hops: 3 })
    expect({ phase: status.phase, result: status.result, next: status.next, rows: rows(status) }).toEqual({
      phase: 'completed',
      result: { node: 'send', output: long },
      next: { kind: 'completed', node: 'send' },
      rows: ['draft done 2/3', 'review done 2/3', 'send done 1/3'],
    })
    expect(status.hops).toEqual([
      { step: 3, node: 'draft', visit: 2, edge: { label: '', target: 'review', conditional: false }, decidedBy: 'unconditional' },
      { step: 4, node: 'review', visit: 2, edge: { label: 'approved', target: 'send', conditional: true }, decidedBy: 'llm' },
      { step: 5, node: 'send', visit: 1, edge: null, decidedBy: 'terminal' },
    ])
    expect(status.sentence).toBe(
      'Nothing to do: the run is complete. Read `plans/announce/00_plan-trace/final.md`, or start over with `vaultplan run plans/announce --fresh`.',
    )
  })

  test('invalid: an edit broke the plan while it waits; the errors and which to fix first', async () => {
    const dir = await writeVault(humanReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: noJudge(), fsync: false })
    await edit(dir, 'review.md', (text) => text.replace('[[send]]', '[[sned]]'))
    const status = await readStatus(dir)
    expect({ phase: status.phase, query: status.run?.query, steps: status.steps }).toEqual({ phase: 'invalid', query, steps: 2 })
    expect(status.issues.map((issue) => [issue.severity, issue.code, issue.file, issue.line])).toEqual([['error', 'dangling-edge', 'review.md', 10]])
    expect(status.sentence).toBe(
      "Fix the plan's error (start with `plans/announce/review.md` line 10: edge `approved` -> " +
        '`[[sned]]` matches no note; did you mean `[[send]]`?), then check with `vaultplan validate plans/announce`; a run refuses ' +
        'an invalid plan, and the vault stays resumable.',
    )
  })

  test('a vault path with spaces is quoted for the shell', async () => {
    const dir = await writeVault(draftReview())
    expect((await readStatus(dir, {}, "my plans/it's")).sentence).toBe(
      `Start the run: \`vaultplan run 'my plans/it'\\''s' --query "..."\`. It starts at \`draft\`.`,
    )
  })

  test('hops must be a count', async () => {
    const dir = await writeVault(draftReview())
    await expect(readRunStatus(dir, { hops: -1 })).rejects.toThrow('Expected `hops` to be an integer from 0 up, got `-1`')
    expect((await readRunStatus(dir, { hops: 0 })).hops).toEqual([])
  })
})
