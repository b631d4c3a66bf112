import { readdir, writeFile } from 'node:fs/promises'
import fc from 'fast-check'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { crashSeam } from '../src/run/drive/events.js'
import { TRACE_FORMAT } from '../src/store/trace.js'
import { nextStep, readRunStatus, RunStateError, runPlan, StepError, updateStatus, type RunEvent, type RunResult } from 'vaultplan'
import { draftReview } from './helpers/plans.js'
import { noJudge, reviewJudge, scriptedJudge, scriptedWorker, type WorkCall } from './helpers/scripted.js'
import { edit, read, readNotes, readTree, statuses, traceEntries, untilShown, traceHeadings, writeVault } from './helpers/vault.js'

const query = 'Announce the release'
const options = { query, fsync: false } as const
/** The draft/review run approves at the second review: draft, review, draft, review, send. */
const judge = () => reviewJudge('review v2')

const withoutVault = ({ runVault: _vault, runId: _run, ...result }: RunResult) => result
const hops = (calls: WorkCall[]) => calls.map((call) => `${call.node} v${call.visit} step ${call.step}`)

/** A judge prompt without its random fence. */
const unfenced = (prompt: string) => prompt.replace(/DATA-[0-9a-f]+/g, 'DATA')

async function uninterrupted() {
  const dir = await writeVault(draftReview())
  const work = scriptedWorker()
  const llm = judge()
  const result = await runPlan(dir, { ...options, work, llm })
  return {
    result: withoutVault(result),
    trace: await traceEntries(dir),
    calls: hops(work.calls),
    outputs: work.calls.map((call) => call.outputs),
    prompts: llm.calls.map((call) => unfenced(call.prompt)),
  }
}

/** Crashes the next run right after the n-th event of `type`, through the executor's internal crash seam. */
function failOn(type: RunEvent['type'], n: number): Record<string, never> {
  let seen = 0
  crashSeam.afterEvent = (event: RunEvent) => {
    if (event.type === type && seen++ === n) throw new Error(`crash at ${type} #${n}`)
  }
  return {}
}

afterEach(() => {
  crashSeam.afterEvent = undefined
})

/** Removes the last entry of the trace, as if the crash came just before it was appended. */
async function dropLastTraceEntry(dir: string, keep = 0): Promise<string> {
  const path = join(dir, '00_plan-trace/trace.md')
  const text = await read(dir, '00_plan-trace/trace.md')
  const start = text.lastIndexOf('\n## ')
  const entry = text.slice(start)
  const torn = entry.slice(0, Math.floor(entry.indexOf('<!--') * keep))
  await writeFile(path, text.slice(0, start) + torn)
  return torn
}

describe('resume after an interruption at each phase of each hop', async () => {
  const baseline = await uninterrupted()
  const hopIndexes = baseline.calls.map((_, index) => index)

  it('the uninterrupted run', () => {
    expect(baseline.calls).toEqual(['draft v1 step 1', 'review v1 step 2', 'draft v2 step 3', 'review v2 step 4', 'send v1 step 5'])
    expect(baseline.result).toEqual({
      status: 'completed',
      output: 'send v1',
      steps: 5,
      plannerCalls: 0,
      visits: { draft: 2, review: 2, send: 1 },
      lastNode: 'send',
    })
  })

  /** Runs the interrupted vault again to its end and checks it ends exactly as the uninterrupted run. */
  async function resumeAndCompare(dir: string, before: WorkCall[], workedAgain: number) {
    const work = scriptedWorker()
    const llm = judge()
    const result = await runPlan(dir, { ...options, work, llm })
    expect(withoutVault(result)).toEqual(baseline.result)
    expect(await traceEntries(dir, { complete: true })).toEqual(baseline.trace)
    expect(await statuses(dir)).toEqual({ draft: 'done', review: 'done', send: 'done' })
    // Workers and judges after the restart see the same outputs as in the uninterrupted run.
    expect(work.calls.map((call) => call.outputs)).toEqual(baseline.outputs.slice(baseline.outputs.length - work.calls.length))
    expect(llm.calls.map((call) => unfenced(call.prompt))).toEqual(baseline.prompts.slice(baseline.prompts.length - llm.calls.length))
    // Nothing is worked twice, except the visit the crash cut short.
    expect([...hops(before).slice(0, before.length - workedAgain), ...hops(work.calls)]).toEqual(baseline.calls)
    if (workedAgain > 0) expect(work.calls[0]!.key).toBe(before.at(-1)!.key)
    expect(await read(dir, '00_plan-trace/final.md')).toMatch(/\nsend v1$/)
    return work
  }

  it.each(hopIndexes)('before work: the note of hop %i is active, its worker not yet called', async (index) => {
    const dir = await writeVault(draftReview())
    const work = scriptedWorker()
    await expect(runPlan(dir, { ...options, work, llm: judge(), ...failOn('enter', index) })).rejects.toThrow(`crash at enter #${index}`)
    const node = baseline.calls[index]!.split(' ')[0]!
    // The crash came right after `status: active` was persisted.
    await updateStatus(dir, node, 'active', { fsync: false })
    const resumed = await resumeAndCompare(dir, work.calls, 0)
    expect(resumed.calls[0]).toMatchObject({ node, key: expect.stringMatching(new RegExp(`:${node}:\\d$`)) })
  })

  it.each(hopIndexes)('during work: the worker of hop %i throws; the visit is worked again with the same key', async (index) => {
    const dir = await writeVault(draftReview())
    const work = scriptedWorker((_step, call) => {
      if (call === index) throw new Error('connection reset')
    })
    await expect(runPlan(dir, { ...options, work, llm: judge() })).rejects.toBeInstanceOf(StepError)
    await resumeAndCompare(dir, work.calls, 1)
  })

  it.each(hopIndexes)('after done, before the trace entry of hop %i (the entry never written)', async (index) => {
    const dir = await writeVault(draftReview())
    const work = scriptedWorker()
    await expect(runPlan(dir, { ...options, work, llm: judge(), ...failOn('transition', index) })).rejects.toThrow('crash at transition')
    await dropLastTraceEntry(dir)
    const resumed = await resumeAndCompare(dir, work.calls, 0)
    expect(resumed.calls).toHaveLength(baseline.calls.length - index - 1)
  })

  it.each(hopIndexes)('after done, a torn trace entry of hop %i (no marker line) is ignored', async (index) => {
    const dir = await writeVault(draftReview())
    const work = scriptedWorker()
    await expect(runPlan(dir, { ...options, work, llm: judge(), ...failOn('transition', index) })).rejects.toThrow('crash at transition')
    const torn = await dropLastTraceEntry(dir, 0.5)
    expect(torn).toMatch(/^\n## Step \d/)
    await resumeAndCompare(dir, work.calls, 0)
    // The torn text stays where it was (the trace is never rewritten), followed by the whole entry.
    expect(await read(dir, '00_plan-trace/trace.md')).toContain(`${torn}\n## Step ${index + 1} `)
  })

  it("an output note a crash cut short, at any byte, is never taken for the worker's: the visit is worked again", async () => {
    // The crash comes right after the output of hop 2 (review v1) was saved, before `done`.
    const crashed = await writeVault(draftReview())
    const before = scriptedWorker()
    await expect(runPlan(crashed, { ...options, work: before, llm: judge(), ...failOn('work', 1) })).rejects.toThrow('crash at work #1')
    const file = '00_plan-trace/outputs/0002-review.md'
    const whole = await read(crashed, file)
    expect(whole).toMatch(/\ndigest: [0-9a-f]{16}\n---\nreview v1$/)
    const pristine = await readTree(crashed)
    for (let cut = 0; cut < whole.length; cut++) {
      const dir = await writeVault(Object.fromEntries(Object.entries(pristine).map(([name, text]) => [name, name === file ? whole.slice(0, cut) : text])))
      await resumeAndCompare(dir, before.calls, 1)
    }
    // Whole, it is the worker's output: the run goes on from it, nothing worked again.
    const resumed = await resumeAndCompare(crashed, before.calls, 0)
    expect(resumed.calls[0]).toMatchObject({ node: 'draft', visit: 2 })
  })

  it.each([1, 3])('after done, before the trace entry: the judge of hop %i throws once', async (index) => {
    const dir = await writeVault(draftReview())
    const work = scriptedWorker()
    const approve = judge()
    const failing = scriptedJudge((prompt, call) => {
      if (call === (index - 1) / 2) throw new Error('judge timed out')
      return approve(prompt, { role: 'transition' })
    })
    await expect(runPlan(dir, { ...options, work, llm: failing })).rejects.toThrow('judge timed out')
    expect(await statuses(dir)).toMatchObject({ review: 'done' })
    const resumed = await resumeAndCompare(dir, work.calls, 0)
    expect(resumed.calls).toHaveLength(baseline.calls.length - index - 1)
  })

  it.each(hopIndexes)('after the trace entry of hop %i', async (index) => {
    const dir = await writeVault(draftReview())
    const work = scriptedWorker()
    await expect(runPlan(dir, { ...options, work, llm: judge(), ...failOn('transition', index) })).rejects.toThrow('crash at transition')
    expect(await traceHeadings(dir)).toHaveLength(index + 1)
    await resumeAndCompare(dir, work.calls, 0)
  })

  it('any series of crashes, at any phase of any hop, ends as the uninterrupted run', async () => {
    // enter: before `active`; work: the worker throws; saved: the output saved, `done` not yet;
    // judge: the judge throws; transition: after the trace entry; torn: the trace entry cut short.
    const crash = fc.record({ phase: fc.constantFrom('enter', 'work', 'saved', 'judge', 'transition', 'torn'), at: fc.integer({ min: 0, max: 4 }) })
    await fc.assert(
      fc.asyncProperty(fc.array(crash, { maxLength: 4 }), async (crashes) => {
        const dir = await writeVault(draftReview())
        for (const { phase, at } of crashes) {
          const work = scriptedWorker((_step, call) => {
            if (phase === 'work' && call === at) throw new Error('worker crash')
          })
          const approve = judge()
          const llm = scriptedJudge((prompt, call) => {
            if (phase === 'judge' && call === at) throw new Error('judge crash')
            return approve(prompt, { role: 'transition' })
          })
          const eventType = phase === 'enter' ? 'enter' : phase === 'saved' ? 'work' : 'transition'
          failOn(eventType, ['enter', 'saved', 'transition', 'torn'].includes(phase) ? at : -1)
          const outcome = await runPlan(dir, { ...options, work, llm }).catch((error: Error) => error)
          crashSeam.afterEvent = undefined
          if (phase === 'torn' && outcome instanceof Error) await dropLastTraceEntry(dir, 0.5)
        }
        // One decision: what status names next is exactly what nextStep, then runPlan, do.
        const status = await readRunStatus(dir)
        const hopsBefore = (await traceEntries(dir, { complete: true }).catch(() => [])).length
        const step = await nextStep(dir, { ...options, llm: judge() })
        if (status.next.kind === 'work')
          expect(step).toMatchObject({ kind: 'work', node: { id: status.next.node }, visit: status.next.visit, step: status.next.step })
        if (status.next.kind === 'judge') {
          const entries = await traceEntries(dir, { complete: true })
          expect(entries).toHaveLength(hopsBefore + 1)
          expect(entries.at(-1)!.heading).toBe(`Step ${status.next.step} · [[${status.next.node}]] · visit ${status.next.visit}`)
        }
        const work = scriptedWorker()
        const result = await runPlan(dir, { ...options, work, llm: judge() })
        if (step.kind === 'work') expect(work.calls[0]).toMatchObject({ node: step.node.id, visit: step.visit, step: step.step, key: step.key })
        expect(withoutVault(result)).toEqual(baseline.result)
        expect(await traceEntries(dir, { complete: true })).toEqual(baseline.trace)
      }),
      { numRuns: 20 },
    )
  })

  it('outputs of any text reach the next worker unchanged across a restart', async () => {
    await fc.assert(
      fc.asyncProperty(fc.string({ unit: 'grapheme', maxLength: 200 }), fc.string({ unit: 'grapheme-ascii', maxLength: 50 }), async (first, second) => {
        const dir = await writeVault(draftReview())
        const texts: Record<string, string> = { draft: first, review: second }
        const work = scriptedWorker((step) => texts[step.node.id])
        await runPlan(dir, { ...options, work, llm: scriptedJudge(() => '1: YES'), ...failOn('transition', 1) }).catch(() => undefined)
        const next = scriptedWorker()
        await runPlan(dir, { ...options, work: next, llm: noJudge() })
        expect(next.calls[0]!.outputs).toEqual([
          { node: 'draft', visit: 1, output: first, file: 'outputs/0001-draft.md' },
          { node: 'review', visit: 1, output: second, file: 'outputs/0002-review.md' },
        ])
      }),
      { numRuns: 15 },
    )
  })

  it('a run interrupted several times still ends as the uninterrupted one', async () => {
    const dir = await writeVault(draftReview())
    const calls: WorkCall[] = []
    for (const [n, crash] of [0, 1, 1, 2, 3].entries()) {
      const work = scriptedWorker((_step, call) => {
        if (call === 1) throw new Error(`crash ${n}`)
      })
      await runPlan(dir, { ...options, work, llm: judge(), ...failOn('transition', crash) }).catch(() => undefined)
      calls.push(...work.calls)
    }
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work, llm: judge() })
    expect(withoutVault(result)).toEqual(baseline.result)
    expect(await traceEntries(dir, { complete: true })).toEqual(baseline.trace)
  })
})

describe('what a re-run does with the vault as it finds it', () => {
  it('two active notes: a RunStateError naming them, and not a byte changed', async () => {
    const dir = await writeVault(draftReview())
    await runPlan(dir, { ...options, work: scriptedWorker(), llm: judge(), maxSteps: 2 })
    await updateStatus(dir, 'draft', 'active')
    await updateStatus(dir, 'send', 'active')
    const before = await readTree(dir)
    const work = scriptedWorker()
    const error = await runPlan(dir, { ...options, work, llm: noJudge() }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(RunStateError)
    expect(error).toMatchObject({ name: 'RunStateError', code: 'two-active' })
    expect((error as Error).message).toContain('`draft.md`, `send.md`')
    expect(work.calls).toEqual([])
    expect(await readTree(dir)).toEqual(before)
  })

  it('a person moves the run by hand: the note set active is entered as a new visit', async () => {
    const dir = await writeVault(draftReview())
    // The run stops after review v1 chose `needs revision`: the trace expects draft next.
    await runPlan(dir, { ...options, work: scriptedWorker(), llm: judge(), maxSteps: 2 })
    await updateStatus(dir, 'review', 'active')
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work, llm: reviewJudge('review v2'), maxSteps: 10 })
    expect(hops(work.calls)).toEqual(['review v2 step 3', 'send v1 step 4'])
    expect(result).toMatchObject({ status: 'completed', steps: 4, visits: { draft: 1, review: 2, send: 1 } })
  })

  it('a note moved to by hand counts against its budget', async () => {
    const dir = await writeVault(draftReview({ reviewVisits: 1 }))
    await runPlan(dir, { ...options, work: scriptedWorker(), llm: judge(), maxSteps: 2 })
    await updateStatus(dir, 'review', 'active')
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work, llm: judge(), maxSteps: 10 })
    expect(work.calls).toEqual([])
    expect(result).toMatchObject({ status: 'stopped', visits: { draft: 1, review: 1 } })
    expect(result.reason).toContain('`review` was refused visit 2; its budget is max_visits 1')
  })

  it('a completed vault returns its recorded result without working anything', async () => {
    const dir = await writeVault(draftReview())
    const first = await runPlan(dir, { ...options, work: scriptedWorker(), llm: judge() })
    const before = await readTree(dir)
    const work = scriptedWorker()
    const llm = noJudge()
    const events: RunEvent[] = []
    const again = await runPlan(dir, { ...options, work, llm, onEvent: (event) => events.push(event) })
    expect(again).toEqual(first)
    expect(work.calls).toEqual([])
    expect(events).toEqual([
      { type: 'start', runId: expect.any(String), resumed: true },
      { type: 'end', node: 'send' },
    ])
    expect(await readTree(dir)).toEqual(before)
  })

  it('`fresh: true` resets the statuses, archives the old trace and runs again from the start', async () => {
    const dir = await writeVault(draftReview())
    const firstEvents: RunEvent[] = []
    await runPlan(dir, { ...options, work: scriptedWorker(), llm: judge(), onEvent: (event) => firstEvents.push(event) })
    const oldTrace = await read(dir, '00_plan-trace/trace.md')
    const firstRun = (firstEvents[0] as { runId: string }).runId

    const seen: Record<string, string>[] = []
    const work = scriptedWorker(async () => {
      await untilShown(dir)
      seen.push(await statuses(dir))
    })
    const events: RunEvent[] = []
    const result = await runPlan(dir, { ...options, work, llm: reviewJudge('review v1'), fresh: true, onEvent: (event) => events.push(event) })
    expect(seen[0]).toEqual({ draft: 'active', review: 'pending', send: 'pending' })
    expect(hops(work.calls)).toEqual(['draft v1 step 1', 'review v1 step 2', 'send v1 step 3'])
    expect(result).toMatchObject({ status: 'completed', steps: 3, visits: { draft: 1, review: 1, send: 1 } })
    const runId = (events[0] as { runId: string }).runId
    expect(events[0]).toEqual({ type: 'start', runId, resumed: false })
    expect(runId).not.toBe(firstRun)

    const archive = join(dir, '00_plan-trace/archive')
    expect(await readdir(archive)).toEqual([firstRun])
    expect(await read(archive, `${firstRun}/trace.md`)).toBe(oldTrace)
    expect((await readdir(join(archive, firstRun, 'outputs'))).sort()).toEqual([
      '0001-draft.md',
      '0002-review.md',
      '0003-draft.md',
      '0004-review.md',
      '0005-send.md',
    ])
    expect(await read(archive, `${firstRun}/final.md`)).toMatch(/\nsend v1$/)
    expect(await traceHeadings(dir)).toEqual(['Step 1 · [[draft]] · visit 1', 'Step 2 · [[review]] · visit 1', 'Step 3 · [[send]] · visit 1'])
    expect(await read(dir, '00_plan-trace/trace.md')).toContain(`run: ${runId}`)
  })

  it('a trace from a newer vaultplan is refused, never misread', async () => {
    const dir = await writeVault(draftReview())
    await runPlan(dir, { ...options, work: scriptedWorker(), llm: judge(), maxSteps: 1 })
    await edit(dir, '00_plan-trace/trace.md', (text) => text.replace(`format: ${TRACE_FORMAT}`, `format: ${TRACE_FORMAT + 1}`))
    const work = scriptedWorker()
    await expect(runPlan(dir, { ...options, work, llm: judge() })).rejects.toMatchObject({ name: 'RunStateError', code: 'trace-too-new' })
    expect(work.calls).toEqual([])
  })
})

describe('a run stopped by a budget', () => {
  it('goes on after a person raises `max_visits` in the note, and stops again at once while it does not allow', async () => {
    const dir = await writeVault(draftReview({ reviewVisits: 2 }))
    const stopped = await runPlan(dir, { ...options, work: scriptedWorker(), llm: reviewJudge('review v3') })
    expect(stopped).toMatchObject({ status: 'stopped', steps: 5, visits: { draft: 3, review: 2 } })
    const trace = await read(dir, '00_plan-trace/trace.md')

    const idle = scriptedWorker()
    const again = await runPlan(dir, { ...options, work: idle, llm: noJudge() })
    expect(again).toEqual(stopped)
    expect(idle.calls).toEqual([])
    // A stop repeated at once adds nothing to the trace.
    expect(await read(dir, '00_plan-trace/trace.md')).toBe(trace)

    await edit(dir, 'review.md', (text) => text.replace('max_visits: 2', 'max_visits: 3'))
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work, llm: reviewJudge('review v3') })
    expect(hops(work.calls)).toEqual(['review v3 step 6', 'send v1 step 7'])
    expect(result).toMatchObject({ status: 'completed', steps: 7, visits: { draft: 3, review: 3, send: 1 } })
    expect((await traceEntries(dir)).map((entry) => entry.heading)).toEqual([
      'Step 1 · [[draft]] · visit 1',
      'Step 2 · [[review]] · visit 1',
      'Step 3 · [[draft]] · visit 2',
      'Step 4 · [[review]] · visit 2',
      'Step 5 · [[draft]] · visit 3',
      'Stopped before step 6 · [[review]] · visit 3',
      'Step 6 · [[review]] · visit 3',
      'Step 7 · [[send]] · visit 1',
    ])
  })

  it('goes on when a larger `maxSteps` is passed, and stops again with the same one', async () => {
    const dir = await writeVault(draftReview())
    const stopped = await runPlan(dir, { ...options, work: scriptedWorker(), llm: judge(), maxSteps: 2 })
    expect(stopped).toMatchObject({ status: 'stopped', steps: 2 })

    const idle = scriptedWorker()
    expect(await runPlan(dir, { ...options, work: idle, llm: noJudge(), maxSteps: 2 })).toEqual(stopped)
    expect(idle.calls).toEqual([])

    const more = scriptedWorker()
    const third = await runPlan(dir, { ...options, work: more, llm: judge(), maxSteps: 4 })
    expect(hops(more.calls)).toEqual(['draft v2 step 3', 'review v2 step 4'])
    expect(third).toMatchObject({ status: 'stopped', steps: 4, reason: expect.stringContaining('maxSteps budget of 4 steps before entering `send` (visit 1)') })

    // Given no budget, the run goes on under the one it last ran with (4): it stops again at once.
    const again = scriptedWorker()
    expect(await runPlan(dir, { ...options, work: again, llm: noJudge() })).toMatchObject({ status: 'stopped', steps: 4 })
    expect(again.calls).toEqual([])

    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work, llm: judge(), maxSteps: 5 })
    expect(hops(work.calls)).toEqual(['send v1 step 5'])
    expect(result).toMatchObject({ status: 'completed', steps: 5, visits: { draft: 2, review: 2, send: 1 } })
    expect(await statuses(dir)).toEqual({ draft: 'done', review: 'done', send: 'done' })
    expect(Object.keys(await readNotes(dir))).toEqual(['draft.md', 'review.md', 'send.md'])
  })
})
