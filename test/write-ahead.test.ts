import fs, { existsSync, statSync } from 'node:fs'
import { appendFile, writeFile } from 'node:fs/promises'
import { syncBuiltinESMExports } from 'node:module'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { observeRun, runPlan } from 'vaultplan'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { until } from './helpers/until.js'
import { read, statuses, traceHeadings, writeVault } from './helpers/vault.js'

// A hop is one append to the run's journal (00_plan-trace/.journal) and, with fsync, one flush; the
// notes, the output notes and the trace are written from it right after. These tests leave the files
// behind the journal, as a kill or a power cut would, and open the vault again.

const query = 'Announce the release'
const JOURNAL = '00_plan-trace/.journal'

/** The draft/review run stopped after 3 hops, then resumed; `tear` does to the stopped vault what a power cut would. */
async function stoppedAndResumed(tear: (dir: string) => Promise<void>) {
  const dir = await writeVault(draftReview())
  const run = (maxSteps?: number) => runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge('review v2'), fsync: true, ...(maxSteps && { maxSteps }) })
  await run(3)
  await tear(dir)
  const result = await run(50)
  return { headings: await traceHeadings(dir), result: { status: result.status, output: result.output, steps: result.steps } }
}

describe('the trace is brought up to the journal when the vault is opened again', () => {
  it('a power cut tore the trace after its last entries were flushed in the journal: each is appended once, and the run ends as the untorn one', async () => {
    const untorn = await stoppedAndResumed(async () => {})
    const torn = await stoppedAndResumed(async (dir) => {
      const whole = await read(dir, '00_plan-trace/trace.md')
      // The last hop's entry cut in the middle, the rest zeros; the stop after it gone.
      const cut = whole.lastIndexOf('\n## Step 3')
      await writeFile(join(dir, '00_plan-trace/trace.md'), Buffer.concat([Buffer.from(whole.slice(0, cut + 40)), Buffer.alloc(60)]))
    })
    expect(torn).toEqual(untorn)
    expect(untorn.result).toEqual({ status: 'completed', output: 'send v1', steps: 5 })
  })
})

describe('what a killed run journaled and did not apply', () => {
  it("a status journaled after the last `applied` mark is where the run stands: the snapshot says so at once, and the next open writes it into the note, keeping a person's edit", async () => {
    const dir = await writeVault(draftReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge(), fsync: true, maxSteps: 1 })
    // As a run killed right after its claim of `review` was journaled, before the note said so.
    await appendFile(join(dir, JOURNAL), `${JSON.stringify({ k: 'status', f: 'review.md', s: 'active' })}\n`)
    // Meanwhile a person adds a line to the note.
    await writeFile(join(dir, 'review.md'), `${await read(dir, 'review.md')}\nMy own line.\n`)
    expect((await statuses(dir)).review).toBe('pending')
    expect((await observeRun(dir)).nodes.find((node) => node.id === 'review')?.status).toBe('active')

    const work = scriptedWorker()
    const result = await runPlan(dir, { query, work, llm: reviewJudge('review v1'), fsync: true, maxSteps: 50 })
    expect(result.status).toBe('completed')
    expect(work.calls.map((call) => `${call.node} v${call.visit}`)).toEqual(['review v1', 'send v1'])
    expect(await read(dir, 'review.md')).toContain('My own line.')
  })
})

describe('the journal stays small', () => {
  it('without fsync it is emptied as its writes are applied, and a finished run keeps none, with fsync or without', async () => {
    for (const fsync of [false, true]) {
      const dir = await writeVault(draftReview({ draftVisits: 50, reviewVisits: 50 }))
      const journal = join(dir, JOURNAL)
      // The hops' writes are applied while the worker works: without fsync, each worker sees the journal emptied of the hops
      // before it, holding no more than its own hop's claim (a journal never emptied fails the wait).
      const emptied = () => !existsSync(journal) || statSync(journal).size < 1024
      const work = scriptedWorker(() => (fsync ? undefined : until(emptied, 'the journal to be emptied of the hops before')))
      const judge = reviewJudge('review v40')
      expect(await runPlan(dir, { query, work, llm: judge, fsync, maxSteps: 100 })).toMatchObject({ status: 'completed', steps: 81 })
      expect(existsSync(journal)).toBe(false)
    }
  })
})

describe('with fsync, a hop flushes once', () => {
  const original = { fsyncSync: fs.fsyncSync, fdatasyncSync: fs.fdatasyncSync }
  afterEach(() => {
    Object.assign(fs, original)
    syncBuiltinESMExports()
  })

  it('a 40-hop loop: one flush per hop on its path, past a few at the start and the end', async () => {
    const counts = { hops: 0, flushes: 0 }
    const dir = await writeVault(draftReview({ draftVisits: 30, reviewVisits: 30 }))
    let counting = false
    const count =
      <Args extends unknown[]>(real: (...args: Args) => void) =>
      (...args: Args) => {
        if (counting) counts.flushes++
        real(...args)
      }
    fs.fsyncSync = count(original.fsyncSync)
    fs.fdatasyncSync = count(original.fdatasyncSync)
    syncBuiltinESMExports()
    await runPlan(dir, {
      query,
      work: scriptedWorker(),
      llm: reviewJudge('review v20'),
      fsync: true,
      onEvent: (event) => {
        // From the second hop to the last but one: the first rewrites of each note journal its copy, the end retires the journal.
        if (event.type === 'transition') {
          counts.hops++
          counting = counts.hops >= 2 && counts.hops < 40
        }
      },
    })
    expect(counts.hops).toBe(41)
    // Hops 3 to 40 recorded; and once, the first time the run writes the two notes, their copies journaled together.
    expect(counts.flushes).toBeGreaterThanOrEqual(38)
    expect(counts.flushes).toBeLessThanOrEqual(39)
  })
})
