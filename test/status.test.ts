import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import { readRunStatus, runPlan, StepError, type NodeState, type RunStatus } from 'vaultplan'
import { nextSentence } from '../src/cli/cli-status.js'
import { draftReview, humanReview } from './helpers/plans.js'
import { noJudge, reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, writeVault } from './helpers/vault.js'

const query = 'Announce the release'
const shownAs = 'plans/announce'

function nodes(...rows: [id: string, status: NodeState['status'], visits: number, maxVisits?: number][]): NodeState[] {
  return rows.map(([id, status, visits, maxVisits = 3]) => ({
    id,
    file: `${id}.md`,
    status,
    visits,
    maxVisits,
    start: id === 'draft',
    terminal: id === 'send',
  }))
}

/** The status with `next` worded as `vaultplan status` words it. */
async function readStatus(dir: string, options: { hops?: number } = {}, shown = shownAs): Promise<Omit<RunStatus, 'next'> & { next: string }> {
  const status = await readRunStatus(dir, options)
  return { ...status, next: nextSentence(status, shown) }
}

/** The run's id and start time are random; everything else is compared whole. */
function withoutRunId<T extends { run: RunStatus['run'] }>(status: T): T {
  return status.run ? { ...status, run: { ...status.run, id: '<run>', started: '<time>' } } : status
}

describe('readRunStatus', () => {
  test('fresh: no trace yet, where a run would start and how to start it', async () => {
    const dir = await writeVault(draftReview())
    expect(await readStatus(dir)).toEqual({
      vault: dir,
      run: null,
      phase: 'fresh',
      node: 'draft',
      nodes: nodes(['draft', 'pending', 0], ['review', 'pending', 0], ['send', 'pending', 0]),
      hops: [],
      issues: [],
      next: 'Start the run: `vaultplan run plans/announce --query "..."`. It starts at `draft`.',
    })
  })

  test('interrupted: the worker threw at `review`, which stays active; resuming works that visit again', async () => {
    const dir = await writeVault(draftReview())
    const work = scriptedWorker((step) => {
      if (step.node.id === 'review') throw new Error('the network is down')
    })
    await expect(runPlan(dir, { query, work, llm: noJudge(), fsync: false })).rejects.toThrow(StepError)

    expect(withoutRunId(await readStatus(dir))).toEqual({
      vault: dir,
      run: { id: '<run>', query, started: '<time>', steps: 1 },
      phase: 'interrupted',
      node: 'review',
      visit: 1,
      step: 2,
      // The visit being worked counts: `active 1/3`, as the sentence says visit 1.
      nodes: nodes(['draft', 'done', 1], ['review', 'active', 1], ['send', 'pending', 0]),
      hops: [{ step: 1, node: 'draft', visit: 1, edge: { label: '', target: 'review', conditional: false }, decidedBy: 'unconditional' }],
      issues: [],
      next: 'Resume the run: `vaultplan run plans/announce` (it goes on at `review`, visit 1).',
    })
  })

  test('running: a live run holds the vault while its worker works', async () => {
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
    expect(seen).toMatchObject({
      phase: 'running',
      node: 'review',
      visit: 1,
      step: 2,
      next: 'A run is working in the vault now, at `review` (visit 1); watch it in your notes app, or ask for the status again later.',
    })
    expect((await run).status).toBe('completed')
    expect((await readRunStatus(dir)).phase).toBe('completed')
  })

  test('waiting: a person decides `review`; the boxes to tick, then which one is ticked', async () => {
    const dir = await writeVault(humanReview())
    const result = await runPlan(dir, { query, work: scriptedWorker(), llm: noJudge(), fsync: false })
    expect(result.status).toBe('waiting')

    const waiting = withoutRunId(await readStatus(dir))
    expect(waiting).toEqual({
      vault: dir,
      run: { id: '<run>', query, started: '<time>', steps: 2 },
      phase: 'waiting',
      node: 'review',
      visit: 1,
      file: 'review.md',
      boxes: [
        { label: 'approved', target: 'send', box: true, checked: false },
        { label: 'needs revision', target: 'draft', box: true, checked: false },
      ],
      nodes: nodes(['draft', 'done', 1], ['review', 'waiting', 1], ['send', 'pending', 0]),
      hops: [{ step: 1, node: 'draft', visit: 1, edge: { label: '', target: 'review', conditional: false }, decidedBy: 'unconditional' }],
      issues: [],
      next: 'Tick one box under `## Next` in `plans/announce/review.md` (write under `## Feedback` if you like), then `vaultplan run plans/announce`.',
    })

    await edit(dir, 'review.md', (text) => text.replace('- [ ] approved', '- [x] approved'))
    expect((await readStatus(dir)).next).toBe('`approved -> [[send]]` is ticked: `vaultplan run plans/announce` to go on along it.')
    await edit(dir, 'review.md', (text) => text.replace('- [ ] needs revision', '- [x] needs revision'))
    expect((await readStatus(dir)).next).toBe('2 boxes are ticked in `plans/announce/review.md`; untick all but one, then `vaultplan run plans/announce`.')
  })

  test('waiting on items a person wrote back without boxes: says how to tick one', async () => {
    const files = humanReview()
    files['review.md'] = files['review.md']!.replace(/- \[ \] /g, '- ')
    const dir = await writeVault(files)
    await runPlan(dir, { query, work: scriptedWorker(), llm: noJudge(), fsync: false })
    // The executor shows the items as boxes while the node waits; a person takes them out again.
    const note = join(dir, 'review.md')
    const shown = await readFile(note, 'utf8')
    expect(shown).toContain('- [ ] approved -> [[send]]')
    await writeFile(note, shown.replace(/- \[ \] /g, '- '))
    const status = await readStatus(dir)
    expect(status).toMatchObject({
      phase: 'waiting',
      boxes: [
        { label: 'approved', box: false, checked: false },
        { label: 'needs revision', box: false, checked: false },
      ],
    })
    expect(status.next).toBe(
      'Tick one box under `## Next` in `plans/announce/review.md`; an item without a box is ticked ' +
        'by writing one: `- [x] approved -> [[send]]` (write under `## Feedback` if you like), then ' +
        '`vaultplan run plans/announce`.',
    )
  })

  test('stopped: `review` ran out of max_visits; raising it in the note says the run can go on', async () => {
    const dir = await writeVault(draftReview({ reviewVisits: 1 }))
    const result = await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge(), fsync: false })
    expect(result.status).toBe('stopped')

    expect(withoutRunId(await readStatus(dir, { hops: 2 }))).toEqual({
      vault: dir,
      run: { id: '<run>', query, started: '<time>', steps: 3 },
      phase: 'stopped',
      node: 'review',
      visit: 2,
      budget: 'max_visits',
      reason: result.reason,
      nodes: nodes(['draft', 'done', 2], ['review', 'done', 1, 1], ['send', 'pending', 0]),
      hops: [
        { step: 2, node: 'review', visit: 1, edge: { label: 'needs revision', target: 'draft', conditional: true }, decidedBy: 'llm' },
        { step: 3, node: 'draft', visit: 2, edge: { label: '', target: 'review', conditional: false }, decidedBy: 'unconditional' },
      ],
      issues: [],
      next: 'Raise `max_visits` in `plans/announce/review.md` above 1 (or change the plan), then `vaultplan run plans/announce`.',
    })

    await edit(dir, 'review.md', (text) => text.replace('---\n# Review', '---\nmax_visits: 3\n# Review').replace('max_visits: 1\n', ''))
    expect((await readStatus(dir)).next).toBe('`max_visits` of `review` is 3 now, enough for visit 2: `vaultplan run plans/announce` to go on.')
  })

  test('stopped by maxSteps: run again with a larger --max-steps', async () => {
    const dir = await writeVault(draftReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge(), fsync: false, maxSteps: 2 })
    expect(await readStatus(dir)).toMatchObject({
      phase: 'stopped',
      node: 'draft',
      visit: 2,
      budget: 'maxSteps',
      next: 'Run again with a larger step budget: `vaultplan run plans/announce --max-steps 12`.',
    })
  })

  test('completed: the terminal, the start of the final output, nothing left to do', async () => {
    const dir = await writeVault(draftReview())
    const long = `${'Dear all, '.repeat(60)}the end.`
    const work = scriptedWorker((step) => (step.node.id === 'send' ? long : undefined))
    await runPlan(dir, { query, work, llm: reviewJudge('review v2'), fsync: false })

    const status = withoutRunId(await readStatus(dir, { hops: 3 }))
    expect(status).toEqual({
      vault: dir,
      run: { id: '<run>', query, started: '<time>', steps: 5 },
      phase: 'completed',
      node: 'send',
      output: `${long.slice(0, 400).trimEnd()}…`,
      nodes: nodes(['draft', 'done', 2], ['review', 'done', 2], ['send', 'done', 1]),
      hops: [
        { step: 3, node: 'draft', visit: 2, edge: { label: '', target: 'review', conditional: false }, decidedBy: 'unconditional' },
        { step: 4, node: 'review', visit: 2, edge: { label: 'approved', target: 'send', conditional: true }, decidedBy: 'llm' },
        { step: 5, node: 'send', visit: 1, edge: null, decidedBy: 'terminal' },
      ],
      issues: [],
      next: 'Nothing to do: the run is complete. Read `plans/announce/00_plan-trace/final.md`, or start over with `vaultplan run plans/announce --fresh`.',
    })
  })

  test('invalid: an edit broke the plan while it waits; the errors and which to fix first', async () => {
    const dir = await writeVault(humanReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: noJudge(), fsync: false })
    await edit(dir, 'review.md', (text) => text.replace('[[send]]', '[[sned]]'))

    const status = await readStatus(dir)
    expect(status).toMatchObject({ phase: 'invalid', run: { query, steps: 2 } })
    expect(status.issues.map((issue) => [issue.severity, issue.code, issue.file, issue.line])).toEqual([['error', 'dangling-edge', 'review.md', 10]])
    expect(status.next).toBe(
      "Fix the plan's error (start with `plans/announce/review.md` line 10: edge `approved` -> " +
        '`[[sned]]` matches no note; did you mean `[[send]]`?), then check with `vaultplan validate plans/announce`; a run refuses ' +
        'an invalid plan, and the vault stays resumable.',
    )
  })

  test('a vault path with spaces is quoted for the shell', async () => {
    const dir = await writeVault(draftReview())
    expect((await readStatus(dir, {}, "my plans/it's")).next).toBe(
      `Start the run: \`vaultplan run 'my plans/it'\\''s' --query "..."\`. It starts at \`draft\`.`,
    )
  })

  test('hops must be a count', async () => {
    const dir = await writeVault(draftReview())
    await expect(readRunStatus(dir, { hops: -1 })).rejects.toThrow('Expected `hops` to be an integer from 0 up, got `-1`')
    expect((await readRunStatus(dir, { hops: 0 })).hops).toEqual([])
  })
})
