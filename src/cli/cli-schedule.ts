import { writeFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { EXIT, printable, UsageError, type Io } from './cli-support.js'
import { CONFIG_FILE, readConfig as readRunnerConfig, runnerChecks, type CheckFlags } from './cli-checks.js'
import { queueUrl, unreachable } from './cli-worker.js'
import type { ScheduleDefinition } from '../run/schedules/schedules.js'

export const SCHEDULE_HELP = `Usage: vaultplan schedule add NAME --template DIR --cron CRON --query Q --runs DIR [--tz TZ] [--queue URL]
       vaultplan schedule list [--queue URL] [--json]
       vaultplan schedule remove NAME [--queue URL]
       vaultplan schedule run [--check NAME='CMD'] [--check-env NAME] [--no-fsync]

Runs a plan on a schedule: at each tick of CRON the template DIR is copied
into a new run vault, <runs>/<NAME>-<time>/, and run for the query.

With --queue URL the schedule is kept in PostgreSQL and ticks on pg-boss's
own cron (5 fields, by the minute): any 'vaultplan worker' of that queue
turns each tick into a queued run. Without it the schedule is kept in
vaultplan.config.json in the working folder, and 'schedule run' runs those
schedules in this one process (6 fields allowed, seconds first) with the
models of the environment (see 'vaultplan run --help'), until Ctrl-C.

Options:
  --template DIR     the plan vault each tick copies
  --cron CRON        when it ticks, such as '0 9 * * 1-5' (9:00 on weekdays)
  --query Q          what each run is for
  --runs DIR         the folder the run vaults are made in
  --tz TZ            the time zone CRON is read in (default UTC)
  --queue URL        keep the schedule in the queue's PostgreSQL database
  --json             list the schedules as JSON
  --check NAME='CMD' define a check for the runs (see 'vaultplan run --help'); the
                     config's \`checks\` are refused when the working folder is
                     in a schedule's template or runs folder
  --check-env NAME   pass the variable NAME to the checks (see 'vaultplan run --help')
  --no-fsync         do not flush writes to the disk
  -h, --help         show this help

Exit codes: 0 done (or 'schedule run' stopped by a signal), 1 the queue's
database cannot be used, 2 bad usage, 70 internal error.`

/** `vaultplan schedule add|list|remove|run`. */
export async function scheduleCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      template: { type: 'string' },
      cron: { type: 'string' },
      query: { type: 'string' },
      runs: { type: 'string' },
      tz: { type: 'string' },
      queue: { type: 'string' },
      json: { type: 'boolean' },
      check: { type: 'string', multiple: true },
      'check-env': { type: 'string', multiple: true },
      'no-fsync': { type: 'boolean' },
    },
    allowPositionals: true,
    strict: true,
  })
  const [action, name, ...rest] = positionals
  if (rest.length > 0) throw new UsageError(`unexpected argument '${rest[0]}'`)
  const url = values.queue === undefined ? undefined : queueUrl(values.queue, io)
  const { checkSchedule } = await import('../run/schedules/schedules.js')
  switch (action) {
    case 'add': {
      if (name === undefined) throw new UsageError("'schedule add' takes the schedule's NAME")
      for (const flag of ['template', 'cron', 'query', 'runs'] as const) if (values[flag] === undefined) throw new UsageError(`'schedule add' needs --${flag}`)
      const schedule: ScheduleDefinition = {
        name,
        template: resolve(io.cwd, values.template!),
        cron: values.cron!,
        query: values.query!,
        runs: resolve(io.cwd, values.runs!),
      }
      if (values.tz !== undefined) schedule.tz = values.tz
      try {
        checkSchedule(schedule, url === undefined ? 6 : 5)
      } catch (error) {
        throw new UsageError((error as Error).message)
      }
      if (url !== undefined) return onQueue(url, io, async ({ scheduleRun }) => scheduleRun(url, schedule))
      const config = await readConfig(io.cwd)
      config.schedules = { ...config.schedules, [name]: withoutName(schedule) }
      await writeFile(join(io.cwd, CONFIG_FILE), `${JSON.stringify(config, null, 2)}\n`)
      io.stdout.write(`added schedule ${name} to ${CONFIG_FILE}: '${schedule.cron}'; 'vaultplan schedule run' runs it\n`)
      return EXIT.ok
    }
    case 'list': {
      const schedules =
        url !== undefined ? await onQueueValue(url, io, ({ listScheduledRuns }) => listScheduledRuns(url)) : configSchedules(await readConfig(io.cwd))
      if (typeof schedules === 'number') return schedules
      if (values.json) io.stdout.write(`${JSON.stringify(schedules)}\n`)
      else if (schedules.length === 0) io.stdout.write('No schedules.\n')
      else
        for (const each of schedules)
          io.stdout.write(
            printable(`${each.name}  '${each.cron}'${each.tz ? ` (${each.tz})` : ''}  ${each.template} -> ${each.runs}  query: ${each.query}`) + '\n',
          )
      return EXIT.ok
    }
    case 'remove': {
      if (name === undefined) throw new UsageError("'schedule remove' takes the schedule's NAME")
      let existed: boolean | number
      if (url !== undefined) existed = await onQueueValue(url, io, ({ unscheduleRun }) => unscheduleRun(url, name))
      else {
        const config = await readConfig(io.cwd)
        existed = config.schedules?.[name] !== undefined
        if (existed) {
          delete config.schedules![name]
          await writeFile(join(io.cwd, CONFIG_FILE), `${JSON.stringify(config, null, 2)}\n`)
        }
      }
      if (typeof existed === 'number') return existed
      if (!existed) throw new UsageError(`no schedule named '${name}'`)
      io.stdout.write(`removed schedule ${name}\n`)
      return EXIT.ok
    }
    case 'run':
      if (url !== undefined) throw new UsageError("'schedule run' runs the schedules of vaultplan.config.json; a queue's are run by 'vaultplan worker'")
      return runConfigSchedules(io, { check: values.check, checkEnv: values['check-env'] }, !values['no-fsync'])
    default:
      throw new UsageError(`'schedule' takes add, list, remove or run, got '${action ?? ''}'`)
  }
}

type QueueModule = typeof import('../queue/index.js')

async function onQueueValue<T>(url: string, io: Io, fn: (queue: QueueModule) => Promise<T>): Promise<T | number> {
  const module = await import('../queue/index.js')
  try {
    return await fn(module)
  } catch (error) {
    if (error instanceof TypeError) throw new UsageError(error.message)
    return unreachable(url, error, io)
  }
}

async function onQueue(url: string, io: Io, fn: (queue: QueueModule) => Promise<void>): Promise<number> {
  const done = await onQueueValue(url, io, fn)
  if (typeof done === 'number') return done
  io.stdout.write('scheduled in the queue; its workers start the runs\n')
  return EXIT.ok
}

/** `schedule run`: the config's schedules, in this process, with the environment's models, until a signal. */
async function runConfigSchedules(io: Io, flags: CheckFlags, fsync: boolean): Promise<number> {
  const schedules = configSchedules(await readConfig(io.cwd))
  if (schedules.length === 0) throw new UsageError(`no schedules in ${CONFIG_FILE}: add one with 'vaultplan schedule add'`)
  // The runs are made in each schedule's runs folder from its template: a config inside one gives no checks.
  const folders = schedules.flatMap((schedule) => [schedule.template, schedule.runs])
  const { checks } = await runnerChecks(flags, io.cwd, { folders, as: 'vault' })
  const [{ createLLM, ModelConfigError, resolveModelConfig }, { runSchedules }] = await Promise.all([
    import('../models/llm-client.js'),
    import('../run/schedules/run-schedules.js'),
  ])
  try {
    resolveModelConfig('action', io.env)
  } catch (error) {
    if (!(error instanceof ModelConfigError)) throw error
    io.stderr.write(`vaultplan: ${error.message}\n`)
    return EXIT.usage
  }
  const controller = new AbortController()
  const running = runSchedules(schedules, {
    llm: createLLM({ env: io.env }),
    fsync,
    ...(Object.keys(checks).length > 0 && { checks }),
    signal: controller.signal,
    onRun: ({ schedule, vault, result }) => io.stdout.write(printable(`${schedule}: ${vault} ${result.status} at ${result.lastNode}`) + '\n'),
    onError: (error, { schedule }) => io.stderr.write(printable(`vaultplan schedule ${schedule}: ${(error as Error)?.message ?? String(error)}`) + '\n'),
  })
  io.stderr.write(`vaultplan schedule run: ${schedules.map((each) => `${each.name} '${each.cron}'`).join(', ')} (Ctrl-C stops)\n`)
  await new Promise<void>((done) => {
    process.once('SIGINT', () => done())
    process.once('SIGTERM', () => done())
  })
  controller.abort()
  await running.stop()
  return EXIT.ok
}

interface Config {
  schedules?: Record<string, Omit<ScheduleDefinition, 'name'>>
  [key: string]: unknown
}

async function readConfig(cwd: string): Promise<Config> {
  return ((await readRunnerConfig(cwd)) ?? {}) as Config
}

function configSchedules(config: Config): ScheduleDefinition[] {
  return Object.entries(config.schedules ?? {}).map(([name, schedule]) => ({ name, ...schedule }))
}

function withoutName(schedule: ScheduleDefinition): Omit<ScheduleDefinition, 'name'> {
  const { name: _name, ...rest } = schedule
  return rest
}
