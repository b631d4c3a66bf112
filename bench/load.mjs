/**
 * The load row of the bench on its own: load + validate of a generated vault
 * against the synchronous bare read (`readFileSync` in a loop), measured in
 * turns in one process (medians of wall-clock and CPU time), and the peak
 * RSS of a load in a fresh process. Quicker than `node bench/run.mjs`.
 *
 * Usage (after `npm run build`): node bench/load.mjs [notes] [reps]   (default 10000 notes, 9 reps)
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { execFile } from 'node:child_process'
import { promisify } from 'node:util'
import { loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { loadAndValidate, readOnlySync } from './lib/load.mjs'
import { measureInTurns } from './lib/stats.mjs'
import { writeBigVault } from './lib/vaults.mjs'

const [notes = 10_000, reps = 9] = process.argv.slice(2).map(Number)
const here = dirname(fileURLToPath(import.meta.url))
const base = await mkdtemp(join(tmpdir(), 'vaultplan-load-'))
const loadStart = loadavg().map((value) => +value.toFixed(2))
try {
  await writeBigVault(base, notes)
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
} finally {
  await rm(base, { recursive: true, force: true })
}
