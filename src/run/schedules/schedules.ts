import { join, resolve } from 'node:path'
import { createRequire } from 'node:module'
import { prepareRunVault } from '../drive/run-vault.js'

/*
 * Schedules (a cron that starts runs): what one is, and what a tick does,
 * shared by the queue's (pg-boss's own cron) and the one-process scheduler
 * (`runSchedules`, `vaultplan schedule run`).
 */

/** A plan run on a schedule: each tick copies `template` into a new run vault under `runs` and runs it for `query`. */
export interface ScheduleDefinition {
  /** The schedule's name: letters, digits, `-` and `_`; it names each tick's run vault (`<runs>/<name>-<time>/`). */
  name: string
  /** The plan vault each tick copies. */
  template: string
  /** When it ticks: a cron expression, 5 fields (minutes) or, in one process, 6 (seconds first). */
  cron: string
  /** What each run is for. */
  query: string
  /** The folder the run vaults are made in. */
  runs: string
  /** The time zone the cron is read in (`Europe/Paris`). @default UTC */
  tz?: string
}

const NAME = /^[A-Za-z0-9_-]{1,64}$/

/**
 * A schedule checked: every field a non-empty string, the name one a folder and a queue may carry, the cron one the
 * cron library reads.
 *
 * @throws `TypeError` naming the bad field
 */
export function checkSchedule(schedule: ScheduleDefinition, fields: 5 | 6 = 6): ScheduleDefinition {
  if (!schedule || typeof schedule !== 'object') throw new TypeError(`Expected a schedule object, got \`${String(schedule)}\``)
  for (const key of ['name', 'template', 'cron', 'query', 'runs'] as const) {
    const value = schedule[key]
    if (typeof value !== 'string' || value.trim() === '') throw new TypeError(`Expected schedule \`${key}\` to be a non-empty string, got \`${String(value)}\``)
  }
  if (!NAME.test(schedule.name)) throw new TypeError(`Expected schedule \`name\` to be letters, digits, \`-\` or \`_\` (at most 64), got \`${schedule.name}\``)
  if (schedule.tz !== undefined && typeof schedule.tz !== 'string')
    throw new TypeError(`Expected schedule \`tz\` to be a time zone name, got \`${String(schedule.tz)}\``)
  const count = schedule.cron.trim().split(/\s+/).length
  if (count !== 5 && !(fields === 6 && count === 6))
    throw new TypeError(`Expected schedule \`cron\` to have ${fields === 6 ? '5 or 6' : '5'} fields, got \`${schedule.cron}\``)
  nextTick(schedule, new Date())
  return schedule
}

/** The first tick of a schedule after `after`. @throws `TypeError` for a cron expression the library does not read */
export function nextTick(schedule: Pick<ScheduleDefinition, 'cron' | 'tz'>, after: Date): Date {
  try {
    const expression = cronParser().parseExpression(schedule.cron, { currentDate: after, tz: schedule.tz ?? 'UTC' })
    return expression.next().toDate()
  } catch (error) {
    throw new TypeError(`Expected schedule \`cron\` to be a cron expression, got \`${schedule.cron}\`: ${(error as Error).message}`)
  }
}

/** The latest tick of a schedule at or before `by`, and never before `since` (a tick known to be due). */
export function lastTick(schedule: Pick<ScheduleDefinition, 'cron' | 'tz'>, by: Date, since: Date): Date {
  // Just after `by`, so that a tick at `by` itself is the one found.
  const expression = cronParser().parseExpression(schedule.cron, { currentDate: new Date(by.getTime() + 1), tz: schedule.tz ?? 'UTC' })
  const latest = expression.prev().toDate()
  return latest.getTime() < since.getTime() ? since : latest
}

/** The run vault of the tick at `at`: `<runs>/<name>-<YYYYMMDD-HHMMSS>` (UTC), absolute. */
export function tickVault(schedule: Pick<ScheduleDefinition, 'name' | 'runs'>, at: Date): string {
  const stamp = at
    .toISOString()
    .replace(/\.\d+Z$/, '')
    .replace(/[-:]/g, '')
    .replace('T', '-')
  return join(resolve(schedule.runs), `${schedule.name}-${stamp}`)
}

/** Makes the run vault of a tick: the template copied (validated first, with `checks`), never over another run. */
export async function startTick(schedule: ScheduleDefinition, at: Date, options: { fsync: boolean; checks?: string[] | undefined }): Promise<string> {
  const { vault } = await prepareRunVault(schedule.template, { runVault: tickVault(schedule, at), fsync: options.fsync, checks: options.checks })
  return vault
}

type CronParser = { parseExpression(expression: string, options: { currentDate: Date; tz: string }): Record<'next' | 'prev', () => { toDate(): Date }> }

let parser: CronParser | undefined
/** cron-parser, a CommonJS module, loaded once when a schedule is first read. */
function cronParser(): CronParser {
  return (parser ??= createRequire(import.meta.url)('cron-parser') as CronParser)
}
