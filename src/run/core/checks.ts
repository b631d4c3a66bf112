import { checkTimeoutMs } from '../../core/durations.js'

/*
 * A note's checks (`check: test`): commands the runner defines, run after
 * the work as argument vectors (never through a shell the runner did not
 * ask for), each in a process group of its own so a timeout or an abort
 * ends its children too. Nothing of the vault reaches a command line: the
 * note only names a check.
 */

/** A check the runner defines: the command behind a name a note's `check:` gives. */
export interface CheckDefinition {
  /** The program and its arguments, run without a shell (a command that wants one names it: `['sh', '-c', '...']`). */
  command: string[]
  /**
   * The working folder of the command.
   *
   * @default the process's working folder
   */
  cwd?: string
  /**
   * How long the command may run before its process group is killed (the check fails).
   *
   * @default 600000 (10 minutes)
   */
  timeoutMs?: number
  /**
   * Variables set for the command. A check does not get the runner's whole
   * environment: only a minimal set (`PATH`, `HOME`, `USER`, `SHELL`,
   * `LANG`, `LC_*`, `TERM`, `TZ`, `TMPDIR`, `CI` ... and what Windows needs),
   * the variables `inheritEnv` names, and these.
   */
  env?: Record<string, string>
  /**
   * Names of variables of the runner's environment the command gets too,
   * such as `['NPM_TOKEN']` (`--check-env NAME` on the CLI). The value of
   * one whose name looks secret (`KEY`, `TOKEN`, `SECRET`, `PASSWORD` ...)
   * is taken out of the output the run keeps, as the model's key is always.
   */
  inheritEnv?: string[]
}

/** What one check did, as the trace records it. */
export interface CheckResult {
  name: string
  /** The command's exit code; `null` when it did not exit by itself (killed at its timeout, or it could not start). */
  exit: number | null
  /** Milliseconds the check ran. */
  ms: number
  /** Set when the check was killed at its timeout. */
  timedOut?: boolean
  /** The last 4 KB of its output (stdout and stderr as they came), or why it could not start. */
  tail: string
}

/** A variable name a check may pass through. */
const ENV_NAME = /^[A-Za-z_][A-Za-z0-9_]*$/

/** The default timeout of a check: 10 minutes. */
export const CHECK_TIMEOUT_MS = 600_000

/** Whether a check passed: it exited with code 0. */
export function checkPassed(result: CheckResult): boolean {
  return result.exit === 0 && result.timedOut !== true
}

/**
 * Throws at once, naming the bad value, on check definitions no run can use
 * (a name without an argument vector, a bad timeout).
 */
export function checkDefinitions(checks: unknown): void {
  if (checks === undefined) return
  if (!checks || typeof checks !== 'object' || Array.isArray(checks))
    throw new TypeError(`Expected \`checks\` to be an object of check definitions, got \`${String(checks)}\``)
  for (const [name, definition] of Object.entries(checks as Record<string, Partial<CheckDefinition>>)) {
    const command = definition?.command
    if (!Array.isArray(command) || command.length === 0 || !command.every((word) => typeof word === 'string') || command[0] === '')
      throw new TypeError(`Expected \`checks.${name}.command\` to be a non-empty array of strings (\`['npm', 'test']\`), got \`${JSON.stringify(command)}\``)
    if (definition.timeoutMs !== undefined) checkTimeoutMs(`checks.${name}.timeoutMs`, definition.timeoutMs)
    const { env, inheritEnv } = definition
    if (env !== undefined && (!env || typeof env !== 'object' || Array.isArray(env) || !Object.values(env).every((value) => typeof value === 'string')))
      throw new TypeError(`Expected \`checks.${name}.env\` to be an object of strings (\`{ CI: '1' }\`), got \`${JSON.stringify(env)}\``)
    if (inheritEnv !== undefined && !(Array.isArray(inheritEnv) && inheritEnv.every((each) => typeof each === 'string' && ENV_NAME.test(each))))
      throw new TypeError(`Expected \`checks.${name}.inheritEnv\` to be an array of variable names (\`['NPM_TOKEN']\`), got \`${JSON.stringify(inheritEnv)}\``)
  }
}

/**
 * The report of a visit's checks, added below the worker's output: what the
 * judge and the next worker see, each check's outcome, exit code, time and
 * output tail.
 */
export function checksReport(results: readonly CheckResult[]): string {
  const parts = ['## Checks', '']
  for (const result of results) parts.push(`- \`${result.name}\`: ${checkWords(result)}`)
  for (const result of results) {
    if (result.tail.trim() === '') continue
    const fence = '`'.repeat(Math.max(3, longestRun(result.tail) + 1))
    parts.push('', `Output of \`${result.name}\` (its end):`, '', `${fence}text`, result.tail.trimEnd(), fence)
  }
  return parts.join('\n')
}

/** One check's outcome in words: `passed (exit 0, 1.2 s)`. */
export function checkWords(result: CheckResult): string {
  const time = result.ms < 1000 ? `${result.ms} ms` : `${(result.ms / 1000).toFixed(1)} s`
  if (result.timedOut) return `failed (killed at its timeout after ${time})`
  if (result.exit === null) return `failed (did not run)`
  return `${result.exit === 0 ? 'passed' : 'failed'} (exit ${result.exit}, ${time})`
}

function longestRun(text: string): number {
  let longest = 0
  for (const run of text.match(/`+/g) ?? []) longest = Math.max(longest, run.length)
  return longest
}
