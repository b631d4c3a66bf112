import { describe, expect, it } from 'vitest'
import { forkRun, readLedger, recordEntry, runPlan } from 'vaultplan'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, read, readTree, statuses, tempDir, writeVault } from './helpers/vault.js'
import { join } from 'node:path'

const query = 'Announce the release'
const options = { fsync: false }

/** The hops of a vault's trace as `step node visit -> next [decidedBy]`. */
async function path(dir: string): Promise<string[]> {
  const text = await read(dir, '00_plan-trace/trace.md')
  return [...text.matchAll(/^<!-- vaultplan:hop (.*) -->$/gm)]
    .map(([, json]) => JSON.parse(json!) as { kind: string; step: number; node: string; visit: number; next?: string | null; decidedBy?: string })
    .filter((record) => record.kind === 'hop')
    .map((record) => `${record.step} ${record.node} ${record.visit} -> ${record.next ?? 'end'} [${record.decidedBy}]`)
}

describe('forkRun', () => {
  it('a fork at every step of a run goes on exactly as the original did from there; the source is untouched byte for byte', async () => {
    const source = await writeVault(draftReview())
    const original = await runPlan(source, { ...options, query, work: scriptedWorker(), llm: reviewJudge('review v2') })
    const originalPath = await path(source)
    expect(originalPath).toHaveLength(5)
    const before = await readTree(source)
    // The forks are independent (forkRun only reads the source), so they are made and run at once: each mostly waits on its files.
    await Promise.all(
      [0, 1, 2, 3, 4, 5].map(async (step) => {
        const into = join(await tempDir(), 'fork')
        expect(await forkRun(source, { step, into })).toBe(into)
        expect(await readTree(source)).toEqual(before)
        const header = await read(into, '00_plan-trace/trace.md')
        expect(header).toContain(`fork:\n  run: ${original.runId}\n  step: ${step}\n`)
        expect(header).not.toContain(`run: ${original.runId}\nformat`)
        // The notes read as the run had them right after the step: worked ones `done`, so Obsidian shows the progress.
        const worked = [[], ['draft'], ['draft', 'review'], ['draft', 'review'], ['draft', 'review'], ['draft', 'review', 'send']][step]!
        expect({ step, statuses: await statuses(into) }).toEqual({
          step,
          statuses: { draft: 'pending', review: 'pending', send: 'pending', ...Object.fromEntries(worked.map((id) => [id, 'done'])) },
        })
        const work = scriptedWorker()
        const result = await runPlan(into, { ...options, work, llm: reviewJudge('review v2') })
        expect(await path(into)).toEqual(originalPath)
        // Only the hops after the fork's step are worked again.
        expect(work.calls.map((call) => call.step)).toEqual([1, 2, 3, 4, 5].filter((each) => each > step))
        expect({ ...result, runVault: '', runId: '' }).toEqual({ ...original, runVault: '', runId: '' })
        expect(result.runId).not.toBe(original.runId)
      }),
    )
  })

  it('replays from before a step with a fixed note: the fork uses the notes as they are in it', async () => {
    const source = await writeVault(draftReview())
    await runPlan(source, { ...options, query, work: scriptedWorker(), llm: reviewJudge('review v2') })
    const into = join(await tempDir(), 'fork')
    await forkRun(source, { step: 1, into })
    await edit(into, 'review.md', (text) => text.replace('Review the draft.', 'Review the draft against the style guide.'))
    const work = scriptedWorker()
    await runPlan(into, { ...options, work, llm: reviewJudge('review v1') })
    expect(work.calls[0]).toMatchObject({ node: 'review', step: 2, body: 'Review the draft against the style guide.' })
    expect(await path(into)).toEqual(['1 draft 1 -> review [unconditional]', '2 review 1 -> send [llm]', '3 send 1 -> end [terminal]'])
  })

  it('brings the ledger entries made up to the step, and ids go on from there', async () => {
    const source = await writeVault(draftReview())
    const work = scriptedWorker(async (step) => {
      if (step.node.id === 'review') await recordEntry(step.vault!, { kind: 'fact', text: `seen at step ${step.step}`, node: 'review', step: step.step })
    })
    await runPlan(source, { ...options, query, work, llm: reviewJudge('review v2') })
    expect((await readLedger(source)).facts.map((fact) => fact.text)).toEqual(['seen at step 2', 'seen at step 4'])
    const into = join(await tempDir(), 'fork')
    await forkRun(source, { step: 3, into })
    expect((await readLedger(into)).facts.map((fact) => `${fact.id} ${fact.text}`)).toEqual(['F1 seen at step 2'])
  })

  it('refuses a step outside the run, a vault with no run and a folder that is not empty', async () => {
    const source = await writeVault(draftReview())
    await expect(forkRun(source, { step: 1, into: join(await tempDir(), 'x') })).rejects.toMatchObject({ name: 'RunStateError', code: 'no-run' })
    await runPlan(source, { ...options, query, work: scriptedWorker(), llm: reviewJudge('review v1') })
    await expect(forkRun(source, { step: 4, into: join(await tempDir(), 'x') })).rejects.toThrow('Expected `step` to be an integer from 0 to 3')
    const full = await writeVault({ 'mine.md': '# Mine\n' })
    await expect(forkRun(source, { step: 1, into: full })).rejects.toMatchObject({ code: 'run-vault-not-empty' })
    expect(await read(full, 'mine.md')).toBe('# Mine\n')
  })
})

describe('vaultplan fork', () => {
  it('forks at a step and says how to go on; a bad step is a usage error', async () => {
    const { vaultplan } = await import('./helpers/cli.js')
    const source = await writeVault(draftReview())
    await runPlan(source, { ...options, query, work: scriptedWorker(), llm: reviewJudge('review v2') })
    const into = join(await tempDir(), 'fork')
    const run = await vaultplan(['fork', source, '--step', '2', '--into', into])
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout).toContain('at step 2 into')
    expect(await path(into)).toEqual((await path(source)).slice(0, 2))
    const bad = await vaultplan(['fork', source, '--step', '9', '--into', join(await tempDir(), 'other')])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toContain('--step must be an integer from 0 to 5')
  })
})
