import { cp, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { afterAll, describe, expect, it } from 'vitest'
import { comparable, runCrashTrials, type CrashReport } from './crash/run.mjs'
import { makeScript } from './crash/script.mjs'

// The crash harness runs the built library (`dist/`) in child processes, so
// `npm run test:slow` builds first. `npm run test:crash -- --trials 200` runs many more.

const root = fileURLToPath(new URL('..', import.meta.url))
const mutants = join(root, 'node_modules', '.cache', `vaultplan-crash-mutants-${process.pid}`)

afterAll(async () => {
  await rm(mutants, { recursive: true, force: true })
})

function problemsOf(report: CrashReport): string[] {
  return report.failed.flatMap((trial) => trial.problems.map((problem) => `trial ${trial.index}: [${problem.kind}] ${problem.message}`))
}

/** A copy of `dist/` with one file patched: the harness must catch the break. */
async function mutant(name: string, file: string, edits: [from: string, to: string][]): Promise<string> {
  const dir = join(mutants, name)
  await cp(join(root, 'dist'), dir, { recursive: true })
  let text = await readFile(join(dir, file), 'utf8')
  for (const [from, to] of edits) {
    if (!text.includes(from)) throw new Error(`The mutant \`${name}\` no longer applies: \`${from}\` is not in dist/${file}`)
    text = text.replace(from, to)
  }
  await writeFile(join(dir, file), text)
  return join(dir, 'index.js')
}

it('a run killed with SIGKILL at random points resumes to the same path, losing nothing', async () => {
  const lines: string[] = []
  const report = await runCrashTrials({ trials: 8, seed: 20_240_301, jobs: 4, log: (line) => lines.push(line) })
  expect(problemsOf(report)).toEqual([])
  expect({ ok: report.ok, dataLosses: report.dataLosses, budgetViolations: report.budgetViolations }).toEqual({ ok: true, dataLosses: 0, budgetViolations: 0 })
  expect(report.kills).toBeGreaterThanOrEqual(4)
  expect(report.resumes).toBeGreaterThanOrEqual(report.kills)
  expect(report.summary).toMatch(/^crash: 8 trials, \d+ kill points covered, \d+ resumes, 0 data losses, 0 budget violations$/)
}, 120_000)

it('a plan inside a plan killed inside its branches resumes each branch where it stopped, losing nothing', async () => {
  const lines: string[] = []
  const report = await runCrashTrials({ trials: 4, seed: 20_261_201, jobs: 2, plan: 'nested', log: (line) => lines.push(line) })
  expect(problemsOf(report)).toEqual([])
  expect({ ok: report.ok, dataLosses: report.dataLosses, budgetViolations: report.budgetViolations }).toEqual({ ok: true, dataLosses: 0, budgetViolations: 0 })
  // Most of the works are in the branches, so most kills land there (the kill points are named from branch `post/`).
  expect(report.kills).toBeGreaterThanOrEqual(2)
  expect(report.summary).toMatch(/^crash: 4 trials of a nested plan, \d+ kill points covered, \d+ resumes, 0 data losses, 0 budget violations$/)
}, 180_000)

it('two agents working the branches of a plan at once, killed and restarted, record each visit once and lose nothing', async () => {
  const lines: string[] = []
  const report = await runCrashTrials({ trials: 4, seed: 20_261_206, jobs: 2, scenario: 'agents', log: (line) => lines.push(line) })
  expect(problemsOf(report)).toEqual([])
  expect({ ok: report.ok, dataLosses: report.dataLosses, budgetViolations: report.budgetViolations }).toEqual({ ok: true, dataLosses: 0, budgetViolations: 0 })
  expect(report.summary).toMatch(/^agents: 4 trials, .*, 0 data losses, 0 visits recorded twice, 0 budget violations$/)
}, 240_000)

describe('the harness catches a broken library', () => {
  it('writes in place instead of through a temp file', async () => {
    const dist = await mutant('in-place', 'vault/fs-atomic.js', [
      // The hop path's synchronous write (status rewrites, output notes).
      ['const fd = openSync(temp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, mode);', "const fd = openSync(path, 'w', mode);"],
      ['renameSync(temp, path);', ''],
    ])
    const report = await runCrashTrials({ trials: 1, seed: 5, jobs: 1, mode: 'pause', dist, keepFailed: false, log: () => {} })
    expect(report.ok).toBe(false)
    // Where the seeded kill lands decides which check fires first: the in-place open, or the note it emptied.
    expect(problemsOf(report).some((problem) => /non-atomic write: open\(`\w+\.md`|\[data-loss\].*changed beyond its status value/.test(problem))).toBe(true)
  }, 60_000)

  it('forgets the last hop of the trace on resume', async () => {
    const dist = await mutant('forget-hop', 'store/trace.js', [
      [
        'return { text, trace: { header, records, claims, edits }, lines };',
        'return { text, trace: { header, records: records.slice(0, -1), claims, edits }, lines };',
      ],
    ])
    const report = await runCrashTrials({ trials: 1, seed: 5, jobs: 1, mode: 'pause', dist, keepFailed: false, log: () => {} })
    expect(report.ok).toBe(false)
    expect(report.dataLosses).toBeGreaterThan(0)
  }, 60_000)

  it('renames status rewrites over notes without the journal holding their bytes (a power cut empties a note)', async () => {
    const dist = await mutant('no-journal', 'store/note-journal.js', [
      ['        if (!this.fsync || this.seen.get(file) === text)\n            return;', '        return;'],
    ])
    const report = await runCrashTrials({ trials: 2, seed: 7, jobs: 2, mode: 'power', dist, keepFailed: false, log: () => {} })
    expect(report.ok).toBe(false)
    expect(report.dataLosses).toBeGreaterThan(0)
  }, 60_000)

  it("flushes a hop's record in the journal but never brings the trace up to it after a power cut (flushed hops lost)", async () => {
    const dist = await mutant('no-trace-repair', 'store/note-journal.js', [['        repairTrace(root, parsed, options.fsync);\n', '']])
    const report = await runCrashTrials({ trials: 2, seed: 7, jobs: 2, mode: 'power', dist, keepFailed: false, log: () => {} })
    expect(report.ok).toBe(false)
    expect(report.dataLosses).toBeGreaterThan(0)
  }, 60_000)

  it('ignores the verdict saved with an output and runs the check of a resumed visit again', async () => {
    const dist = await mutant('check-twice', 'run/drive/run-driver.js', [
      ['verdictSaved(saved));', 'await verdictOf(this.hops.nodeOrFail(position.node), { output: saved.output }, this.options, this.hops));'],
    ])
    // Trial 8 of seed 9 kills a child just after it journaled `draft#3`'s output; the next run must judge the visit from it.
    const report = await runCrashTrials({ trials: 1, only: 8, seed: 9, jobs: 1, mode: 'pause', dist, keepFailed: false, log: () => {} })
    expect(report.ok).toBe(false)
    expect(report.checksTwice).toBeGreaterThan(0)
    expect(problemsOf(report).some((problem) => /\[other\] child \d+ ran the check of `draft#\d` again, whose verdict was on disk/.test(problem))).toBe(true)
  }, 60_000)

  it('compares the visits of two results whatever order their notes come in (a note a read left out comes last)', () => {
    const result = { status: 'completed', runId: 'r1', output: 'WORK step=10', visits: { draft: 3, review: 3, 'blog/post': 1 } }
    const reordered = { ...result, runId: 'r2', visits: { draft: 3, 'blog/post': 1, review: 3 } }
    expect(JSON.stringify(comparable(reordered))).toBe(JSON.stringify(comparable(result)))
    expect(JSON.stringify(comparable({ ...result, visits: { draft: 3, review: 2, 'blog/post': 1 } }))).not.toBe(JSON.stringify(comparable(result)))
  })

  it("has its worker look for the note's `status: active` longer than the library waits for a note a person just saved to settle", async () => {
    const vault = await mkdtemp(join(tmpdir(), 'vaultplan-script-'))
    await writeFile(join(vault, 'a.md'), '---\nstatus: pending\n---\n# A\n')
    // The claim's status lands once the note has settled: a second after a person's last save, and the save took a moment.
    const lands = setTimeout(() => void writeFile(join(vault, 'a.md'), '---\nstatus: active\n---\n# A\n'), 1_500)
    const entries: Record<string, unknown>[] = []
    try {
      await makeScript({ vault, log: (entry) => entries.push(entry) }).work({ node: { id: 'a', file: 'a.md' }, visit: 1, step: 1, key: 'k', outputs: [] })
    } finally {
      clearTimeout(lands)
      await rm(vault, { recursive: true, force: true })
    }
    expect(entries.find((entry) => entry.t === 'work-start')).toMatchObject({ node: 'a', status: 'active' })
  })

  it("a person's editor saving notes in place while the run goes and is killed loses none of their bytes", async () => {
    const report = await runCrashTrials({ trials: 3, seed: 11, jobs: 3, mode: 'editor', log: () => {} })
    expect(problemsOf(report)).toEqual([])
    expect(report.kills).toBeGreaterThanOrEqual(3)
  }, 120_000)

  it('copies the template into a run vault without flushing it before its rename (a power cut leaves a run vault of torn notes)', async () => {
    const dist = await mutant('unflushed-copy', 'run/drive/run-vault.js', [['        if (options.fsync)\n            await syncTree(temp);\n', '']])
    // Trial 7 of seed 1 is a copy trial: its power cuts land in the copy and in the run's first hops.
    const report = await runCrashTrials({ trials: 1, only: 7, seed: 1, jobs: 1, mode: 'power', dist, keepFailed: false, log: () => {} })
    expect(report.failed.map((trial) => trial.scenario)).toEqual(['copy'])
    expect(report.dataLosses).toBeGreaterThan(0)
  }, 60_000)

  it('a power cut during the copy into a run vault, or in the run just after, leaves no run vault or a whole one', async () => {
    const report = await runCrashTrials({ trials: 1, only: 7, seed: 1, jobs: 1, mode: 'power', log: () => {} })
    expect(problemsOf(report)).toEqual([])
    expect(report.kills).toBeGreaterThanOrEqual(1)
  }, 60_000)

  it('a power cut loses no byte of a note when the journal is kept', async () => {
    const report = await runCrashTrials({ trials: 2, seed: 7, jobs: 2, mode: 'power', log: () => {} })
    expect(problemsOf(report)).toEqual([])
    expect(report.kills).toBeGreaterThanOrEqual(2)
  }, 120_000)
})
