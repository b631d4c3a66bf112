/**
 * Throughput of the run queue (PostgreSQL + pg-boss): hops per second with
 * 1, 2 and 4 worker processes (concurrency 1 each) whose worker sleeps 50 ms
 * per hop, on runs of a 10-note linear plan. Target: 4 workers give at
 * least 3x the hops per second of 1.
 *
 *   node bench/queue.mjs [--url postgres://...] [--runs N] [--reps N]
 *
 * Writes `bench/results/queue.json` (with the commit, the machine and the
 * date), from which `npm run docs` renders docs/performance.md.
 *
 * Without a URL (`--url` or VAULTPLAN_TEST_PG) it says that it did not run.
 * `scripts/test-pg.sh npm run bench` gives it a throwaway PostgreSQL.
 * Needs the build (`npm run build`).
 */
import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { startRecord, writeResult } from './lib/results.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const dist = join(here, '..', 'dist')
const CHILD = join(here, '..', 'test', 'queue', 'worker-child.mjs')
const HOPS = 10
const SLEEP_MS = 50
const WORKERS = [1, 2, 4]
const TARGET = 3

const args = process.argv.slice(2)
const option = (name, fallback) => {
  const index = args.indexOf(name)
  return index === -1 ? fallback : args[index + 1]
}
const url = option('--url', process.env.VAULTPLAN_TEST_PG)
const runs = Number(option('--runs', 24))
const reps = Number(option('--reps', 2))

if (!url) {
  console.log(
    'queue throughput: did not run: no PostgreSQL given (set VAULTPLAN_TEST_PG or pass --url postgres://...; `scripts/test-pg.sh npm run bench` starts a throwaway one)',
  )
  process.exit(0)
}

const begun = startRecord()
const { RunQueue, enqueueRun, readQueueStatus } = await import(pathToFileURL(join(dist, 'queue', 'index.js')).href)
const base = await mkdtemp(join(tmpdir(), 'vaultplan-bench-queue-'))
const log = (line) => process.stderr.write(`${line}\n`)

/** A linear plan of `HOPS` notes. */
async function writeLinear(dir) {
  await mkdir(dir, { recursive: true })
  for (let i = 0; i < HOPS; i++) {
    const front = i === 0 ? '---\ntype: start\n---\n' : ''
    const next = i < HOPS - 1 ? `\n## Next\n- [[step-${i + 1}]]\n` : ''
    await writeFile(join(dir, `step-${i}.md`), `${front}# Step ${i}\n\nDo step ${i}.\n${next}`)
  }
}

function startWorker(queue) {
  return new Promise((ready, fail) => {
    const child = spawn(
      process.execPath,
      [CHILD, JSON.stringify({ dist, url, queue, concurrency: 1, sleepMs: [SLEEP_MS, SLEEP_MS], pollIntervalMs: 20, watchIntervalMs: 60_000 })],
      { stdio: ['ignore', 'pipe', 'inherit'] },
    )
    child.stdout.on('data', (chunk) => chunk.toString().includes('READY') && ready(child))
    child.on('exit', (code) => code !== 0 && fail(new Error(`a worker exited with ${code}`)))
  })
}

/** One measurement: `workers` processes work `runs` runs to their end; hops per second from the first job sent to the last run completed. */
async function measure(workers, round) {
  const name = `bench-${workers}-${round}-${Date.now().toString(36)}`
  const queue = await RunQueue.open({ connectionString: url }, { queue: name })
  const vaults = []
  for (let i = 0; i < runs; i++) {
    const vault = join(base, name, `run-${i}`)
    await writeLinear(vault)
    vaults.push(vault)
  }
  const children = await Promise.all(Array.from({ length: workers }, () => startWorker(name)))
  const started = performance.now()
  for (const vault of vaults) await enqueueRun(queue, { vault, query: 'bench' })
  for (;;) {
    const status = await readQueueStatus(queue)
    if (status.failed > 0) throw new Error(`a run failed: ${JSON.stringify(status.failures)}`)
    if (status.completed === runs) break
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
  const seconds = (performance.now() - started) / 1000
  await Promise.all(children.map((child) => new Promise((done) => (child.once('exit', done), child.kill('SIGTERM')))))
  await queue.close()
  return (runs * HOPS) / seconds
}

try {
  log(`queue throughput: ${runs} runs x ${HOPS} hops, worker sleeps ${SLEEP_MS} ms per hop, ${reps} rounds of ${WORKERS.join(', ')} workers in turns`)
  const figures = Object.fromEntries(WORKERS.map((workers) => [workers, []]))
  for (let round = 0; round < reps; round++) {
    for (const workers of WORKERS) {
      const rate = await measure(workers, round)
      figures[workers].push(rate)
      log(`  round ${round + 1}, ${workers} worker${workers === 1 ? '' : 's'}: ${rate.toFixed(1)} hops/s`)
    }
  }
  const median = (values) => {
    const sorted = [...values].sort((a, b) => a - b)
    const middle = Math.floor(sorted.length / 2)
    return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  }
  console.log('')
  console.log('| queue workers (concurrency 1, worker sleeps 50 ms) | hops/s (median) | min | max | ideal |')
  console.log('|:---|---:|---:|---:|---:|')
  for (const workers of WORKERS) {
    const values = figures[workers]
    console.log(
      `| ${workers} | ${median(values).toFixed(1)} | ${Math.min(...values).toFixed(1)} | ${Math.max(...values).toFixed(1)} | ${((workers * 1000) / SLEEP_MS).toFixed(0)} |`,
    )
  }
  const ratio = median(figures[4]) / median(figures[1])
  console.log('')
  console.log(`queue: 4 workers / 1 worker = ${ratio.toFixed(2)}x (target >= ${TARGET}x) ${ratio >= TARGET ? 'PASS' : 'MISS'}`)
  const round = (value) => +value.toFixed(1)
  const path = await writeResult('queue', begun, {
    config: { runs, hopsPerRun: HOPS, sleepMs: SLEEP_MS, rounds: reps, workers: WORKERS },
    figures: WORKERS.map((workers) => ({
      workers,
      median: round(median(figures[workers])),
      min: round(Math.min(...figures[workers])),
      max: round(Math.max(...figures[workers])),
      ideal: (workers * 1000) / SLEEP_MS,
      values: figures[workers].map(round),
    })),
    ratio: { name: '4 workers / 1 worker, hops per second', value: +ratio.toFixed(2), target: `>= ${TARGET}`, pass: ratio >= TARGET },
  })
  console.log(`Written to ${path}.`)
  console.log(
    `Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown'}, load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')} at end.`,
  )
} finally {
  await rm(base, { recursive: true, force: true })
}
