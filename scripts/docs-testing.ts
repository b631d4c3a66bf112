/**
 * Writes how long the test suites take, in the README's commands and in
 * docs/testing.md's table, from what scripts/suite-times.mjs measured
 * (bench/results/suite-times.json): three rounds of both suites beside a
 * CPU load of twice the cores, then `npm test` on the quiet machine.
 *
 *   tsx scripts/docs-testing.ts            rewrites the pages
 *   tsx scripts/docs-testing.ts --check    exits 1 when a page differs
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isMain, replaceGenerated, writeOrCheck } from './generated.js'

const root = fileURLToPath(new URL('..', import.meta.url))
export const readmePage = join(root, 'README.md')
export const testingPage = join(root, 'docs', 'testing.md')
const resultFile = join(root, 'bench', 'results', 'suite-times.json')

/** One suite's run as scripts/suite-times.mjs records it; round 0 is the quiet one. */
interface SuiteRun {
  round: number
  suite: string
  load: number
  seconds: number
  passed: boolean
  files: number
  tests: number
}

interface SuiteTimes {
  commit: { sha: string; dirty: boolean }
  date: string
  machine: { cpus: number; model: string; node: string }
  rounds: number
  runs: SuiteRun[]
}

const minutes = (seconds: number) => `${Math.floor(seconds / 60)} min ${seconds % 60} s`
const loaded = (times: SuiteTimes, suite: string) => times.runs.filter((run) => run.suite === suite && run.load > 0)
const slowest = (runs: SuiteRun[]) => Math.max(...runs.map((run) => run.seconds))

/** The README's set-up commands, the suites' times the slowest of the loaded rounds and the quiet one. */
export function renderCommands(times: SuiteTimes): string {
  const quiet = times.runs.find((run) => run.load === 0)
  const fast = `${minutes(slowest(loaded(times, 'npm test')))} under load${quiet ? `, ${minutes(quiet.seconds)} quiet` : ''}`
  const slow = `${minutes(slowest(loaded(times, 'npm run test:slow')))} under load`
  return [
    '```sh',
    'npm ci              # installs and builds (the build runs in `prepare`)',
    'npm run demo        # the main job: runs vaults/draft-review end to end, offline (about a second)',
    `npm test            # type-checks, checks the formatting, builds, runs the fast tests (${fast})`,
    `npm run test:slow   # the slow tests: crash trials, races, random plans, the packed tarball (${slow})`,
    '```',
    '',
    `Timed on a ${times.machine.cpus}-core machine with a CPU load of twice its cores beside the`,
    `suites (the slowest of ${times.rounds} rounds in a row), by \`scripts/suite-times.mjs\`.`,
  ].join('\n')
}

/** docs/testing.md's table: every run, in order, with its load, time and counts. */
export function renderTable(times: SuiteTimes): string {
  const rows = times.runs.map(
    (run) =>
      `| ${run.round === 0 ? 'quiet' : run.round} | \`${run.suite}\` | ${run.load === 0 ? 'none' : `${run.load} busy loops`} | ${minutes(run.seconds)} | ${run.passed ? 'passed' : 'failed'} | ${run.files} files, ${run.tests} tests |`,
  )
  return [
    `Measured on commit \`${times.commit.sha.slice(0, 7)}\`${times.commit.dirty ? ' (with changes)' : ''}, ${times.date.slice(0, 10)}, on ${times.machine.cpus} × ${times.machine.model}, Node ${times.machine.node}:`,
    '',
    '| Round | Command | Load beside it | Took | Result | Ran |',
    '| --- | --- | --- | --- | --- | --- |',
    ...rows,
  ].join('\n')
}

async function times(): Promise<SuiteTimes> {
  return JSON.parse(await readFile(resultFile, 'utf8')) as SuiteTimes
}

/** The README as it should read, its commands' times from the committed measurement. */
export async function renderReadme(): Promise<string> {
  return replaceGenerated(await readFile(readmePage, 'utf8'), 'test-commands', renderCommands(await times()))
}

/** docs/testing.md as it should read, its table from the committed measurement. */
export async function renderTestingPage(): Promise<string> {
  return replaceGenerated(await readFile(testingPage, 'utf8'), 'suite-times', renderTable(await times()))
}

if (isMain(import.meta.url)) {
  await writeOrCheck(readmePage, await renderReadme(), 'bench/results/suite-times.json')
  await writeOrCheck(testingPage, await renderTestingPage(), 'bench/results/suite-times.json')
}
