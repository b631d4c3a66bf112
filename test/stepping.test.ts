import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { crashSeam } from '../src/run/drive/events.js'
import { completeStep, decide, nextStep, readRunStatus, RunAbortedError, runPlan } from 'vaultplan'
import { draftReview, humanReview, work } from './helpers/plans.js'
import { noJudge, reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, read, readTree, statuses, traceEntries, writeVault } from './helpers/vault.js'

const query = 'Announce the release'
const options = { fsync: false }

/** The marker records of the trace, as the executor reads them back. */
async function records(dir: string): Promise<Record<string, unknown>[]> {
  const text = await read(dir, '00_plan-trace/trace.md')
  return [...text.matchAll(/^<!-- vaultplan:hop (.*) -->$/gm)].map(([, json]) => JSON.parse(json!) as Record<string, unknown>)
}

describe('nextStep claims a visit, idempotently', () => {
  it('claims the start note: active on disk, the trace header written, the same step on every call until completed', async () => {
    const dir = await writeVault(draftReview())
    const first = work(await nextStep(dir, { ...options, query }))
    expect(first).toMatchObject({ kind: 'work', step: 1, visit: 1, query, conditions: ['next'], outputs: [] })
    expect(first.node).toMatchObject({ id: 'draft', title: 'Draft', body: 'Write the draft.' })
    expect(first.key).toBe(`${first.runId}:draft:1`)
    expect(await statuses(dir)).toEqual({ draft: 'active', review: 'pending', send: 'pending' })
    const tree = await readTree(dir)
    // An agent that lost its context asks again: the same step, nothing counted again (no query needed now).
    expect(await nextStep(dir, options)).toEqual(first)
    expect(await nextStep(dir, { ...options, query })).toEqual(first)
    expect(await readTree(dir)).toEqual(tree)
  })

  it('a vault with no run needs a query; another query than the recorded one changes nothing', async () => {
    const dir = await writeVault(draftReview())
    await expect(nextStep(dir, options)).rejects.toThrow(TypeError)
    expect(await readTree(dir)).toEqual(await readTree(await writeVault(draftReview())))
    await nextStep(dir, { ...options, query })
    const tree = await readTree(dir)
    await expect(nextStep(dir, { ...options, query: 'Something else' })).rejects.toMatchObject({
      name: 'RunStateError',
      code: 'query-mismatch',
      message: expect.stringContaining('fresh: true'),
    })
    expect(await readTree(dir)).toEqual(tree)
  })

  it('two calls at once in one process are serialized, never refused by their own lock', async () => {
    const dir = await writeVault(draftReview())
    const [a, b] = await Promise.all([nextStep(dir, { ...options, query }), nextStep(dir, { ...options, query })])
    expect(a).toEqual(b)
  })
})

describe('completeStep', () => {
  it('aborted by its signal while the judge is asked, rejects with a RunAbortedError; the same key completes afterwards', async () => {
    const dir = await writeVault(draftReview())
    const options = { query: 'Announce', fsync: false }
    const draft = work(await nextStep(dir, options))
    const step = work(await completeStep(dir, draft.key, { output: 'draft' }, { ...options, llm: noJudge() }))
    expect(step.node.id).toBe('review')
    const controller = new AbortController()
    const llm = async (_prompt: string, call: { signal?: AbortSignal }) => {
      controller.abort()
      call.signal?.throwIfAborted()
      return '1: YES\n2: NO'
    }
    const aborted = completeStep(dir, step.key, { output: 'review' }, { ...options, llm, signal: controller.signal })
    await expect(aborted).rejects.toBeInstanceOf(RunAbortedError)
    await expect(aborted).rejects.toMatchObject({ code: 'run-aborted', cause: { name: 'AbortError' } })
    // The output was saved before the judge was asked: the same key goes on by judging it.
    const next = await completeStep(dir, step.key, { output: 'review' }, { ...options, llm: async () => '1: YES\n2: NO' })
    expect(next).toMatchObject({ kind: 'work', node: { id: 'send' } })
  })

  it('walks a plan to its end, one call per hop, the agent choosing the edges', async () => {
    const dir = await writeVault(draftReview())
    const path: string[] = []
    let step = await nextStep(dir, { ...options, query })
    const choices = ['next', 'needs revision', 'next', 'approved', undefined]
    while (step.kind === 'work') {
      path.push(`${step.node.id} ${step.visit} [${step.conditions.join(', ')}]`)
      const choice = choices.shift()
      step = await completeStep(dir, step.key, { output: `${step.node.id} v${step.visit}`, ...(choice !== undefined && { choice }) }, options)
    }
    expect(path).toEqual(['draft 1 [next]', 'review 1 [approved, needs revision]', 'draft 2 [next]', 'review 2 [approved, needs revision]', 'send 1 []'])
    expect(step).toEqual({ kind: 'completed', runId: expect.any(String), node: 'send', output: 'send v1' })
    expect((await records(dir)).map((record) => `${record.node} ${record.decidedBy} ${record.choice ?? '-'}`)).toEqual([
      'draft agent next',
      'review agent needs revision',
      'draft agent next',
      'review agent approved',
      'send terminal -',
    ])
    // Same as runPlan: the recorded result, nothing worked again.
    expect(await runPlan(dir, { work: scriptedWorker(), llm: noJudge(), ...options })).toMatchObject({ status: 'completed', output: 'send v1', steps: 5 })
  })

  it('a choice matches the label ignoring case and space, or the target of one edge', async () => {
    const dir = await writeVault(draftReview())
    let step = work(await nextStep(dir, { ...options, query }))
    step = work(await completeStep(dir, step.key, { output: 'd' }, options))
    step = work(await completeStep(dir, step.key, { output: 'r', choice: '  APPROVED ' }, options))
    expect(step.node.id).toBe('send')
    const other = await writeVault(draftReview())
    let next = work(await nextStep(other, { ...options, query }))
    next = work(await completeStep(other, next.key, { output: 'd' }, options))
    next = work(await completeStep(other, next.key, { output: 'r', choice: 'draft' }, options))
    expect([next.node.id, next.visit]).toEqual(['draft', 2])
  })

  it('a stale key is refused and nothing is written', async () => {
    const dir = await writeVault(draftReview())
    const first = work(await nextStep(dir, { ...options, query }))
    const second = work(await completeStep(dir, first.key, { output: 'd' }, options))
    const tree = await readTree(dir)
    await expect(completeStep(dir, first.key, { output: 'again' }, options)).rejects.toMatchObject({
      name: 'RunStateError',
      code: 'stale-step',
      message: expect.stringContaining(`The pending step is \`${second.node.id}\`, visit 1, key \`${second.key}\``),
    })
    await expect(completeStep(dir, 'made-up', { output: 'x' }, options)).rejects.toMatchObject({ code: 'stale-step' })
    expect(await readTree(dir)).toEqual(tree)
  })

  it('a choice outside the conditions is refused before anything is written, listing the valid ones', async () => {
    const dir = await writeVault(draftReview())
    let step = work(await nextStep(dir, { ...options, query }))
    step = work(await completeStep(dir, step.key, { output: 'd' }, options))
    const tree = await readTree(dir)
    await expect(completeStep(dir, step.key, { output: 'r', choice: 'ship it' }, options)).rejects.toMatchObject({
      name: 'RunStateError',
      code: 'bad-choice',
      message: expect.stringContaining('`approved`, `needs revision`'),
    })
    expect(await readTree(dir)).toEqual(tree)
    // At a terminal, any choice is refused.
    step = work(await completeStep(dir, step.key, { output: 'r', choice: 'approved' }, options))
    await expect(completeStep(dir, step.key, { output: 's', choice: 'next' }, options)).rejects.toMatchObject({
      code: 'bad-choice',
      message: expect.stringContaining('terminal'),
    })
  })

  it('predicates decide before the caller: a holding predicate takes its edge, and its label is no choice', async () => {
    const dir = await writeVault(draftReview())
    const predicates = { approved: () => true }
    let step = work(await nextStep(dir, { ...options, query, predicates }))
    step = work(await completeStep(dir, step.key, { output: 'd' }, { ...options, predicates }))
    expect(step.conditions).toEqual(['needs revision'])
    await expect(completeStep(dir, step.key, { output: 'r', choice: 'approved' }, { ...options, predicates })).rejects.toMatchObject({ code: 'bad-choice' })
    step = work(await completeStep(dir, step.key, { output: 'r', choice: 'needs revision' }, { ...options, predicates }))
    expect(step.node.id).toBe('send')
    expect((await records(dir)).at(-1)).toMatchObject({ node: 'review', decidedBy: 'predicate' })
  })

  it('without a choice the LLM judge decides, in one call per hop', async () => {
    const dir = await writeVault(draftReview())
    const llm = reviewJudge('review v1')
    let step = work(await nextStep(dir, { ...options, query }))
    step = work(await completeStep(dir, step.key, { output: 'draft v1' }, { ...options, llm }))
    step = work(await completeStep(dir, step.key, { output: 'review v1' }, { ...options, llm }))
    expect(step.node.id).toBe('send')
    expect(llm.calls).toHaveLength(1)
    expect((await records(dir)).at(-1)).toMatchObject({
      decidedBy: 'llm',
      answers: [
        { condition: 'approved', answer: 'YES' },
        { condition: 'needs revision', answer: 'NO' },
      ],
    })
  })

  it('without a choice and without a model, it fails before writing and lists the choices', async () => {
    const dir = await writeVault(draftReview())
    let step = work(await nextStep(dir, { ...options, query }))
    step = work(await completeStep(dir, step.key, { output: 'd' }, options))
    const tree = await readTree(dir)
    const saved = { ...process.env }
    for (const name of Object.keys(process.env)) if (/^(LLM_|OPENAI_)/.test(name)) delete process.env[name]
    try {
      await expect(completeStep(dir, step.key, { output: 'r' }, options)).rejects.toMatchObject({
        name: 'ModelConfigError',
        message: expect.stringContaining('`approved`, `needs revision`'),
      })
    } finally {
      Object.assign(process.env, saved)
    }
    expect(await readTree(dir)).toEqual(tree)
  })

  it('a crash after the output was saved is finished by judging it, with the same key accepted once more', async () => {
    const dir = await writeVault(draftReview())
    const step = work(await nextStep(dir, { ...options, query }))
    // A crash right after the output was saved: the note still active, no hop recorded.
    crashSeam.afterEvent = (event) => {
      if (event.type === 'work') throw new Error('killed')
    }
    await expect(completeStep(dir, step.key, { output: 'draft v1' }, options)).rejects.toThrow('killed')
    crashSeam.afterEvent = undefined
    expect(await statuses(dir)).toEqual({ draft: 'active', review: 'pending', send: 'pending' })
    expect(await records(dir)).toEqual([])
    const next = work(await completeStep(dir, step.key, { output: 'draft v1' }, options))
    expect([next.node.id, next.step]).toEqual(['review', 2])
    expect((await records(dir)).map((record) => record.node)).toEqual(['draft'])
    expect(await statuses(dir)).toEqual({ draft: 'done', review: 'active', send: 'pending' })
  })
})

describe('people decide: a human note and decide()', () => {
  it('a human note waits; decide ticks exactly its box, and the next call follows it', async () => {
    const dir = await writeVault(humanReview())
    let step = work(await nextStep(dir, { ...options, query }))
    step = work(await completeStep(dir, step.key, { output: 'd' }, options))
    expect(step.conditions).toEqual([])
    const waiting = await completeStep(dir, step.key, { output: 'r', choice: 'ignored for a person' }, options)
    expect(waiting).toEqual({
      kind: 'waiting',
      runId: step.runId,
      waiting: [{ kind: 'human', node: 'review', file: 'review.md', choices: ['approved', 'needs revision'] }],
      reason: expect.stringContaining('waits for a person'),
    })
    expect(await nextStep(dir, options)).toEqual(waiting)

    const before = await read(dir, 'review.md')
    await decide(dir, 'review', { edge: 'approved' })
    expect(await read(dir, 'review.md')).toBe(before.replace('- [ ] approved', '- [x] approved'))
    const next = work(await nextStep(dir, options))
    expect(next.node.id).toBe('send')
    expect((await records(dir)).at(-1)).toMatchObject({ node: 'review', decidedBy: 'human', next: 'send' })
    // The consumed tick is cleared for the next visit.
    expect(await read(dir, 'review.md')).toContain('- [ ] approved')
  })

  it('a kill after the decision was recorded, before its boxes were cleared: the next call finishes it', async () => {
    const dir = await writeVault(humanReview())
    let step = work(await nextStep(dir, { ...options, query }))
    step = work(await completeStep(dir, step.key, { output: 'd' }, options))
    await completeStep(dir, step.key, { output: 'r' }, options)
    await decide(dir, 'review', { edge: 'approved' })
    const ticked = await read(dir, 'review.md')
    const send = work(await nextStep(dir, options))
    // As the kill would leave it: the hop recorded, the note still waiting with its box ticked.
    const { writeFile } = await import('node:fs/promises')
    await writeFile(join(dir, 'review.md'), ticked)
    expect(work(await nextStep(dir, options))).toEqual(send)
    expect(await read(dir, 'review.md')).toBe(ticked.replace('status: waiting', 'status: done').replace('- [x] approved', '- [ ] approved'))
    expect((await records(dir)).filter((record) => record.decidedBy === 'human')).toHaveLength(1)
  })

  it('decide with feedback appends it to the section (or adds the section), changing no other byte', async () => {
    const dir = await writeVault(humanReview())
    let step = work(await nextStep(dir, { ...options, query }))
    step = work(await completeStep(dir, step.key, { output: 'd' }, options))
    await completeStep(dir, step.key, { output: 'r' }, options)
    const before = await read(dir, 'review.md')
    await decide(dir, 'review', { edge: 'needs revision', feedback: 'Shorter, please.' })
    const after = await read(dir, 'review.md')
    expect(after).toBe(`${before.replace('- [ ] needs revision', '- [x] needs revision')}\n## Feedback\n\n> Shorter, please.\n`)
    const next = work(await nextStep(dir, options))
    expect(next.node.id).toBe('draft')
    expect(next.outputs.at(-1)).toEqual({ node: 'review', visit: 1, output: 'Shorter, please.', feedback: true })
  })

  it('feedback is handed on once: a later decision does not carry the old feedback again', async () => {
    const dir = await writeVault(humanReview())
    const visitOf = async (output: string) => work(await completeStep(dir, work(await nextStep(dir, options)).key, { output }, options))
    await nextStep(dir, { ...options, query })
    const review1 = await visitOf('draft v1')
    await completeStep(dir, review1.key, { output: 'review v1' }, options)
    await decide(dir, 'review', { edge: 'needs revision', feedback: 'Add a date.' })
    const draft2 = work(await nextStep(dir, options))
    expect(draft2.outputs.filter((output) => output.output === 'Add a date.')).toHaveLength(1)
    const review2 = work(await completeStep(dir, draft2.key, { output: 'draft v2' }, options))
    await completeStep(dir, review2.key, { output: 'review v2' }, options)
    await decide(dir, 'review', { edge: 'approved' })
    const send = work(await nextStep(dir, options))
    expect(send.node.id).toBe('send')
    // The approval handed on nothing: the only feedback in the history is the one given with the revision.
    expect(send.outputs.filter((output) => output.output === 'Add a date.')).toHaveLength(1)
    expect(send.outputs.map((output) => `${output.node} ${output.visit}`)).toEqual(['draft 1', 'review 1', 'review 1', 'draft 2', 'review 2'])
  })

  it('decide refuses a note that does not wait, an unknown edge, and a second tick', async () => {
    const dir = await writeVault(humanReview())
    await expect(decide(dir, 'review', { edge: 'approved' })).rejects.toMatchObject({ name: 'RunStateError', code: 'not-waiting' })
    let step = work(await nextStep(dir, { ...options, query }))
    step = work(await completeStep(dir, step.key, { output: 'd' }, options))
    await completeStep(dir, step.key, { output: 'r' }, options)
    const before = await read(dir, 'review.md')
    await expect(decide(dir, 'review', { edge: 'ship' })).rejects.toMatchObject({
      code: 'bad-choice',
      message: expect.stringContaining('`approved`, `needs revision`'),
    })
    await edit(dir, 'review.md', (text) => text.replace('- [ ] needs revision', '- [x] needs revision'))
    await expect(decide(dir, 'review', { edge: 'approved' })).rejects.toMatchObject({ code: 'ambiguous-decision' })
    expect(await read(dir, 'review.md')).toBe(before.replace('- [ ] needs revision', '- [x] needs revision'))
  })
})

describe('one decision: status, stepping and runPlan agree', () => {
  it('when readRunStatus names `work`, nextStep and runPlan work exactly that node, visit and step', async () => {
    const dir = await writeVault(draftReview())
    const crash = scriptedWorker((step) => {
      if (step.node.id === 'review') throw new Error('worker crash')
    })
    await expect(runPlan(dir, { ...options, query, work: crash, llm: noJudge() })).rejects.toThrow('worker crash')
    const status = await readRunStatus(dir)
    expect(status.next).toEqual({ kind: 'work', node: 'review', visit: 1, step: 2 })
    const step = work(await nextStep(dir, options))
    expect([step.node.id, step.visit, step.step]).toEqual(['review', 1, 2])
    const worker = scriptedWorker()
    await runPlan(dir, { ...options, work: worker, llm: reviewJudge('review v1') })
    expect(worker.calls[0]).toMatchObject({ node: 'review', visit: 1, step: 2, key: step.key })
  })
})

describe('runPlan on the stepping core', () => {
  it('resumes with the recorded query when none is passed, and refuses another one on a completed run', async () => {
    const dir = await writeVault(draftReview())
    const stop = await runPlan(dir, { ...options, query, work: scriptedWorker(), llm: reviewJudge('review v2'), maxSteps: 2 })
    expect(stop.status).toBe('stopped')
    const worker = scriptedWorker()
    // Without a budget it would stop again at once (the one it last ran with): the default is given again.
    const done = await runPlan(dir, { ...options, work: worker, llm: reviewJudge('review v2'), maxSteps: 50 })
    expect(done.status).toBe('completed')
    const tree = await readTree(dir)
    await expect(runPlan(dir, { ...options, query: 'Another', work: scriptedWorker(), llm: noJudge() })).rejects.toMatchObject({ code: 'query-mismatch' })
    expect(await readTree(dir)).toEqual(tree)
  })

  it('a run that failed before its first claim leaves nothing, so a new query starts cleanly', async () => {
    const dir = await writeVault(draftReview())
    const before = await readTree(dir)
    const saved = { ...process.env }
    for (const name of Object.keys(process.env)) if (/^(LLM_|OPENAI_)/.test(name)) delete process.env[name]
    try {
      // No worker and no model: the built-in worker cannot work, so nothing is written.
      await expect(runPlan(dir, { ...options, query: 'First idea' })).rejects.toMatchObject({ name: 'ModelConfigError' })
    } finally {
      Object.assign(process.env, saved)
    }
    expect(await readTree(dir)).toEqual(before)
    const worker = scriptedWorker()
    await runPlan(dir, { ...options, query: 'Second idea', work: worker, llm: reviewJudge('review v1') })
    expect(new Set(worker.calls.map(() => 'Second idea'))).toEqual(new Set(['Second idea']))
    expect(await read(dir, '00_plan-trace/trace.md')).toContain('query: Second idea')
  })

  it('a listener that throws is reported once and the run goes on', async () => {
    const dir = await writeVault(draftReview())
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.message)
    process.on('warning', onWarning)
    try {
      const result = await runPlan(dir, {
        ...options,
        query,
        work: scriptedWorker(),
        llm: reviewJudge('review v1'),
        onEvent: () => {
          throw new Error('listener bug')
        },
      })
      expect(result).toMatchObject({ status: 'completed', steps: 3 })
      await new Promise((resolve) => setImmediate(resolve))
    } finally {
      process.off('warning', onWarning)
    }
    expect(warnings.filter((message) => message.includes('listener bug')).length).toBeLessThanOrEqual(1)
  })

  it('fresh archives the trace with its outputs, final and picture, so the archived links still point at them', async () => {
    const dir = await writeVault(draftReview())
    const first = await runPlan(dir, { ...options, query, work: scriptedWorker(), llm: reviewJudge('review v1') })
    const { writeFile } = await import('node:fs/promises')
    await writeFile(join(dir, '00_plan-trace/plan-graph.md'), 'picture\n')
    await runPlan(dir, { ...options, query: 'Again', fresh: true, work: scriptedWorker(() => 'new'), llm: reviewJudge('new') })
    const archive = join(dir, '00_plan-trace/archive', first.runId)
    expect(await readFile(join(archive, 'outputs/0001-draft.md'), 'utf8')).toContain('draft v1')
    expect(await readFile(join(archive, 'final.md'), 'utf8')).toContain('send v1')
    expect(await readFile(join(archive, 'plan-graph.md'), 'utf8')).toBe('picture\n')
    expect(await read(dir, '00_plan-trace/outputs/0001-draft.md')).toContain('new')
    expect((await traceEntries(dir)).length).toBe(3)
  })
})
