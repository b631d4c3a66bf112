import { appendFile, readFile, truncate, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect, it, vi } from 'vitest'
import { observeRun, runPlan } from 'vaultplan'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { statuses, writeVault } from './helpers/vault.js'

// A reader that does not hold the vault's lock (observeRun, dryRun, status) reads a live run's files and its
// journal as one: what the run journaled and has not written yet is in the journal, and written into the files
// (the journal emptied) within milliseconds. Here the run's write lands in the middle of the read: right after
// the notes were read.
const between = vi.hoisted(() => ({ write: undefined as (() => Promise<void>) | undefined }))

vi.mock('../src/plan/load-plan.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../src/plan/load-plan.js')>()
  const loadPlan = async (dir: string) => {
    const graph = await actual.loadPlan(dir)
    const write = between.write
    between.write = undefined
    await write?.()
    return graph
  }
  return { ...actual, loadPlan }
})

it('a status a live run writes into its note and out of its journal right after the read of the notes: the snapshot has it, from the journal read first', async () => {
  const dir = await writeVault(draftReview())
  await runPlan(dir, { query: 'Announce', work: scriptedWorker(), llm: reviewJudge(), fsync: false, maxSteps: 1 })
  const journal = join(dir, '00_plan-trace/.journal')
  // As a live run that journaled its claim of `review` and has not written it into the note yet.
  await appendFile(journal, `${JSON.stringify({ k: 'status', f: 'review.md', s: 'active' })}\n`)
  between.write = async () => {
    const text = await readFile(join(dir, 'review.md'), 'utf8')
    await writeFile(join(dir, 'review.md'), `---\nstatus: active\n---\n${text}`)
    await truncate(journal, 0)
  }
  const snapshot = await observeRun(dir)
  expect(between.write).toBeUndefined()
  expect((await statuses(dir)).review).toBe('active')
  expect(snapshot.nodes.find((node) => node.id === 'review')?.status).toBe('active')
})
