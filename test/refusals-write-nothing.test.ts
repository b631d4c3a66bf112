import { execFile } from 'node:child_process'
import { describe, expect, it } from 'vitest'
import { completeStep, nextStep, type StepOptions } from 'vaultplan'
import { draftReview, linear, work } from './helpers/plans.js'
import { noJudge } from './helpers/scripted.js'
import { vaultBytes, writeVault } from './helpers/vault.js'

// A refused call, or a `busy` answer, writes nothing: once it returns, the vault is byte for byte what it was,
// hidden files included (the run's journal, the lock's records), and no folder is made. Each refusal is asked in
// this process and then in a process of its own, as an agent calling from a fresh process each time does (it opens
// the vault without what an earlier call of its process kept).

const query = 'Announce the release'
const dist = new URL('../dist/index.js', import.meta.url).href

/** A stepping call, as data: made here or in another process. */
type Call =
  { name: 'nextStep'; options: StepOptions } | { name: 'completeStep'; key: string; result: { output: string; choice?: string }; options: StepOptions }

/** What a call answered: the step's kind, or the error's name and code. */
type Outcome = { kind: string } | { name: string; code?: string }

function outcomeOf(answer: unknown): Outcome {
  if (answer instanceof Error) return { name: answer.name, ...('code' in answer && { code: answer.code as string }) }
  return { kind: (answer as { kind: string }).kind }
}

async function here(dir: string, call: Call): Promise<Outcome> {
  const answer = call.name === 'nextStep' ? nextStep(dir, call.options) : completeStep(dir, call.key, call.result, call.options)
  return outcomeOf(await answer.catch((error: unknown) => error))
}

/** The call made by a process of its own, on the built package. */
function inAnotherProcess(dir: string, call: Call): Promise<Outcome> {
  const script = `
    const stepping = await import(${JSON.stringify(dist)})
    const [dir, call] = [process.argv[1], JSON.parse(process.argv[2])]
    const answer = call.name === 'nextStep' ? stepping.nextStep(dir, call.options) : stepping.completeStep(dir, call.key, call.result, call.options)
    const outcome = await answer.then((step) => ({ kind: step.kind }), (error) => ({ name: error.name, ...(error.code && { code: error.code }) }))
    console.log(JSON.stringify(outcome))`
  return new Promise((done, fail) =>
    execFile(process.execPath, ['--input-type=module', '-e', script, dir, JSON.stringify(call)], (error, stdout, stderr) =>
      error ? fail(new Error(`${error.message}\n${stderr}`)) : done(JSON.parse(stdout) as Outcome),
    ),
  )
}

/** Makes `call` here, then in another process; each must answer `expected` and leave every byte and folder of `dir` as it was. */
async function changesNothing(dir: string, call: Call, expected: Outcome): Promise<void> {
  const before = await vaultBytes(dir)
  for (const make of [here, inAnotherProcess]) {
    expect(await make(dir, call)).toEqual(expected)
    expect(await vaultBytes(dir)).toEqual(before)
  }
}

describe('a refused call writes nothing, hidden files included', () => {
  for (const fsync of [true, false]) {
    describe(`fsync: ${fsync}`, () => {
      /** The draft/review plan with draft completed: review is the pending step. */
      async function atReview() {
        const dir = await writeVault(draftReview())
        const draft = work(await nextStep(dir, { query, fsync }))
        const review = work(await completeStep(dir, draft.key, { output: 'draft v1' }, { fsync, llm: noJudge() }))
        return { dir, review }
      }

      it('completeStep with a stale key: stale-step', async () => {
        const { dir, review } = await atReview()
        const call: Call = { name: 'completeStep', key: `${review.key}x`, result: { output: 'late' }, options: { fsync } }
        await changesNothing(dir, call, { name: 'RunStateError', code: 'stale-step' })
      })

      it('completeStep with a choice outside the step’s conditions: bad-choice', async () => {
        const { dir, review } = await atReview()
        const call: Call = { name: 'completeStep', key: review.key, result: { output: 'review v1', choice: 'maybe' }, options: { fsync } }
        await changesNothing(dir, call, { name: 'RunStateError', code: 'bad-choice' })
      })

      it('nextStep and completeStep with another query than the recorded one: query-mismatch', async () => {
        const { dir, review } = await atReview()
        const options = { fsync, query: 'Something else' }
        await changesNothing(dir, { name: 'nextStep', options }, { name: 'RunStateError', code: 'query-mismatch' })
        const call: Call = { name: 'completeStep', key: review.key, result: { output: 'review v1', choice: 'approved' }, options }
        await changesNothing(dir, call, { name: 'RunStateError', code: 'query-mismatch' })
      })

      it('another agent holds the only step: nextStep answers busy, completeStep is refused (claimed)', async () => {
        const dir = await writeVault(linear())
        const a = work(await nextStep(dir, { query, fsync, agent: 'ada' }))
        await changesNothing(dir, { name: 'nextStep', options: { fsync, agent: 'bob' } }, { kind: 'busy' })
        const call: Call = { name: 'completeStep', key: a.key, result: { output: 'a v1' }, options: { fsync, agent: 'bob' } }
        await changesNothing(dir, call, { name: 'RunStateError', code: 'claimed' })
      })

      it('nextStep on a vault with no run and no query: a TypeError, and no run folder made', async () => {
        const dir = await writeVault(draftReview())
        await changesNothing(dir, { name: 'nextStep', options: { fsync } }, { name: 'TypeError' })
      })
    })
  }
})
