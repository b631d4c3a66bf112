import { cpSync } from 'node:fs'
import { readdir } from 'node:fs/promises'
import { expect, it } from 'vitest'
import { dryRun, runPlan } from 'vaultplan'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { note, readTree, tempDir, writeVault } from './helpers/vault.js'
import { vaultplan } from './helpers/cli.js'

it('shows the judge prompt the next hop would send, the same a run sends, and changes nothing', async () => {
  const dir = await writeVault(draftReview())
  // Stopped by maxSteps before review's second visit: with a larger budget the next hop works it, then judges it.
  await runPlan(dir, { query: 'Announce', fsync: false, work: scriptedWorker(), llm: reviewJudge(), maxSteps: 3 })
  const before = await readTree(dir)
  expect(await dryRun(dir, { maxSteps: 50 })).toMatchObject({ node: 'review', visit: 2, step: 4, worked: false, conditions: ['approved', 'needs revision'] })
  // With the budget it last ran with (or the same one given), it stops before the hop: no judge.
  expect(await dryRun(dir)).toBeNull()
  expect(await dryRun(dir, { maxSteps: 3 })).toBeNull()
  // A fresh vault starts at draft, which has no condition: no judge.
  const fresh = await writeVault(draftReview())
  expect(await dryRun(fresh, { query: 'Announce' })).toBeNull()

  // An output saved, its transition not judged: the preview is the prompt the resumed run sends.
  const other = await writeVault(draftReview())
  // The vault as the judge is first asked, before the run writes into the files what its journal holds (the output among it).
  const asked = await tempDir()
  const crash = scriptedWorker()
  const judge = reviewJudge('review v1')
  let preview
  await runPlan(other, {
    query: 'Announce',
    fsync: false,
    work: crash,
    llm: async (prompt, options) => {
      if (judge.calls.length === 0) cpSync(other, asked, { recursive: true })
      preview ??= await dryRun(other)
      return judge(prompt, options)
    },
  })
  const expected = { node: 'review', visit: 1, step: 2, conditions: ['approved', 'needs revision'], worked: true }
  for (const shown of [preview, await dryRun(asked)]) {
    expect(shown).toMatchObject(expected)
    expect(shown!.prompt.replace(/DATA-\w+/g, 'DATA')).toBe(judge.calls[0]!.prompt.replace(/DATA-\w+/g, 'DATA'))
  }
  expect(await readTree(dir)).toEqual(before)
})

it('vaultplan run --dry-run prints it and writes nothing', async () => {
  const dir = await writeVault(draftReview())
  await runPlan(dir, { query: 'Announce', fsync: false, work: scriptedWorker(), llm: reviewJudge(), maxSteps: 1 })
  const before = await readTree(dir)
  const run = await vaultplan(['run', dir, '--dry-run', '--max-steps', '10'], { env: {} })
  expect(run).toMatchObject({ code: 0, stderr: '' })
  expect(run.stdout).toContain('Dry run: the judge prompt of review (visit 1, step 2), before its work')
  expect(run.stdout).toContain('1. approved\n2. needs revision')
  expect(await readTree(dir)).toEqual(before)
})

it('vaultplan run --dry-run --run-vault runs/new previews the copy a run would make, and makes none', async () => {
  const plan = await writeVault({
    'review.md': note({ front: { type: 'start' }, title: 'Review', body: 'Review the draft.', next: ['approved -> [[send]]', 'needs revision -> [[review]]'] }),
    'send.md': note({ title: 'Send', body: 'Send it.' }),
  })
  const cwd = await tempDir()
  const run = await vaultplan(['run', plan, '--dry-run', '--run-vault', 'runs/new', '--query', 'Announce'], { cwd, env: {} })
  expect(run).toMatchObject({ code: 0, stderr: '' })
  expect(run.stdout).toContain('Dry run: the judge prompt of review (visit 1, step 1), before its work')
  expect(run.stdout).toContain('1. approved\n2. needs revision')
  expect(await readdir(cwd)).toEqual([])
})

it('inside a subplan: the preview is the judge prompt of the next hop there, numbered as the whole run', async () => {
  const dir = await writeVault({
    'outline.md': note({ front: { type: 'start' }, title: 'Outline', body: 'Outline it.', next: ['[[research]]'] }),
    'research.md': note({ front: { plan: 'web' }, title: 'Research', body: 'Research it.' }),
    'web/find.md': note({ front: { type: 'start' }, title: 'Find', body: 'Find sources.', next: ['enough -> [[sum]]', 'more needed -> [[find]]'] }),
    'web/sum.md': note({ title: 'Sum', body: 'Sum them up.' }),
  })
  await runPlan(dir, { query: 'Announce', fsync: false, work: scriptedWorker(), maxSteps: 1 })
  expect(await dryRun(dir, { maxSteps: 50 })).toMatchObject({ node: 'web/find', visit: 1, step: 2, worked: false, conditions: ['enough', 'more needed'] })
})

it('is given the checks a run would have: a note naming another is refused, and the preview names the checks that run before the judge', async () => {
  const dir = await writeVault({
    'code.md': note({
      front: { type: 'start', check: 'test' },
      title: 'Write the code',
      next: ['failed -> [[code]]', 'passed -> [[ship]]', 'needs docs -> [[docs]]'],
    }),
    'docs.md': note({ title: 'Docs' }),
    'ship.md': note({ title: 'Ship' }),
  })
  await expect(dryRun(dir, { query: 'Add a flag', checks: {} })).rejects.toMatchObject({ name: 'PlanValidationError', issues: [{ code: 'unknown-check' }] })
  const preview = await dryRun(dir, { query: 'Add a flag', checks: { test: { command: ['npm', 'test'] } } })
  // The checks decide `passed` and `failed`: the judge is asked only the rest.
  expect(preview).toMatchObject({ node: 'code', checks: ['test'], conditions: ['needs docs'] })
  const cli = await vaultplan(['run', dir, '--dry-run', '--query', 'Add a flag', '--check', 'test=npm test'])
  expect(cli.stdout).toContain('Dry run: the judge prompt of code (visit 1, step 1), before its work; after the work the checks test run first')
  expect((await vaultplan(['run', dir, '--dry-run', '--query', 'Add a flag'])).stderr).toContain('unknown-check')
})
