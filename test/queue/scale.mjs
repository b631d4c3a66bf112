#!/usr/bin/env node
// Load test of the run queue: many runs of a ten-hop plan (a review loop and
// a person's decision) through PostgreSQL and pg-boss, worked by several
// worker processes while one of them is killed with SIGKILL every few
// seconds and started again.
//
//   npm run test:scale -- [--runs 200] [--workers 4] [--concurrency 4] [--kill-every 3000] [--keep]
//
// (`npm run test:scale` starts a throwaway PostgreSQL unless VAULTPLAN_TEST_PG
// is set.) The person is this script: when a run waits at `approve`, it ticks
// the box with `decide`; for half the runs it also calls `resumeRun`, the
// other half are queued again by the workers' watcher noticing the tick.
//
// Checks, after every run completed: the queue says every run completed and
// none failed or holds a job; each run's hops equal those of the same plan
// run by runPlan in one process; every file of each vault (notes, outputs,
// final answer) equals that run's, byte for byte (lost bytes count what
// differs); no temp file or lock is left; and no visit was worked twice,
// except a visit whose earlier attempt was in a process that was killed
// (then every attempt had the same key).
import { spawn } from 'node:child_process'
import { existsSync, readdirSync, readFileSync, writeFileSync } from 'node:fs'
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { DECISION, EXPECTED_PATH, QUERY, outputOf, predicates, writePlan } from './plan.mjs'

const HERE = dirname(fileURLToPath(import.meta.url))
const DIST = resolve(HERE, '../../dist')
const CHILD = join(HERE, 'worker-child.mjs')
const TIMEOUT_MS = 8 * 60_000

/**
 * Runs the load test and returns its report; `log` gets progress and the summary line.
 *
 * @param {{ url: string, runs?: number, workers?: number, concurrency?: number, killEveryMs?: number, keep?: boolean, log?: (line: string) => void }} options
 */
export async function runScaleTest(options) {
  const { url, runs = 200, workers: workerCount = 4, concurrency = 4, killEveryMs = 3000, keep = false } = options
  const log = options.log ?? ((line) => console.log(line))
  const started = Date.now()
  const lib = await import(pathToFileURL(join(DIST, 'index.js')).href)
  const queueLib = await import(pathToFileURL(join(DIST, 'queue', 'index.js')).href)
  const root = await mkdtemp(join(tmpdir(), 'vaultplan-scale-'))
  const name = `scale-${Date.now().toString(36)}`
  const problems = []
  const problem = (message) => problems.length < 50 && problems.push(message)

  const reference = await referenceRun(lib, root)
  if (reference.path.join(' ') !== EXPECTED_PATH.join(' '))
    throw new Error(`the plan run in one process took ${reference.path.join(' ')}, expected ${EXPECTED_PATH.join(' ')}: fix the plan or the library first`)

  const vaults = []
  for (let index = 0; index < runs; index++) {
    const vault = join(root, 'runs', `run-${String(index).padStart(4, '0')}`)
    await writePlan(vault)
    vaults.push(vault)
  }
  const queue = await queueLib.RunQueue.open({ connectionString: url }, { queue: name, hopTimeoutSeconds: 5, retryLimit: 50, retryDelaySeconds: 0 })
  log(`scale: ${runs} runs of a ${EXPECTED_PATH.length}-hop plan on queue ${name}, ${workerCount} workers x ${concurrency}, a SIGKILL every ~${killEveryMs} ms`)
  for (const vault of vaults) await queueLib.enqueueRun(queue, { vault, query: QUERY })

  const logs = join(root, 'logs')
  await mkdir(logs)
  const killed = new Map()
  let spawned = 0
  const startChild = () =>
    new Promise((ready, fail) => {
      const child = spawn(
        process.execPath,
        [CHILD, JSON.stringify({ dist: DIST, url, queue: name, concurrency, sleepMs: [5, 40], log: join(logs, `worker-${spawned++}.log`) })],
        { stdio: ['ignore', 'pipe', 'pipe'] },
      )
      child.stderr.on('data', (chunk) => process.stderr.write(chunk))
      child.stdout.on('data', (chunk) => chunk.toString().includes('READY') && ready(child))
      child.on('exit', (code, signal) => signal !== 'SIGKILL' && code !== 0 && fail(new Error(`worker ${child.pid} exited with ${code ?? signal}`)))
    })
  const children = await Promise.all(Array.from({ length: workerCount }, startChild))

  let finished = false
  const killing = (async () => {
    while (!finished) {
      await sleep(killEveryMs * (0.5 + Math.random()))
      if (finished) break
      const index = Math.floor(Math.random() * children.length)
      const child = children[index]
      const gone = new Promise((done) => child.once('exit', done))
      killed.set(child.pid, Date.now())
      child.kill('SIGKILL')
      await gone
      children[index] = await startChild()
    }
  })()
  const decided = new Set()
  let decideErrors = 0
  const deciding = (async () => {
    while (!finished) {
      const { rows } = await queue.query(`SELECT vault FROM ${queue.runs} WHERE queue = $1 AND state = 'waiting'`, [name])
      for (const { vault } of rows) {
        if (decided.has(vault)) continue
        try {
          await lib.decide(vault, DECISION.node, { edge: DECISION.edge })
          decided.add(vault)
          if (vaults.indexOf(vault) % 2 === 1) await queueLib.resumeRun(queue, vault)
        } catch (error) {
          if (++decideErrors <= 3) log(`  decide in ${vault} failed: ${error.message}`)
        }
      }
      await sleep(200)
    }
  })()

  let status
  let lastShown = 0
  for (;;) {
    status = await queueLib.readQueueStatus(queue)
    if (status.completed + status.failed + status.stopped >= runs) break
    if (Date.now() - started > TIMEOUT_MS) {
      problem(`timed out after ${TIMEOUT_MS / 1000} s: ${JSON.stringify(status)}`)
      break
    }
    if (Date.now() - lastShown > 10_000) {
      lastShown = Date.now()
      log(
        `  ${((Date.now() - started) / 1000).toFixed(0)} s: ${status.completed} completed, ${status.queued} queued, ${status.inFlight} in flight, ${status.waiting} waiting, ${status.failed} failed, ${killed.size} kills`,
      )
    }
    await sleep(250)
  }
  finished = true
  await Promise.all([killing, deciding])
  await Promise.all(children.map((child) => new Promise((done) => (child.exitCode !== null ? done() : (child.once('exit', done), child.kill('SIGTERM'))))))
  const wall = (Date.now() - started) / 1000
  writeFileSync(join(logs, 'kills.json'), `${JSON.stringify(Object.fromEntries(killed))}\n`)

  // The queue's view.
  if (status.completed !== runs || status.failed || status.queued || status.inFlight || status.waiting) problem(`the queue ends with ${JSON.stringify(status)}`)
  const live = await queue.query(`SELECT count(*)::int AS n FROM ${queue.schema}.job WHERE name = $1 AND state <> 'completed'`, [name])
  if (live.rows[0].n !== 0) problem(`${live.rows[0].n} jobs are not completed`)
  const jobs = (await queue.query(`SELECT count(*)::int AS n FROM ${queue.schema}.job WHERE name = $1`, [name])).rows[0].n
  await queue.close()

  // Each vault against the run made in one process.
  let pathsDiffering = 0
  let lostBytes = 0
  let leftOver = 0
  for (const vault of vaults) {
    const tree = readTree(vault)
    const path = pathOf(tree['00_plan-trace/trace.md'] ?? '')
    anonymise(tree)
    if (path.join(' ') !== reference.path.join(' ')) {
      pathsDiffering += 1
      problem(`${vault} took ${path.join(' ')}`)
    }
    for (const [file, text] of Object.entries(reference.tree)) {
      if (tree[file] === text) continue
      lostBytes += Buffer.byteLength(text)
      problem(`${vault}: ${file} ${tree[file] === undefined ? 'is missing' : 'differs from the run in one process'}`)
    }
    for (const file of Object.keys(tree)) {
      if (file.split('/').some((part) => part.startsWith('.vaultplan-tmp-')) || /(^|\/)\.lock($|\/)/.test(file)) {
        leftOver += 1
        problem(`${vault}: ${file} is left over`)
      } else if (!(file in reference.tree) && file !== '00_plan-trace/trace.md') problem(`${vault}: ${file} is there, but not in the run in one process`)
    }
  }

  // The visits worked, from every worker's log.
  const starts = new Map()
  for (const file of readdirSync(logs).filter((name) => name.endsWith('.log'))) {
    for (const line of readFileSync(join(logs, file), 'utf8').split('\n')) {
      if (!line) continue
      let entry
      try {
        entry = JSON.parse(line)
      } catch {
        continue // the last line of a killed worker may be torn
      }
      if (entry.t === 'start') starts.set(entry.key, [...(starts.get(entry.key) ?? []), entry])
      if (entry.t === 'hop' && entry.outcome === 'superseded') problem(`a hop of ${entry.vault} outlived its expiry and was worked twice by live workers`)
    }
  }
  let retriedAfterKill = 0
  let workedTwice = 0
  for (const [key, attempts] of starts) {
    if (new Set(attempts.map((attempt) => `${attempt.node}#${attempt.visit}`)).size > 1) problem(`key ${key} was given to different visits`)
    attempts.sort((a, b) => a.at - b.at)
    for (const earlier of attempts.slice(0, -1)) {
      // An earlier attempt is allowed only when its process was killed after it began.
      if ((killed.get(earlier.pid) ?? 0) >= earlier.at) retriedAfterKill += 1
      else {
        workedTwice += 1
        problem(`visit ${earlier.node}#${earlier.visit} (key ${key}) was worked again although process ${earlier.pid} was not killed`)
      }
    }
  }
  if (starts.size !== runs * EXPECTED_PATH.length) problem(`${starts.size} visits were worked, expected ${runs * EXPECTED_PATH.length}`)
  if (decideErrors > 0) problem(`${decideErrors} decisions failed`)

  for (const line of problems.slice(0, 10)) log(`  PROBLEM ${line}`)
  const summary = `scale: ${runs} runs x ${EXPECTED_PATH.length} hops, ${workerCount} workers, ${killed.size} kills, ${jobs} jobs, ${retriedAfterKill} visits worked again after a kill (same key), ${workedTwice} worked twice, ${pathsDiffering} paths differing, ${lostBytes} lost bytes, ${leftOver} temp files or locks left, ${status.failed} runs failed, wall ${wall.toFixed(1)} s`
  log(summary)
  if (problems.length === 0 && !keep) await rm(root, { recursive: true, force: true })
  else log(`files kept in ${root}`)
  return { ok: problems.length === 0, summary, problems, kills: killed.size, retriedAfterKill, workedTwice, pathsDiffering, lostBytes, wall }
}

/** The plan run by runPlan in this process, the person deciding in between: the path and the files every run must end with. */
async function referenceRun(lib, root) {
  const vault = join(root, 'reference')
  await writePlan(vault)
  const options = { query: QUERY, work: async (step) => outputOf(step), predicates, fsync: false }
  const first = await lib.runPlan(vault, options)
  if (first.status !== 'waiting') throw new Error(`the plan run in one process did not wait for the person: ${first.status}`)
  await lib.decide(vault, DECISION.node, { edge: DECISION.edge })
  const second = await lib.runPlan(vault, options)
  if (second.status !== 'completed') throw new Error(`the plan run in one process did not complete: ${second.status} ${second.reason ?? ''}`)
  const tree = readTree(vault)
  const path = pathOf(tree['00_plan-trace/trace.md'])
  anonymise(tree)
  delete tree['00_plan-trace/trace.md']
  return { path, tree }
}

/** `node#visit` of each hop in a trace, from its headings (`## Step 3 · [[draft]] · visit 1`). */
function pathOf(trace) {
  return [...trace.matchAll(/^## Step \d+ · \[\[([^\]]+)\]\] · visit (\d+)$/gm)].map(([, node, visit]) => `${node}#${visit}`)
}

/** The run id (each run has its own) replaced by `<run>` in every file of a tree read by `readTree`. */
function anonymise(tree) {
  const run = /^run: ["']?([^"'\n]+?)["']?$/m.exec(tree['00_plan-trace/trace.md'] ?? '')?.[1]
  if (!run) return
  for (const [file, text] of Object.entries(tree)) tree[file] = text.split(run).join('<run>')
}

/** Every file under `dir`, relative path -> text. */
function readTree(dir, prefix = '', files = {}) {
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name
    if (entry.isDirectory()) readTree(dir, path, files)
    else files[path] = readFileSync(join(dir, path), 'utf8')
  }
  return files
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))

function parseArgs(argv) {
  const options = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const number = () => {
      const value = Number(argv[++i])
      if (!Number.isInteger(value) || value < 1) throw new Error(`Expected \`${arg}\` to be followed by a whole number from 1 up, got \`${argv[i]}\``)
      return value
    }
    if (arg === '--runs') options.runs = number()
    else if (arg === '--workers') options.workers = number()
    else if (arg === '--concurrency') options.concurrency = number()
    else if (arg === '--kill-every') options.killEveryMs = number()
    else if (arg === '--keep') options.keep = true
    else throw new Error(`Unknown option \`${arg}\`; use --runs N, --workers N, --concurrency N, --kill-every MS, --keep`)
  }
  return options
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const url = process.env.VAULTPLAN_TEST_PG
    if (!url) throw new Error('VAULTPLAN_TEST_PG is not set: run `npm run test:scale`, which starts a throwaway PostgreSQL')
    if (!existsSync(join(DIST, 'queue', 'index.js'))) throw new Error('dist/queue is missing: run `npm run build` first')
    const report = await runScaleTest({ url, ...parseArgs(process.argv.slice(2)) })
    process.exitCode = report.ok ? 0 : 1
  } catch (error) {
    console.error(`scale: ${error.stack ?? error}`)
    process.exitCode = 2
  }
}
