/**
 * Times both test suites the way a release must pass them: `npm test` then
 * `npm run test:slow`, `--rounds` times in a row (3 by default), each beside
 * a CPU load of twice the cores (scripts/under-load.sh), then `npm test`
 * once on the quiet machine. It stops at the first failure. What it
 * measured goes to bench/results/suite-times.json, from which `npm run
 * docs` writes the times in the README and docs/testing.md.
 *
 *   git clone <repo> fresh && cd fresh && npm ci
 *   scripts/test-pg.sh node scripts/suite-times.mjs [--rounds 3]
 *
 * It runs with `CI=true`, so a suite whose PostgreSQL or Chromium is
 * missing fails instead of leaving its tests out.
 */
import { spawn } from 'node:child_process'
import { cpus } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { startRecord, writeResult } from '../bench/lib/results.mjs'

const root = join(dirname(fileURLToPath(import.meta.url)), '..')
const { values } = parseArgs({ options: { rounds: { type: 'string', default: '3' } } })
const rounds = Number(values.rounds)
if (!Number.isInteger(rounds) || rounds < 1) throw new TypeError(`Expected --rounds to be a whole number from 1 up, got \`${values.rounds}\``)

const SUITES = [
  { suite: 'npm test', args: ['test'] },
  { suite: 'npm run test:slow', args: ['run', 'test:slow'] },
]
const load = 2 * cpus().length

/** The counts of vitest's summary (`Test Files  163 passed (163)`, `Tests  1350 passed (1350)`), ANSI colours removed. */
function countsOf(output) {
  const text = output.replace(/\u001b\[[0-9;]*m/g, '')
  const count = (label) => Number(text.match(new RegExp(`^\\s*${label}\\s+.*\\((\\d+)\\)\\s*$`, 'm'))?.[1] ?? NaN)
  return { files: count('Test Files'), tests: count('Tests') }
}

/** Runs one suite, its output passed through as it comes, and what it took. */
function time({ suite, args }, loaded) {
  const command = loaded ? ['scripts/under-load.sh', 'npm', ...args] : ['npm', ...args]
  process.stdout.write(`\n== ${suite}${loaded ? ` beside a load of ${load}` : ', quiet'}\n`)
  const started = process.hrtime.bigint()
  const child = spawn(command[0], command.slice(1), { cwd: root, env: { ...process.env, CI: 'true' }, stdio: ['ignore', 'pipe', 'inherit'] })
  let output = ''
  child.stdout.on('data', (chunk) => {
    output += chunk
    process.stdout.write(chunk)
  })
  return new Promise((done) =>
    child.on('close', (code) => {
      const seconds = Math.round(Number(process.hrtime.bigint() - started) / 1e9)
      done({ suite, load: loaded ? load : 0, seconds, passed: code === 0, ...countsOf(output) })
    }),
  )
}

const started = startRecord()
const runs = []
let failed = false
for (let round = 1; round <= rounds && !failed; round++)
  for (const suite of SUITES) {
    const run = await time(suite, true)
    runs.push({ round, ...run })
    if (!run.passed) {
      failed = true
      break
    }
  }
if (!failed) {
  const quiet = await time(SUITES[0], false)
  runs.push({ round: 0, ...quiet })
  failed = !quiet.passed
}
const path = await writeResult('suite-times', started, { rounds, runs })
process.stdout.write(
  `\n${runs.map((run) => `${run.suite}${run.load ? ` (load ${run.load})` : ' (quiet)'}: ${run.seconds} s, ${run.passed ? 'passed' : 'FAILED'}`).join('\n')}\nwritten to ${path}\n`,
)
process.exitCode = failed ? 1 : 0
