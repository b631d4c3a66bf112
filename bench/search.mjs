/**
 * `node bench/search.mjs` (after `npm run build`): `searchRuns` over 10,000
 * past outputs. 25 vaults each ran a 200-note path plan twice (the first run
 * archived by `fresh`), every output about 1 KB of generated prose. Prints
 * the time of the first search (the index built from the notes and saved),
 * the median latency of 100 searches after that (each call checks the
 * notes for changes, queries, and reads the snippets of its hits), the
 * first search of a new process (the saved index reopened) and the search
 * after one more run. `--json` prints the figures as JSON (bench/run.mjs
 * uses it); `--quick` runs 1,000 outputs.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { runPlan, searchRuns } from '../dist/index.js'
import { outputText, queries, vocabulary } from './lib/outputs.mjs'
import { cpuNow, now, summarize } from './lib/stats.mjs'
import { random, writePathVault } from './lib/vaults.mjs'

const TARGET_MS = 20
const args = process.argv.slice(2)

if (args[0] === '--child') {
  // A new process: the first search reopens the saved index.
  const started = now()
  const hits = await searchRuns(args[1], args[2])
  process.stdout.write(JSON.stringify({ ms: now() - started, hits: hits.length }))
  process.exit(0)
}

const quick = args.includes('--quick')
const VAULTS = quick ? 5 : 25
const STEPS = quick ? 100 : 200
const log = (message) => process.stderr.write(`${message}\n`)

const words = vocabulary()
const rand = random(5)
const work = async () => outputText(rand, words, 600 + Math.floor(rand() * 800))

async function runVault(dir, fresh = false) {
  if (!fresh) await writePathVault(dir, STEPS)
  await runPlan(dir, { query: 'bench search', fsync: false, fresh, maxSteps: STEPS + 1, work })
}

const root = await mkdtemp(join(tmpdir(), 'vaultplan-search-'))
try {
  log(`search: writing ${VAULTS} vaults x 2 runs x ${STEPS} outputs`)
  for (let vault = 0; vault < VAULTS; vault++) {
    const dir = join(root, `team-${vault % 5}`, `vault-${vault}`)
    await runVault(dir)
    await runVault(dir, true)
  }
  const asked = queries(7, words, 100)

  let started = now()
  const first = await searchRuns(root, asked[0])
  const buildMs = now() - started

  const latencies = []
  const cpu = []
  let hits = first.length
  for (const query of asked) {
    started = now()
    const cpuStarted = cpuNow()
    hits += (await searchRuns(root, query)).length
    latencies.push(now() - started)
    cpu.push(cpuNow() - cpuStarted)
  }
  const query = summarize(latencies)

  const reopen = []
  for (let rep = 0; rep < 3; rep++) {
    const { stdout } = await promisify(execFile)(process.execPath, [fileURLToPath(import.meta.url), '--child', root, asked[rep + 1]])
    reopen.push(JSON.parse(stdout).ms)
  }

  await runVault(join(root, 'team-0', 'vault-new'))
  started = now()
  await searchRuns(root, asked[1])
  const updateMs = now() - started

  const figures = {
    outputs: VAULTS * 2 * STEPS,
    buildMs,
    queryMedianMs: query.median,
    queryMinMs: query.min,
    queryMaxMs: query.max,
    queryCpuMedianMs: summarize(cpu).median,
    reopenMs: summarize(reopen).median,
    updateMs,
    hits,
    target: `< ${TARGET_MS} ms per query`,
    pass: query.median < TARGET_MS,
  }
  if (args.includes('--json')) process.stdout.write(`${JSON.stringify(figures)}\n`)
  else {
    console.log(`searchRuns over ${figures.outputs} past outputs (${VAULTS} vaults, 2 runs each, one archived)`)
    console.log(`  first search, index built from the notes and saved: ${buildMs.toFixed(0)} ms`)
    console.log(
      `  median of 100 searches after that: ${query.median.toFixed(2)} ms (min ${query.min.toFixed(2)}, max ${query.max.toFixed(2)}; CPU time ${figures.queryCpuMedianMs.toFixed(2)} ms), ${hits} hits in all; target ${figures.target}: ${figures.pass ? 'PASS' : 'MISS'}`,
    )
    console.log(`  first search of a new process (index reopened): ${figures.reopenMs.toFixed(0)} ms (median of 3)`)
    console.log(`  first search after one more run of ${STEPS} outputs: ${updateMs.toFixed(0)} ms`)
  }
} finally {
  await rm(root, { recursive: true, force: true })
}
