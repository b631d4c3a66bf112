/**
 * The load row of the bench on its own: load + validate of a generated vault
 * against the synchronous bare read (`readFileSync` in a loop), measured in
 * turns in one process (medians of wall-clock and CPU time), and the peak
 * RSS of a load in a fresh process; and the start-up of `vaultplan validate`
 * on a 3-note vault against `node -e 0` (10 processes each, in turns).
 * Quicker than `node bench/run.mjs`.
 *
 * With `--phases`, the load's CPU time piece by piece instead (listing,
 * reading, parsing, building the graph, validating; medians of the reps).
 *
 * Usage (after `npm run build`): node bench/load.mjs [notes] [reps] [--phases]   (default 10000 notes, 9 reps)
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadAndValidate, readOnlySync } from './lib/load.mjs'
import { measureStartup, writeTinyVault } from './lib/startup.mjs'
import { measureInTurns } from './lib/stats.mjs'
import { writeBigVault } from './lib/vaults.mjs'

const args = process.argv.slice(2)
const [notes = 10_000, reps = 9] = args.filter((arg) => !arg.startsWith('--')).map(Number)
const here = dirname(fileURLToPath(import.meta.url))
const base = await mkdtemp(join(tmpdir(), 'vaultplan-load-'))
const loadStart = loadavg().map((value) => +value.toFixed(2))
try {
  await writeBigVault(base, notes)
  if (args.includes('--phases')) {
    await phases(base)
    process.exit(0)
  }
  const timed = (figure) => ({ value: figure.ms, cpu: figure.cpuMs })
  const figures = await measureInTurns(
    [
      { name: 'load', run: async () => timed(await loadAndValidate(base)) },
      { name: 'read', run: async () => timed(readOnlySync(base)) },
    ],
    { warmup: 2, reps },
  )
  const child = async () => {
    const { stdout } = await promisify(execFile)(process.execPath, [join(here, 'lib', 'load-child.mjs'), base, 'load'])
    return JSON.parse(stdout).peakRssMB
  }
  const peaks = [await child(), await child(), await child()].sort((a, b) => a - b)
  const { load, read } = figures
  const row = (name, summary) => `${name.padEnd(34)} ${summary.median.toFixed(0).padStart(6)} ms (min ${summary.min.toFixed(0)}, max ${summary.max.toFixed(0)})`
  console.log(
    `${notes} notes, ${reps} reps in turns; load average ${loadStart.join(' ')} at start, ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')} at end`,
  )
  console.log(row('load + validate, wall', load), '| CPU', row('', load.cpu).trim())
  console.log(row('read (readFileSync loop), wall', read), '| CPU', row('', read.cpu).trim())
  console.log(
    `ratio load+validate / sync read: wall ${(load.median / read.median).toFixed(2)}x, CPU ${(load.cpu.median / read.cpu.median).toFixed(2)}x (target 4x)`,
  )
  console.log(`peak RSS of a load in a fresh process: ${peaks.map((peak) => peak.toFixed(0)).join(', ')} MB (target < 200)`)
  const tiny = join(base, 'tiny')
  await mkdir(tiny)
  await writeTinyVault(tiny)
  const { bare, validate } = await measureStartup(tiny, { reps: 10 })
  console.log(
    `start-up: vaultplan validate (3 notes) ${validate.median.toFixed(0)} ms, node -e 0 ${bare.median.toFixed(0)} ms: ${(validate.median / bare.median).toFixed(2)}x (target 2x)`,
  )
} finally {
  await rm(base, { recursive: true, force: true })
}

/** The load piece by piece, each piece's CPU time a median of `reps` after two warm-ups (the pieces are the loader's own functions). */
async function phases(dir) {
  const { listNotes } = await import('../dist/vault/read-vault.js')
  const { readRegularFileSync } = await import('../dist/vault/fs-atomic.js')
  const { parseNote } = await import('../dist/vault/parse-note.js')
  const { graphFromNotes } = await import('../dist/plan/load-plan.js')
  const cpu = () => {
    const { user, system } = process.cpuUsage()
    return (user + system) / 1000
  }
  const figures = {}
  const time = (name, work) => {
    const started = cpu()
    const value = work()
    ;(figures[name] ??= []).push(cpu() - started)
    return value
  }
  for (let round = 0; round < reps + 2; round++) {
    time('bare read (readFileSync loop)', () => readOnlySync(dir))
    const started = cpu()
    const files = await listNotes(dir, [])
    ;(figures['listing (listNotes)'] ??= []).push(cpu() - started)
    const texts = time('reading (readRegularFileSync)', () => files.map((file) => readRegularFileSync(join(dir, file), 8 << 20, true).text))
    const parsed = time('parsing (parseNote)', () => files.map((file, index) => parseNote(file, texts[index])))
    const graph = time('building the graph (graphFromNotes)', () => graphFromNotes(parsed))
    time('validate()', () => graph.validate())
    const whole = cpu()
    await loadAndValidate(dir)
    ;(figures['all of it (loadPlan + validate)'] ??= []).push(cpu() - whole)
  }
  const median = (values) => values.slice(2).sort((a, b) => a - b)[reps >> 1]
  console.log(
    `${notes} notes, CPU ms, median of ${reps}; load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')}`,
  )
  for (const [name, values] of Object.entries(figures)) console.log(`${name.padEnd(38)} ${median(values).toFixed(0).padStart(5)}`)
}
