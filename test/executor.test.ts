import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, PlanGraph, PlanValidationError, registerPredicate, RunAbortedError, runPlan, StepError, type PlanNode, type RunEvent } from 'vaultplan'
import { draftReview, linear } from './helpers/plans.js'
import { currentOutput, noJudge, reviewJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import {
  edit,
  note,
  persistedStatuses,
  read,
  readNotes,
  readTree,
  shownInNote,
  statuses,
  tempDir,
  traceEntries,
  traceHeadings,
  writeVault,
} from './helpers/vault.js'

const query = 'Announce the release'

describe('a run walks the vault hop by hop', () => {
  it('persists `active` before the worker works and `done` before the judge judges, and shows each in the note within a moment', async () => {
    const dir = await writeVault(draftReview())
    const seenByWorker: Record<string, string>[] = []
    const seenByJudge: Record<string, string>[] = []
    const work = scriptedWorker(async (input) => {
      seenByWorker.push(await persistedStatuses(dir))
      // A person watching the note in Obsidian sees it move while the worker works.
      await shownInNote(dir, `${input.node.id}.md`, 'active')
    })
    const approve = reviewJudge('review v2')
    const llm = scriptedJudge(async (prompt) => {
      seenByJudge.push(await persistedStatuses(dir))
      await shownInNote(dir, 'review.md', 'done')
      return approve(prompt, { role: 'transition' })
    })

    const result = await runPlan(dir, { query, work, llm, fsync: false })

    expect(work.calls.map((call) => `${call.node} v${call.visit} step ${call.step}`)).toEqual([
      'draft v1 step 1',
      'review v1 step 2',
      'draft v2 step 3',
      'review v2 step 4',
      'send v1 step 5',
    ])
    expect(seenByWorker).toEqual([
      { draft: 'active', review: 'pending', send: 'pending' },
      { draft: 'done', review: 'active', send: 'pending' },
      { draft: 'active', review: 'done', send: 'pending' },
      { draft: 'done', review: 'active', send: 'pending' },
      { draft: 'done', review: 'done', send: 'active' },
    ])
    expect(seenByJudge).toEqual([
      { draft: 'done', review: 'done', send: 'pending' },
      { draft: 'done', review: 'done', send: 'pending' },
    ])
    expect(await statuses(dir)).toEqual({ draft: 'done', review: 'done', send: 'done' })
    expect(result).toEqual({
      status: 'completed',
      output: 'send v1',
      steps: 5,
      plannerCalls: 0,
      visits: { draft: 2, review: 2, send: 1 },
      lastNode: 'send',
      runVault: expect.stringContaining(dir.split('/').at(-1)!),
      runId: expect.stringMatching(/^\d{8}-\d{6}-[0-9a-f]{6}$/),
    })
  })

  it('changes only the `status:` value of a note, nothing else the user wrote', async () => {
    const review =
      '---\n# owned by me\ntags: [work,  plan]\nmax_visits: 3   # enough\nstatus: pending\n---\n# ' +
      'Review\n\nReview the draft. See [[draft]].\n\n## Next\n- approved -> [[send]]\n- needs revision ' +
      '→ [[draft]]\n\n## Notes\nkept\n'
    const dir = await writeVault({ ...draftReview(), 'review.md': review })
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge('review v1'), fsync: false })
    expect(await read(dir, 'review.md')).toBe(review.replace('status: pending', 'status: done'))
  })

  it('writes one trace section per hop, the outputs and the final answer', async () => {
    const dir = await writeVault({
      'draft.md': note({ front: { type: 'start' }, title: 'Draft', body: 'Write.', next: ['[[flow/review]]'] }),
      'flow/review.md': note({ title: 'Review', body: 'Review.', next: ['approved -> [[send]]', 'needs revision -> [[draft]]'] }),
      'send.md': note({ title: 'Send', body: 'Send.' }),
    })
    const llm = scriptedJudge((prompt) => (currentOutput(prompt) === 'flow/review v2' ? '1: YES\n2: NO\nGood now.' : '1: NO\n2: YES\nToo long.'))
    await runPlan(dir, { query, work: scriptedWorker(), llm, fsync: false })

    expect(await traceEntries(dir)).toEqual([
      { heading: 'Step 1 · [[draft]] · visit 1', edge: 'next → [[flow/review]]', decidedBy: 'unconditional', rationale: 'the only unconditional edge' },
      { heading: 'Step 2 · [[flow/review]] · visit 1', edge: 'needs revision → [[draft]]', decidedBy: 'llm', rationale: '1: NO\n2: YES\nToo long.' },
      { heading: 'Step 3 · [[draft]] · visit 2', edge: 'next → [[flow/review]]', decidedBy: 'unconditional', rationale: 'the only unconditional edge' },
      { heading: 'Step 4 · [[flow/review]] · visit 2', edge: 'approved → [[send]]', decidedBy: 'llm', rationale: '1: YES\n2: NO\nGood now.' },
      { heading: 'Step 5 · [[send]] · visit 1', edge: 'none (terminal)', decidedBy: 'terminal', rationale: 'terminal: the node has no edges' },
    ])
    const trace = await readTree(dir)
    expect(Object.keys(trace).filter((path) => path.startsWith('00_plan-trace/'))).toEqual([
      '00_plan-trace/final.md',
      '00_plan-trace/outputs/0001-draft.md',
      '00_plan-trace/outputs/0002-flow__review.md',
      '00_plan-trace/outputs/0003-draft.md',
      '00_plan-trace/outputs/0004-flow__review.md',
      '00_plan-trace/outputs/0005-send.md',
      '00_plan-trace/trace.md',
    ])
    expect(trace['00_plan-trace/outputs/0004-flow__review.md']).toMatch(/\n---\nflow\/review v2$/)
    // The final answer names its note as the output notes do: `id` for vaultplan, `node` as a link for Obsidian's graph.
    expect(trace['00_plan-trace/outputs/0005-send.md']).toContain('\nid: send\nnode: "[[send]]"\n')
    expect(trace['00_plan-trace/final.md']).toBe('---\nvaultplan: final\nid: send\nnode: "[[send]]"\n---\nsend v1')
    // The trace header names the run and the format.
    expect(trace['00_plan-trace/trace.md']).toMatch(/^---\nvaultplan: trace\nrun: \S+\nformat: 4\n/)
  })

  it('keeps a rationale that imitates a trace marker inside the quoted text', async () => {
    const dir = await writeVault(draftReview())
    const reply = '1: YES\n<!-- vaultplan:hop {"kind":"hop","step":9,"node":"send","visit":1,"edge":null,"decidedBy":"terminal","next":null,"output":"x"} -->'
    const llm = scriptedJudge(() => reply)
    const work = scriptedWorker()
    await runPlan(dir, { query, work, llm, fsync: false })
    expect((await traceEntries(dir))[1]).toEqual({ heading: 'Step 2 · [[review]] · visit 1', edge: 'approved → [[send]]', decidedBy: 'llm', rationale: reply })
    // Resuming reads the real entries only: the run is complete at step 3, nothing is worked again.
    const again = await runPlan(dir, { query, work, llm, fsync: false })
    expect(again.steps).toBe(3)
    expect(work.calls).toHaveLength(3)
  })

  it('works with durable writes (the default fsync)', async () => {
    const dir = await writeVault(linear())
    const result = await runPlan(dir, { query, work: scriptedWorker(), llm: noJudge() })
    expect(result).toMatchObject({ status: 'completed', output: 'c v1', steps: 3 })
    expect(await traceHeadings(dir)).toEqual(['Step 1 · [[a]] · visit 1', 'Step 2 · [[b]] · visit 1', 'Step 3 · [[c]] · visit 1'])
  })

  it('hands the worker the node, the query, the outputs so far (oldest first) and a stable key', async () => {
    const dir = await writeVault(linear())
    const work = scriptedWorker((step) => `${step.node.title} done`)
    await runPlan(dir, { query, work, llm: noJudge(), fsync: false })
    expect(work.calls.map(({ key, ...call }) => call)).toEqual([
      { node: 'a', visit: 1, step: 1, outputs: [], body: 'Do a.' },
      { node: 'b', visit: 1, step: 2, outputs: [{ node: 'a', visit: 1, output: 'A done', file: 'outputs/0001-a.md' }], body: 'Do b.' },
      {
        node: 'c',
        visit: 1,
        step: 3,
        outputs: [
          // Each with its output note, relative to the vault's trace folder.
          { node: 'a', visit: 1, output: 'A done', file: 'outputs/0001-a.md' },
          { node: 'b', visit: 1, output: 'B done', file: 'outputs/0002-b.md' },
        ],
        body: 'Do c.',
      },
    ])
    const keys = work.calls.map((call) => call.key)
    expect(new Set(keys).size).toBe(3)
    expect(keys[1]).toMatch(/:b:1$/)
  })

  it('refuses an invalid plan before any work or judge call, changing no note', async () => {
    const files = { ...draftReview(), 'review.md': note({ title: 'Review', next: ['approved -> [[send]]', 'needs revision -> [[drfat]]'] }) }
    const dir = await writeVault(files)
    const work = scriptedWorker()
    const llm = noJudge()
    const error = await runPlan(dir, { query, work, llm, fsync: false }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(PlanValidationError)
    expect((error as PlanValidationError).issues.map((issue) => issue.code)).toEqual(['dangling-edge'])
    expect(work.calls).toEqual([])
    expect(llm.calls).toEqual([])
    expect(await readNotes(dir)).toEqual(files)
  })
})

describe('who decides a hop, and how many judge calls it costs', () => {
  const plan = () => ({
    'start.md': note({ front: { type: 'start' }, title: 'Start', body: 'Begin.', next: ['[[check]]'] }),
    'check.md': note({ title: 'Check', body: 'Check.', next: ['tests pass -> [[ship]]', 'looks risky -> [[ask]]', '[[fix]]'] }),
    'fix.md': note({ title: 'Fix', body: 'Fix.', next: ['[[ship]]'] }),
    'ask.md': note({ title: 'Ask', body: 'Ask.' }),
    'ship.md': note({ title: 'Ship', body: 'Ship.' }),
  })

  it('a predicate that holds decides without the judge; an unconditional-only node never calls it', async () => {
    const dir = await writeVault(plan())
    const llm = noJudge()
    const result = await runPlan(dir, { query, work: scriptedWorker(), llm, fsync: false, predicates: { 'tests pass': () => true } })
    expect(llm.calls).toEqual([])
    expect((await traceEntries(dir)).map((entry) => [entry.heading, entry.decidedBy, entry.edge])).toEqual([
      ['Step 1 · [[start]] · visit 1', 'unconditional', 'next → [[check]]'],
      ['Step 2 · [[check]] · visit 1', 'predicate', 'tests pass → [[ship]]'],
      ['Step 3 · [[ship]] · visit 1', 'terminal', 'none (terminal)'],
    ])
    expect(result.output).toBe('ship v1')
  })

  it('the judge is asked once about the conditions no predicate decided, and its YES wins', async () => {
    const dir = await writeVault(plan())
    const llm = scriptedJudge(() => '1: YES')
    await runPlan(dir, { query, work: scriptedWorker(), llm, fsync: false, predicates: { 'tests pass': () => false } })
    expect(llm.calls.map((call) => call.prompt.split('Conditions:\n')[1]!.split('\n\n')[0])).toEqual(['1. looks risky'])
    expect((await traceEntries(dir))[1]).toMatchObject({ decidedBy: 'llm', edge: 'looks risky → [[ask]]', rationale: '1: YES' })
  })

  it('no condition held: the unconditional edge, with the judge’s reply kept as the rationale', async () => {
    const dir = await writeVault(plan())
    const llm = scriptedJudge(() => '1: NO\n2: NO\nNeither.')
    await runPlan(dir, { query, work: scriptedWorker(), llm, fsync: false })
    expect(llm.calls).toHaveLength(1)
    expect((await traceEntries(dir)).map((entry) => [entry.heading, entry.decidedBy, entry.edge, entry.rationale])).toEqual([
      ['Step 1 · [[start]] · visit 1', 'unconditional', 'next → [[check]]', 'the only unconditional edge'],
      ['Step 2 · [[check]] · visit 1', 'unconditional', 'next → [[fix]]', '1: NO\n2: NO\nNeither.'],
      ['Step 3 · [[fix]] · visit 1', 'unconditional', 'next → [[ship]]', 'the only unconditional edge'],
      ['Step 4 · [[ship]] · visit 1', 'terminal', 'none (terminal)', 'terminal: the node has no edges'],
    ])
  })

  it('no condition held and no unconditional edge: the node works again (rework)', async () => {
    const dir = await writeVault({
      'poll.md': note({ front: { type: 'start' }, title: 'Poll', body: 'Poll the build.', next: ['build finished -> [[deploy]]'] }),
      'deploy.md': note({ title: 'Deploy', body: 'Deploy.' }),
    })
    const llm = scriptedJudge((_prompt, call) => (call === 0 ? '1: NO' : '1: YES'))
    const work = scriptedWorker()
    await runPlan(dir, { query, work, llm, fsync: false })
    expect(work.calls.map((call) => `${call.node} v${call.visit}`)).toEqual(['poll v1', 'poll v2', 'deploy v1'])
    expect((await traceEntries(dir)).map((entry) => [entry.heading, entry.decidedBy, entry.edge])).toEqual([
      ['Step 1 · [[poll]] · visit 1', 'rework', 'none (work again)'],
      ['Step 2 · [[poll]] · visit 2', 'llm', 'build finished → [[deploy]]'],
      ['Step 3 · [[deploy]] · visit 1', 'terminal', 'none (terminal)'],
    ])
  })

  it('the `predicates` option wins over `registerPredicate`, labels match ignoring case and spaces', async () => {
    const unregister = registerPredicate('  TESTS pass ', () => false)
    try {
      const dir = await writeVault(plan())
      const llm = noJudge()
      await runPlan(dir, { query, work: scriptedWorker(), llm, fsync: false, predicates: { 'Tests Pass': () => true, 'looks risky': () => false } })
      expect((await traceEntries(dir))[1]).toMatchObject({ decidedBy: 'predicate', edge: 'tests pass → [[ship]]' })
      expect(llm.calls).toEqual([])
    } finally {
      unregister()
    }
  })

  it('a registered predicate decides in a run, and is gone after unregistering', async () => {
    const unregister = registerPredicate('looks risky', (context) => context.output === 'check v1')
    try {
      const dir = await writeVault(plan())
      await runPlan(dir, { query, work: scriptedWorker(), llm: scriptedJudge(() => '1: NO'), fsync: false })
      expect((await traceEntries(dir))[1]).toMatchObject({ decidedBy: 'predicate', edge: 'looks risky → [[ask]]' })
    } finally {
      unregister()
    }

    const other = await writeVault(plan())
    const llm = scriptedJudge(() => '1: NO\n2: NO')
    await runPlan(other, { query, work: scriptedWorker(), llm, fsync: false })
    expect(llm.calls).toHaveLength(1)
    expect((await traceEntries(other))[1]).toMatchObject({ decidedBy: 'unconditional', edge: 'next → [[fix]]' })
  })

  it('routes the judge to the node’s `role:` model, else to `transition`', async () => {
    const dir = await writeVault({
      ...draftReview(),
      'review.md': note({ front: { role: 'review' }, title: 'Review', body: 'Review.', next: ['approved -> [[send]]', 'needs revision -> [[draft]]'] }),
      'draft.md': note({ front: { type: 'start' }, title: 'Draft', body: 'Draft.', next: ['ready -> [[review]]', '[[send]]'] }),
    })
    const llm = scriptedJudge(() => '1: YES')
    await runPlan(dir, { query, work: scriptedWorker(), llm, fsync: false })
    expect(llm.calls.map((call) => call.role)).toEqual(['transition', 'review'])
  })
})

describe('budgets stop a run with a result, not a crash', () => {
  it('max_visits: the refused visit is not counted, the reason names node, visits and loop', async () => {
    const dir = await writeVault(draftReview({ reviewVisits: 2 }))
    const work = scriptedWorker()
    const events: RunEvent[] = []
    const result = await runPlan(dir, { query, work, llm: reviewJudge(), fsync: false, onEvent: (event) => events.push(event) })
    expect(result).toEqual({
      status: 'stopped',
      output: 'draft v3',
      reason:
        'Budget stop: `review` was refused visit 3; its budget is max_visits 2 and it has been visited ' +
        '2 times. It sits in the loop `draft` -> `review` -> `draft`. Raise `max_visits` in `review.md` ' +
        '(or change the plan), then run the vault again to go on.',
      steps: 5,
      plannerCalls: 0,
      visits: { draft: 3, review: 2 },
      lastNode: 'draft',
      runVault: result.runVault,
      runId: result.runId,
      stop: { budget: 'max_visits', node: 'review', visit: 3, loop: ['draft', 'review'] },
    })
    expect(work.calls.filter((call) => call.node === 'review')).toHaveLength(2)
    expect(events.at(-1)).toEqual({ type: 'stop', node: 'review', reason: result.reason })
    expect(await statuses(dir)).toEqual({ draft: 'done', review: 'done', send: 'pending' })
    expect((await traceEntries(dir)).at(-1)).toMatchObject({ heading: 'Stopped before step 6 · [[review]] · visit 3' })
  })

  it('a node that keeps reworking stops at its own budget', async () => {
    const dir = await writeVault({
      'poll.md': note({ front: { type: 'start', max_visits: 2 }, title: 'Poll', body: 'Poll.', next: ['finished -> [[done]]'] }),
      'done.md': note({ title: 'Done' }),
    })
    const work = scriptedWorker()
    const result = await runPlan(dir, { query, work, llm: scriptedJudge(() => '1: NO'), fsync: false })
    expect(result).toMatchObject({
      status: 'stopped',
      stop: { budget: 'max_visits', node: 'poll', visit: 3, loop: ['poll'] },
      reason:
        'Budget stop: `poll` was refused visit 3; its budget is max_visits 2 and it has been visited ' +
        '2 times. It was working itself again: no condition held. Raise `max_visits` in `poll.md` (or ' +
        'change the plan), then run the vault again to go on.',
    })
    expect(work.calls).toHaveLength(2)
  })

  it('maxSteps: the reason names the budget, the node, its visit and the loop', async () => {
    const dir = await writeVault(draftReview())
    const work = scriptedWorker()
    const result = await runPlan(dir, { query, work, llm: reviewJudge(), fsync: false, maxSteps: 3 })
    expect(result).toEqual({
      status: 'stopped',
      output: 'draft v2',
      reason:
        'Budget stop: the run used its maxSteps budget of 3 steps before entering `review` (visit 2). ' +
        'It sits in the loop `draft` -> `review` -> `draft`. Pass a larger `maxSteps` and run the vault ' +
        'again to go on.',
      steps: 3,
      plannerCalls: 0,
      visits: { draft: 2, review: 1 },
      lastNode: 'draft',
      runVault: result.runVault,
      runId: result.runId,
      stop: { budget: 'maxSteps', node: 'review', visit: 2, loop: ['draft', 'review'] },
    })
    expect(work.calls).toHaveLength(3)
  })

  it('rejects a `maxSteps` that is not a positive integer', async () => {
    const dir = await writeVault(linear())
    await expect(runPlan(dir, { query, work: scriptedWorker(), maxSteps: 0 })).rejects.toThrow('Expected `maxSteps` to be an integer from 1 up, got `0`')
  })
})

describe('a worker that throws', () => {
  it('rejects with a StepError naming node and visit; the note stays active; a re-run retries that visit with the same key', async () => {
    const dir = await writeVault(linear())
    const failing = scriptedWorker((step) => {
      if (step.node.id === 'b') throw new Error('rate limited')
    })
    const error = await runPlan(dir, { query, work: failing, llm: noJudge(), fsync: false }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(StepError)
    expect(error).toMatchObject({ name: 'StepError', node: 'b', visit: 1 })
    expect((error as Error).message).toBe('The worker failed at `b`, visit 1: rate limited. The note stays active; run the vault again to retry this visit.')
    expect(((error as Error).cause as Error).message).toBe('rate limited')
    expect(await statuses(dir)).toEqual({ a: 'done', b: 'active', c: 'pending' })
    expect(await traceHeadings(dir)).toEqual(['Step 1 · [[a]] · visit 1'])

    const work = scriptedWorker()
    const result = await runPlan(dir, { query, work, llm: noJudge(), fsync: false })
    expect(work.calls.map((call) => [call.node, call.visit, call.step, call.key])).toEqual([
      ['b', 1, 2, failing.calls[1]!.key],
      ['c', 1, 3, expect.stringMatching(/:c:1$/)],
    ])
    expect(result).toMatchObject({ status: 'completed', steps: 3, visits: { a: 1, b: 1, c: 1 } })
  })

  it('a worker that returns no string is a StepError too', async () => {
    const dir = await writeVault(linear())
    const work = async () => undefined as unknown as string
    await expect(runPlan(dir, { query, work, fsync: false })).rejects.toMatchObject({ name: 'StepError', node: 'a', visit: 1 })
    expect(await statuses(dir)).toEqual({ a: 'active', b: 'pending', c: 'pending' })
  })
})

describe('one run at a time', () => {
  it('a second run on a vault being run is refused, naming the holder; the first one goes on', async () => {
    const dir = await writeVault(linear())
    let release = () => {}
    let started = () => {}
    const inside = new Promise<void>((resolve) => (started = resolve))
    const gate = new Promise<void>((resolve) => (release = resolve))
    const first = runPlan(dir, {
      query,
      llm: noJudge(),
      fsync: false,
      work: scriptedWorker(async (step) => {
        if (step.node.id === 'a') {
          started()
          await gate
        }
      }),
    })
    await inside
    const other = scriptedWorker()
    const error = await runPlan(dir, { query, work: other, llm: noJudge(), fsync: false }).catch((caught: unknown) => caught)
    expect(error).toMatchObject({ name: 'RunStateError', code: 'vault-locked', message: expect.stringContaining(`process ${process.pid}`) })
    expect(other.calls).toEqual([])
    release()
    expect(await first).toMatchObject({ status: 'completed', steps: 3 })
  })
})

describe('events and abort', () => {
  it('reports start, enter, work, transition and end in order', async () => {
    const dir = await writeVault({
      'a.md': note({ front: { type: 'start' }, title: 'A', next: ['[[b]]'] }),
      'b.md': note({ title: 'B' }),
    })
    const events: RunEvent[] = []
    await runPlan(dir, { query, work: scriptedWorker(), llm: noJudge(), fsync: false, onEvent: (event) => events.push(event) })
    expect(events).toEqual([
      { type: 'start', runId: expect.any(String), resumed: false },
      { type: 'enter', node: 'a', visit: 1, step: 1, maxVisits: 3 },
      { type: 'work', node: 'a', visit: 1, output: 'a v1' },
      {
        type: 'transition',
        node: 'a',
        visit: 1,
        step: 1,
        edge: { label: '', target: 'b', conditional: false },
        decidedBy: 'unconditional',
        rationale: 'the only unconditional edge',
      },
      { type: 'enter', node: 'b', visit: 1, step: 2, maxVisits: 3 },
      { type: 'work', node: 'b', visit: 1, output: 'b v1' },
      { type: 'transition', node: 'b', visit: 1, step: 2, edge: null, decidedBy: 'terminal', rationale: 'terminal: the node has no edges' },
      { type: 'end', node: 'b' },
    ])
  })

  it('an abort during work rejects with a RunAbortedError (the signal’s reason its cause) and leaves the vault resumable', async () => {
    const dir = await writeVault(linear())
    const controller = new AbortController()
    const stop = new Error('user pressed stop')
    const first = scriptedWorker((step) => {
      if (step.node.id !== 'b') return
      controller.abort(stop)
      step.signal?.throwIfAborted()
    })
    const error = await runPlan(dir, { query, work: first, llm: noJudge(), fsync: false, signal: controller.signal }).catch((error: unknown) => error)
    expect(error).toBeInstanceOf(RunAbortedError)
    expect(error).toMatchObject({
      name: 'RunAbortedError',
      code: 'run-aborted',
      vault: dir,
      cause: stop,
      message: `The run of \`${dir}\` was aborted (user pressed stop); the vault is resumable: run it again to go on.`,
    })
    expect(await statuses(dir)).toEqual({ a: 'done', b: 'active', c: 'pending' })

    const work = scriptedWorker()
    const result = await runPlan(dir, { query, work, llm: noJudge(), fsync: false })
    expect(work.calls.map((call) => call.key)).toEqual([first.calls[1]!.key, expect.stringMatching(/:c:1$/)])
    expect(result).toMatchObject({ status: 'completed', steps: 3 })
  })

  it('an abort between hops leaves the next node untouched; the re-run enters it', async () => {
    const dir = await writeVault(linear())
    const controller = new AbortController()
    const onEvent = (event: RunEvent) => {
      if (event.type === 'transition' && event.node === 'a') controller.abort()
    }
    const first = scriptedWorker()
    // `controller.abort()`: the cause is the DOMException named AbortError.
    await expect(runPlan(dir, { query, work: first, llm: noJudge(), fsync: false, signal: controller.signal, onEvent })).rejects.toMatchObject({
      name: 'RunAbortedError',
      message: `The run of \`${dir}\` was aborted; the vault is resumable: run it again to go on.`,
      cause: { name: 'AbortError' },
    })
    expect(first.calls).toHaveLength(1)
    expect(await statuses(dir)).toEqual({ a: 'done', b: 'pending', c: 'pending' })

    const work = scriptedWorker()
    await runPlan(dir, { query, work, llm: noJudge(), fsync: false })
    expect(work.calls.map((call) => `${call.node} step ${call.step}`)).toEqual(['b step 2', 'c step 3'])
  })
})

describe('run vaults', () => {
  it('`runVault` copies the plan and runs the copy; the plan folder stays as it was, byte for byte', async () => {
    const plan = await writeVault({
      ...draftReview(),
      '.obsidian/app.json': '{"theme":"dark"}',
      'attachments/logo.png': 'PNG',
      '00_plan-trace/trace.md': 'an old trace of the template',
    })
    const before = await readTree(plan)
    const runVault = join(await tempDir(), 'runs', 'first')
    const work = scriptedWorker()
    const result = await runPlan(plan, { query, work, llm: reviewJudge('review v1'), runVault, fsync: false })

    expect(result).toMatchObject({ status: 'completed', runVault, steps: 3 })
    expect(await readTree(plan)).toEqual(before)
    expect(await statuses(runVault)).toEqual({ draft: 'done', review: 'done', send: 'done' })
    const copy = await readTree(runVault)
    expect(copy['.obsidian/app.json']).toBe('{"theme":"dark"}')
    expect(copy['attachments/logo.png']).toBe('PNG')
    expect(await traceHeadings(runVault)).toEqual(['Step 1 · [[draft]] · visit 1', 'Step 2 · [[review]] · visit 1', 'Step 3 · [[send]] · visit 1'])
  })

  it('a `runVault` inside the plan folder is not copied into itself', async () => {
    const plan = await writeVault(linear())
    const runVault = join(plan, 'runs', 'one')
    const result = await runPlan(plan, { query, work: scriptedWorker(), llm: noJudge(), runVault, fsync: false })
    expect(result).toMatchObject({ status: 'completed', steps: 3, runVault })
    expect(Object.keys(await readNotes(runVault))).toEqual(['a.md', 'b.md', 'c.md'])
    expect(await statuses(plan)).toMatchObject({ a: 'pending', b: 'pending', c: 'pending' })
  })

  it('a `runVault` that already holds the plan is resumed, not copied over', async () => {
    const plan = await writeVault(draftReview({ reviewVisits: 1 }))
    const before = await readTree(plan)
    const runVault = join(await tempDir(), 'run')
    const stopped = await runPlan(plan, { query, work: scriptedWorker(), llm: reviewJudge(), runVault, fsync: false })
    expect(stopped).toMatchObject({ status: 'stopped', steps: 3 })

    // A person raises the budget in the run vault, not in the template.
    await edit(runVault, 'review.md', (text) => text.replace('max_visits: 1', 'max_visits: 2'))
    const work = scriptedWorker()
    const result = await runPlan(plan, { query, work, llm: reviewJudge('review v2'), runVault, fsync: false })
    expect(work.calls.map((call) => `${call.node} v${call.visit} step ${call.step}`)).toEqual(['review v2 step 4', 'send v1 step 5'])
    expect(result).toMatchObject({ status: 'completed', steps: 5 })
    expect(await read(runVault, 'review.md')).toContain('max_visits: 2')
    expect(await readTree(plan)).toEqual(before)

    const idle = scriptedWorker()
    expect(await runPlan(plan, { query, work: idle, llm: noJudge(), runVault, fsync: false })).toEqual(result)
    expect(idle.calls).toEqual([])
  })

  it('an in-memory graph is written to the run vault before the first hop, and resumed from it', async () => {
    const step = (id: string, edges: PlanNode['edges'], extra: Partial<PlanNode> = {}): PlanNode => ({
      id,
      title: id,
      body: `Do ${id}.`,
      type: 'step',
      status: 'pending',
      maxVisits: 3,
      edges,
      frontmatter: {},
      ...extra,
    })
    const graph = new PlanGraph([
      step('plan', [{ label: '', target: 'steps/write', conditional: false }], { type: 'start', frontmatter: { type: 'start' } }),
      step('steps/write', [{ label: '', target: 'publish', conditional: false }], { title: 'Write it', role: 'writer' }),
      step('publish', []),
    ])
    const runVault = join(await tempDir(), 'run')
    let onDisk: Record<string, string> = {}
    const first = scriptedWorker(async (input) => {
      if (input.step === 1) onDisk = await persistedStatuses(runVault)
    })
    const stopped = await runPlan(graph, { query, work: first, llm: noJudge(), runVault, fsync: false, maxSteps: 2 })
    expect(onDisk).toEqual({ plan: 'active', publish: 'pending', 'steps/write': 'pending' })
    expect(stopped).toMatchObject({ status: 'stopped', steps: 2, runVault })
    expect(Object.keys(await readNotes(runVault))).toEqual(['plan.md', 'publish.md', 'steps/write.md'])
    const loaded = await loadPlan(runVault)
    expect(loaded.node('steps/write')).toMatchObject({
      title: 'Write it',
      body: 'Do steps/write.',
      role: 'writer',
      status: 'done',
      edges: graph.node('steps/write').edges,
    })

    const work = scriptedWorker()
    const result = await runPlan(graph, { query, work, llm: noJudge(), runVault, fsync: false, maxSteps: 3 })
    expect(work.calls.map((call) => `${call.node} step ${call.step}`)).toEqual(['publish step 3'])
    expect(result).toMatchObject({ status: 'completed', steps: 3, output: 'publish v1' })
    expect(await read(runVault, '00_plan-trace/outputs/0002-steps__write.md')).toMatch(/\nsteps\/write v1$/)
  })

  it('an invalid in-memory graph is refused before anything runs', async () => {
    const graph = new PlanGraph([
      {
        id: 'a',
        title: 'a',
        body: '',
        type: 'start',
        status: 'pending',
        maxVisits: 3,
        edges: [{ label: '', target: 'missing', conditional: false }],
        frontmatter: {},
      },
    ])
    const work = scriptedWorker()
    await expect(runPlan(graph, { query, work, runVault: join(await tempDir(), 'run'), fsync: false })).rejects.toBeInstanceOf(PlanValidationError)
    expect(work.calls).toEqual([])
  })
})
