// One worker process of the queue's load test and benchmark:
//   node worker-child.mjs '{"queue": "...", "url": "...", "concurrency": 4, "sleepMs": [0, 20], "log": "file"}'
// Works hops with a scripted worker that sleeps `sleepMs` (a range) and
// appends a line per work start and end to `log` (one JSON object a line),
// so the parent can tell which visit was worked by which process. Prints
// READY once connected; SIGTERM stops it after the hops in flight.
import { appendFileSync } from 'node:fs'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { outputOf, predicates } from './plan.mjs'

const config = JSON.parse(process.argv[2])
const dist = config.dist ?? join(dirname(fileURLToPath(import.meta.url)), '../../dist')
const { startWorker } = await import(pathToFileURL(join(dist, 'queue', 'index.js')).href)
const [least, most] = config.sleepMs ?? [0, 0]
const note = (entry) => config.log && appendFileSync(config.log, `${JSON.stringify({ pid: process.pid, at: Date.now(), ...entry })}\n`)

const work = async (step) => {
  note({ t: 'start', key: step.key, node: step.node.id, visit: step.visit })
  const ms = least + Math.random() * (most - least)
  if (ms > 0) await new Promise((resolve) => setTimeout(resolve, ms))
  note({ t: 'end', key: step.key, node: step.node.id, visit: step.visit })
  return outputOf(step)
}

const worker = await startWorker(
  { connectionString: config.url, maintenanceIntervalSeconds: 1 },
  {
    queue: config.queue,
    concurrency: config.concurrency ?? 1,
    work,
    predicates,
    llm: async () => {
      throw new Error('the plan is decided by predicates and a person; no model is called')
    },
    fsync: config.fsync ?? false,
    pollIntervalMs: config.pollIntervalMs ?? 50,
    watchIntervalMs: config.watchIntervalMs ?? 500,
    onHop: (hop) => note({ t: 'hop', vault: hop.vault, outcome: hop.outcome, worked: hop.worked, error: hop.error }),
    onError: (error) => process.stderr.write(`worker ${process.pid}: ${error?.stack ?? error}\n`),
  },
)
process.stdout.write('READY\n')
process.once('SIGTERM', () => {
  worker.stop({ timeoutMs: 5000 }).then(() => process.exit(0))
})
