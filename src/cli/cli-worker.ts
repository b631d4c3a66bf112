import { parseArgs } from 'node:util'
import { EXIT, printable, printableJson, UsageError, type Io } from './cli-support.js'
import type { HopReport } from '../queue/index.js'
import { DEFAULT_MAX_STEPS } from '../run/core/run-options.js'
import { runnerChecks } from './cli-checks.js'

export const WORKER_HELP = `Usage: vaultplan worker --queue <postgres url> [--concurrency N] [options]

Takes hop jobs from the run queue (PostgreSQL with pg-boss) and works them
with the models configured in the environment (LLM_MODEL, LLM_BASE_URL,
LLM_API_KEY, or per role LLM_<ROLE>_MODEL ...), one line per hop. Start as
many workers as the runs need, on any machine that sees the vaults at the
same paths; queue runs with enqueueRun() from 'vaultplan/queue'. Runs until
Ctrl-C or SIGTERM, then lets the hops in flight finish.

Options:
  --queue URL          the PostgreSQL database of the queue (default: $VAULTPLAN_QUEUE)
  --concurrency N      hops worked at once, each of another run (default 1)
  --queue-name NAME    the pg-boss queue (default vaultplan-hops)
  --max-steps N        node works allowed in a whole run (default ${DEFAULT_MAX_STEPS})
  --check NAME='CMD'   define the check a note's \`check: NAME\` runs (may be repeated;
                       split into words, never run by a shell); wins over the
                       \`checks\` of vaultplan.config.json in the working folder
                       (a queued vault holding that folder fails: it defined them)
  --check-env NAME     pass the variable NAME to the checks (may be repeated; see
                       'vaultplan run --help')
  --no-fsync           do not flush writes to the disk (faster; a power cut may lose the last hop)
  -h, --help           show this help

Needs pg-boss 10 (npm install pg-boss@10). Exit codes: 0 stopped by a
signal, 1 the queue's database cannot be used, 2 bad usage or no model
configured, 70 internal error, 130 a second signal (the hops in flight are
retried by another worker).`

export const QUEUE_HELP = `Usage: vaultplan queue status --queue <postgres url> [--json]

Shows the runs of the queue: queued (a hop waits for a worker), in flight
(a worker holds its hop), waiting for a person, completed, stopped by a
budget, and failed (with why).

Options:
  --queue URL          the PostgreSQL database of the queue (default: $VAULTPLAN_QUEUE)
  --queue-name NAME    the pg-boss queue (default vaultplan-hops)
  --json               print the counts as JSON
  -h, --help           show this help

Exit codes: 0 shown, 1 the queue's database cannot be used, 2 bad usage,
70 internal error.`

/** `vaultplan worker`: works hop jobs from the queue until a signal stops it. */
export async function workerCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      queue: { type: 'string' },
      concurrency: { type: 'string' },
      'queue-name': { type: 'string' },
      'max-steps': { type: 'string' },
      'no-fsync': { type: 'boolean' },
      check: { type: 'string', multiple: true },
      'check-env': { type: 'string', multiple: true },
    },
    allowPositionals: true,
    strict: true,
  })
  if (positionals.length > 0) throw new UsageError(`'worker' takes no arguments, got '${positionals[0]}'`)
  // The vaults it will run are known job by job: the worker refuses each that holds the folder its checks came from.
  const { checks, from } = await runnerChecks({ check: values.check, checkEnv: values['check-env'] }, io.cwd)
  const url = queueUrl(values.queue, io)
  const concurrency = values.concurrency === undefined ? 1 : wholeNumber('--concurrency', values.concurrency)
  const maxSteps = values['max-steps'] === undefined ? undefined : wholeNumber('--max-steps', values['max-steps'])
  const { createLLM, ModelConfigError, resolveModelConfig } = await import('../models/llm-client.js')
  try {
    // The built-in worker needs the action model for every hop: say so now, not in every job.
    resolveModelConfig('action', io.env)
  } catch (error) {
    if (!(error instanceof ModelConfigError)) throw error
    io.stderr.write(`vaultplan: ${error.message}\n`)
    return EXIT.usage
  }
  const { startWorker } = await import('../queue/index.js')
  const options: Parameters<typeof startWorker>[1] = {
    concurrency,
    llm: createLLM({ env: io.env }),
    fsync: !values['no-fsync'],
    onHop: (hop) => io.stdout.write(`${hopLine(hop)}\n`),
    onError: (error) => io.stderr.write(`vaultplan worker: ${error instanceof Error ? error.message : String(error)}\n`),
  }
  if (maxSteps !== undefined) options.maxSteps = maxSteps
  if (Object.keys(checks).length > 0) options.checks = checks
  if (from !== undefined) options.checksFrom = from
  if (values['queue-name'] !== undefined) options.queue = values['queue-name']
  let worker
  try {
    worker = await startWorker(url, options)
  } catch (error) {
    return unreachable(url, error, io)
  }
  io.stderr.write(`vaultplan worker: queue ${worker.queue.name} on ${shownUrl(url)}, ${concurrency} at a time (Ctrl-C stops)\n`)
  await new Promise<void>((done) => {
    const stop = () => {
      process.off('SIGINT', stop)
      process.off('SIGTERM', stop)
      // A second signal does not wait: the hops in flight are retried by another worker.
      const now = () => process.exit(EXIT.interrupted)
      process.once('SIGINT', now)
      process.once('SIGTERM', now)
      io.stderr.write('vaultplan worker: stopping after the hops in flight\n')
      void worker.stop().then(done, done)
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
  return EXIT.ok
}

/** `vaultplan queue status`: the runs of the queue by where they stand. */
export async function queueCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { queue: { type: 'string' }, 'queue-name': { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  })
  if (positionals[0] !== 'status' || positionals.length > 1) {
    throw new UsageError(positionals.length === 0 ? "missing subcommand: 'queue status'" : `unknown subcommand '${positionals.join(' ')}'; try 'queue status'`)
  }
  const url = queueUrl(values.queue, io)
  const { readQueueStatus } = await import('../queue/index.js')
  let status
  try {
    status = await readQueueStatus(url, values['queue-name'] === undefined ? {} : { queue: values['queue-name'] })
  } catch (error) {
    return unreachable(url, error, io)
  }
  if (values.json) {
    io.stdout.write(`${printableJson(status, 2)}\n`)
    return EXIT.ok
  }
  io.stdout.write(
    `queue ${status.queue}: ${status.queued} queued, ${status.inFlight} in flight, ${status.waiting} ` +
      `waiting for a person, ${status.failed} failed, ${status.completed} completed, ${status.stopped} ` +
      `stopped\n`,
  )
  for (const failure of status.failures) io.stdout.write(`  failed: ${printable(`${failure.vault}: ${failure.error.split('\n')[0]}`)}\n`)
  return EXIT.ok
}

/** One line per hop: when, which vault, the visit worked, and where the run went. */
export function hopLine(hop: HopReport): string {
  const worked = hop.worked ? `step ${String(hop.worked.step).padStart(3)}  ${hop.worked.node} (visit ${hop.worked.visit})` : 'no work'
  const firstLine = (text = '') => text.split('\n')[0]
  const outcome = {
    queued: `next ${hop.node ?? ''}`,
    busy: `other jobs go on at ${hop.node ?? ''}`,
    waiting: `waiting for a person at ${hop.node ?? ''}`,
    completed: `completed at ${hop.node ?? ''}`,
    stopped: `stopped: ${firstLine(hop.error)}`,
    failed: `failed: ${firstLine(hop.error)}`,
    retrying: `failed, retried later: ${firstLine(hop.error)}`,
    superseded: 'superseded: another worker took this hop over after it expired',
  }[hop.outcome]
  return printable(`${new Date().toISOString()}  ${hop.vault}  ${worked}  -> ${outcome}  ${(hop.ms / 1000).toFixed(2)}s`)
}

/** The database could not be reached or set up (refused, wrong password, pg-boss missing): one line, exit 1. */
export function unreachable(url: string, error: unknown, io: Io): number {
  const message = error instanceof Error ? error.message || (error as NodeJS.ErrnoException).code || error.name : String(error)
  io.stderr.write(`vaultplan: cannot use the queue at ${shownUrl(url)}: ${message}\n`)
  return EXIT.invalid
}

export function queueUrl(given: string | undefined, io: Io): string {
  const url = given ?? io.env.VAULTPLAN_QUEUE
  if (url === undefined || url === '') throw new UsageError('missing --queue <postgres url> (or set VAULTPLAN_QUEUE)')
  if (!/^postgres(ql)?:\/\//.test(url)) throw new UsageError(`--queue takes a postgres:// URL, got '${shownUrl(url)}'`)
  return url
}

function wholeNumber(flag: string, value: string): number {
  const number = Number(value)
  if (!Number.isInteger(number) || number < 1) throw new UsageError(`${flag} takes an integer from 1 up, got '${value}'`)
  return number
}

/** A URL without its password, for logs. */
function shownUrl(url: string): string {
  return url.replace(/\/\/([^:/@]*):[^@/]*@/, '//$1:***@')
}
