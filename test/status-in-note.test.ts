import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { completeStep, nextStep, runPlan, type StepInput } from 'vaultplan'
import { branchedPlan, nestedPlan } from './helpers/subplans.js'
import { draftReview, work } from './helpers/plans.js'
import { currentOutput, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { statusOf, writeVault } from './helpers/vault.js'

// A person watching the run in their notes app sees each note move: `status: active` is in the note's file before
// its work is handed out, and `done` before the judge is asked. The run's journal may hold the durable copy; the
// note itself says it by then.

const query = 'Announce the release'

/** What the note file of a step says right now (read synchronously: nothing of the run's may happen in between). */
function statusOnDisk(dir: string, file: string): string {
  return statusOf(readFileSync(join(dir, file), 'utf8'))
}

/** A worker that reads its own note's file first and records what it says. */
function readingWorker(top: string) {
  const seen: string[] = []
  const worker = scriptedWorker((step: StepInput) => {
    seen.push(`${step.plan ? `${step.plan}/` : ''}${step.node.id} ${statusOnDisk(join(top, step.plan ?? ''), step.node.file!)}`)
  })
  return Object.assign(worker, { seen })
}

/** The review judge of the draft/review plan, reading the judged note's file (`review.md`) before it answers. */
function readingJudge(dir: string, approve: string) {
  const seen: string[] = []
  const judge = scriptedJudge((prompt) => {
    seen.push(`review ${statusOnDisk(dir, 'review.md')}`)
    return currentOutput(prompt) === approve ? '1: YES\n2: NO' : '1: NO\n2: YES'
  })
  return Object.assign(judge, { seen })
}

describe('runPlan: the note says `active` when its worker is called, `done` when its judge is asked', () => {
  for (const fsync of [true, false]) {
    it(`the draft/review loop (fsync: ${fsync})`, async () => {
      const dir = await writeVault(draftReview())
      const worker = readingWorker(dir)
      const judge = readingJudge(dir, 'review v2')
      expect(await runPlan(dir, { query, work: worker, llm: judge, fsync })).toMatchObject({ status: 'completed', steps: 5 })
      expect(worker.seen).toEqual(['draft active', 'review active', 'draft active', 'review active', 'send active'])
      expect(judge.seen).toEqual(['review done', 'review done'])
    })
  }

  it('inside a subplan, and in branches worked at once', async () => {
    for (const plan of [nestedPlan(), branchedPlan()]) {
      const dir = await writeVault(plan)
      const worker = readingWorker(dir)
      expect(await runPlan(dir, { query, work: worker, fsync: false })).toMatchObject({ status: 'completed' })
      expect(worker.seen.length).toBeGreaterThanOrEqual(4)
      for (const seen of worker.seen) expect(seen).toMatch(/ active$/)
    }
  })
})

describe('stepping: the note says `active` when its step is handed out, `done` when its judge is asked', () => {
  it('nextStep, then completeStep hop after hop', async () => {
    const dir = await writeVault(draftReview())
    const judge = readingJudge(dir, 'review v2')
    let step = work(await nextStep(dir, { query, fsync: true }))
    const seen = [`${step.node.id} ${statusOnDisk(dir, step.node.file!)}`]
    for (;;) {
      const next = await completeStep(dir, step.key, { output: `${step.node.id} v${step.visit}` }, { llm: judge, fsync: true })
      if (next.kind !== 'work') {
        expect(next).toMatchObject({ kind: 'completed', node: 'send' })
        break
      }
      step = next
      seen.push(`${step.node.id} ${statusOnDisk(dir, step.node.file!)}`)
    }
    expect(seen).toEqual(['draft active', 'review active', 'draft active', 'review active', 'send active'])
    expect(judge.seen).toEqual(['review done', 'review done'])
  })
})
