import { existsSync, readFileSync } from 'node:fs'
import { mkdir, readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runPlan } from 'vaultplan'
import { torn } from '../src/store/journal-repair.js'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { writeVault } from './helpers/vault.js'
import { until } from './helpers/until.js'

// With fsync on, status rewrites and output notes are not flushed one by one: the journal
// (00_plan-trace/.journal) holds a flushed copy of what a power cut could tear. These tests
// make what a power cut leaves by hand (an emptied or zero-filled note, an output note whose
// name never reached the disk) and a new boot of the machine, and run the vault again.

const PLAN = {
  'draft.md': '---\ntype: start\nstatus: pending\ntags: [mine]\n---\n# Draft\n\nMy own words, kept byte for byte.  \n\n## Next\n- [[review]]\n',
  'review.md': '---\nstatus: pending\n---\n# Review\n\nRead it *twice*.\n\n## Next\n- [[send]]\n',
  'send.md': '---\nstatus: pending\n---\n# Send\n',
}
const work = async (step: { node: { id: string }; visit: number }) => `output of ${step.node.id} #${step.visit}`
const options = { query: 'q', work, fsync: true }

/** What a reboot does to the journal's view of the page cache: its entries are from another boot. */
async function reboot(vault: string): Promise<void> {
  const path = join(vault, '00_plan-trace', '.journal')
  const text = await readFile(path, 'utf8')
  expect(text).toMatch(/"k":"boot"/)
  await writeFile(path, text.replace(/"k":"boot","id":"[^"]*"/g, '"k":"boot","id":"an-earlier-boot"'))
}

describe('the journal repairs what a power cut tore', () => {
  it('a note left empty or zero-filled after a reboot gets its bytes back, and the run goes on to the same result', async () => {
    const vault = await writeVault(PLAN)
    const first = await runPlan(vault, { ...options, maxSteps: 2 })
    expect(first.status).toBe('stopped')
    const review = await readFile(join(vault, 'review.md'), 'utf8')
    await writeFile(join(vault, 'draft.md'), '')
    await writeFile(join(vault, 'review.md'), Buffer.alloc(review.length))
    await reboot(vault)
    const result = await runPlan(vault, { ...options, maxSteps: 10 })
    expect({ status: result.status, output: result.output, steps: result.steps }).toEqual({ status: 'completed', output: 'output of send #1', steps: 3 })
    // The person's bytes are all back; only a status value may differ.
    expect((await readFile(join(vault, 'draft.md'), 'utf8')).replace(/status: \w+/, 'status: pending')).toBe(PLAN['draft.md'])
    expect((await readFile(join(vault, 'review.md'), 'utf8')).replace(/status: \w+/, 'status: pending')).toBe(PLAN['review.md'])
  })

  it('an output note the trace records but the disk lost is written again from the journal', async () => {
    const vault = await writeVault(PLAN)
    await runPlan(vault, { ...options, maxSteps: 2 })
    const output = join(vault, '00_plan-trace', 'outputs', '0001-draft.md')
    const saved = await readFile(output, 'utf8')
    await rm(output)
    await reboot(vault)
    const result = await runPlan(vault, { ...options, maxSteps: 10 })
    expect(result.status).toBe('completed')
    expect(await readFile(output, 'utf8')).toBe(saved)
  })

  it('a `fresh: true` start cut off by a power cut after it moved the outputs into the archive, before the trace: the outputs stay archived, the archive is finished', async () => {
    const vault = await writeVault(PLAN)
    const first = await runPlan(vault, { ...options, maxSteps: 10 })
    expect(first.status).toBe('completed')
    const folder = join(vault, '00_plan-trace')
    const saved = await readFile(join(folder, 'outputs', '0001-draft.md'), 'utf8')
    // What a power cut after the archive's first moves leaves: the outputs moved, the trace still in place.
    const archive = join(folder, 'archive', first.runId.replace(/[^\w.-]+/g, '_'))
    await mkdir(archive, { recursive: true })
    await rename(join(folder, 'outputs'), join(archive, 'outputs'))
    // The completed run left no journal to repair from: its files were flushed before it was removed.
    expect(existsSync(join(folder, '.journal'))).toBe(false)
    const again = await runPlan(vault, { ...options, fresh: true, maxSteps: 10 })
    expect(again.status).toBe('completed')
    expect(await readFile(join(archive, 'outputs', '0001-draft.md'), 'utf8')).toBe(saved)
    expect(await readFile(join(archive, 'trace.md'), 'utf8')).toMatch(first.runId)
  })

  it('a status rename the power cut undid (a note back at `active`) gets its last status back, so nothing is worked twice', async () => {
    const vault = await writeVault(PLAN)
    await runPlan(vault, { ...options, maxSteps: 2 })
    const draft = await readFile(join(vault, 'draft.md'), 'utf8')
    expect(draft).toContain('status: done')
    await writeFile(join(vault, 'draft.md'), draft.replace('status: done', 'status: active'))
    await reboot(vault)
    const worked: string[] = []
    const result = await runPlan(vault, { ...options, maxSteps: 10, work: async (step) => (worked.push(step.node.id), work(step)) })
    expect({ status: result.status, steps: result.steps, worked }).toEqual({ status: 'completed', steps: 3, worked: ['send'] })
    expect(await readFile(join(vault, 'draft.md'), 'utf8')).toBe(draft)
  })

  it('a journal entry cut short by a crash is dropped before anything is appended after it', async () => {
    const vault = await writeVault(PLAN)
    await runPlan(vault, { ...options, maxSteps: 1 })
    const path = join(vault, '00_plan-trace', '.journal')
    await writeFile(path, `${await readFile(path, 'utf8')}{"k":"file","f":"00_plan-trace/outputs/0002-rev`)
    await reboot(vault)
    // Stopped short of the end: a completed run removes its journal.
    expect((await runPlan(vault, { ...options, maxSteps: 2 })).status).toBe('stopped')
    const lines = (await readFile(path, 'utf8')).split('\n').filter(Boolean)
    expect(lines.every((line) => typeof JSON.parse(line) === 'object')).toBe(true)
  })

  it('leaves alone a note a person changed since', async () => {
    const vault = await writeVault(PLAN)
    await runPlan(vault, { ...options, maxSteps: 2 })
    const shortened = '---\ntype: start\nstatus: done\n---\n# Draft\n'
    await writeFile(join(vault, 'draft.md'), shortened)
    await reboot(vault)
    await runPlan(vault, { ...options, maxSteps: 10 })
    expect(await readFile(join(vault, 'draft.md'), 'utf8')).toBe(shortened)
  })

  it('a note rewritten after a long run emptied the journal is restored too', async () => {
    const vault = await writeVault(draftReview())
    const path = join(vault, '00_plan-trace', '.journal')
    // Emptied: it no longer holds the outputs' words (a journal past 2 MB is emptied once what it holds is applied).
    const emptied = () => !readFileSync(path, 'utf8').includes('words words')
    // Two outputs of 1 MB (the most an output keeps) pass the size at which the journal is emptied once their hops
    // are applied; the hops are applied while a worker works, so the second draft's worker waits for that.
    const work = scriptedWorker(async (step) => {
      if (step.node.id === 'draft' && step.visit === 2) await until(emptied, 'the journal emptied by the time the second draft is worked')
      if (step.visit === 1 && step.node.id !== 'send') return 'words '.repeat(200_000)
    })
    const run = (maxSteps: number) => runPlan(vault, { query: 'q', work, llm: reviewJudge('review v2'), fsync: true, maxSteps })
    expect((await run(3)).status).toBe('stopped')
    expect(work.calls.map((call) => `${call.node} v${call.visit}`)).toEqual(['draft v1', 'review v1', 'draft v2'])
    // Emptied before the second draft's hop: its note was rewritten (`done`) after that.
    const draft = await readFile(join(vault, 'draft.md'), 'utf8')
    expect(draft).toContain('status: done')
    await writeFile(join(vault, 'draft.md'), '')
    // A new boot: any boot entry is another boot's (a journal without one is read as another boot's anyway).
    await writeFile(path, (await readFile(path, 'utf8')).replace(/"k":"boot","id":"[^"]*"/g, '"k":"boot","id":"an-earlier-boot"'))
    const result = await run(10)
    expect({ status: result.status, output: result.output }).toEqual({ status: 'completed', output: 'send v1' })
    expect(await readFile(join(vault, 'draft.md'), 'utf8')).toBe(draft)
  })

  it("tells torn bytes from a person's: empty or NUL-filled only", () => {
    expect([torn(''), torn('\0\0\0'), torn('# Draft\n\0\0'), torn('# Draft\n'), torn('---\nstatus: done\n---\n')]).toEqual([true, true, true, false, false])
  })
})
