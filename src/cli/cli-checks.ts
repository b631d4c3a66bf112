import { UsageError } from './cli-support.js'
import { checkDefinitions, type CheckDefinition } from '../run/core/checks.js'
import { CONFIG_FILE, configRefusal, readRunnerConfig, type GuardedFolders } from '../vault/runner-config.js'

/*
 * The checks a CLI command may use: `--check name='npm test'` flags and the
 * `checks` of `vaultplan.config.json` in the working folder, never one in a
 * vault being run or a root served (a vault from elsewhere must not run
 * programs). A flag wins over the file.
 */

export { CONFIG_FILE }

/** The checks a command has, and the folder whose config gave some of them (a queue worker refuses a vault holding it). */
export interface RunnerChecks {
  checks: Record<string, CheckDefinition>
  /** The working folder, when its `vaultplan.config.json` defined checks. */
  from?: string
}

/** The check flags of a command: `--check NAME='CMD'` and `--check-env NAME`, each repeatable. */
export interface CheckFlags {
  check?: readonly string[] | undefined
  checkEnv?: readonly string[] | undefined
}

/**
 * The checks the runner defines: `vaultplan.config.json`'s in `cwd`, then
 * the `--check` flags over them; each passes through the variables
 * `--check-env` and the file's `checkEnv` name, besides its own
 * `inheritEnv`. Every command that reads check definitions comes here.
 * When `cwd` is (or is inside) one of `guarded`'s folders, the file is not
 * read for checks: with flags it is left alone, without them a file that
 * defines checks is refused.
 *
 * @throws {@link UsageError} for a flag or a config file that is not well formed, or a config refused by the rule above
 */
export async function runnerChecks(flags: CheckFlags, cwd: string, guarded?: GuardedFolders): Promise<RunnerChecks> {
  const fromFlags = checkFlags(flags.check ?? [])
  for (const name of flags.checkEnv ?? [])
    if (!/^[A-Za-z_][A-Za-z0-9_]*$/.test(name)) throw new UsageError(`--check-env takes a variable name, such as NPM_TOKEN, got '${name}'`)
  const refusal = guarded && (await configRefusal(cwd, guarded))
  const config = refusal !== undefined && Object.keys(fromFlags).length > 0 ? undefined : await configChecks(cwd)
  if (config !== undefined && refusal !== undefined) throw new UsageError(refusal)
  const passed = [...(config?.passed ?? []), ...(flags.checkEnv ?? [])]
  const checks: Record<string, CheckDefinition> = {}
  for (const [name, definition] of Object.entries({ ...config?.checks, ...fromFlags }))
    checks[name] = passed.length === 0 ? definition : { ...definition, inheritEnv: [...new Set([...(definition.inheritEnv ?? []), ...passed])] }
  try {
    checkDefinitions(checks)
  } catch (error) {
    // A flag makes a command and nothing else: what is wrong is in the file.
    throw new UsageError(`${CONFIG_FILE}: ${(error as Error).message}`)
  }
  return config === undefined ? { checks } : { checks, from: cwd }
}

function checkFlags(flags: readonly string[]): Record<string, CheckDefinition> {
  const checks: Record<string, CheckDefinition> = {}
  for (const flag of flags) {
    const at = flag.indexOf('=')
    const name = flag.slice(0, at).trim()
    const command = at > 0 ? splitWords(flag.slice(at + 1)) : []
    if (name === '' || command.length === 0) throw new UsageError(`--check takes NAME='COMMAND' (such as test='npm test'), got '${flag}'`)
    checks[name] = { command }
  }
  return checks
}

/** The `checks` of `vaultplan.config.json` in `cwd` and the variables its `checkEnv` passes them; `undefined` when the file defines none. */
async function configChecks(cwd: string): Promise<{ checks: Record<string, CheckDefinition>; passed: string[] } | undefined> {
  const config = await readConfig(cwd)
  const { checks, checkEnv } = config ?? {}
  if (checks === undefined) return undefined
  if (checkEnv !== undefined && !(Array.isArray(checkEnv) && checkEnv.every((name) => typeof name === 'string')))
    throw new UsageError(`${CONFIG_FILE}: "checkEnv" must be an array of variable names, such as ["NPM_TOKEN"]`)
  if (typeof checks !== 'object' || checks === null || Array.isArray(checks)) throw new UsageError(`${CONFIG_FILE}: "checks" must be an object of named checks`)
  for (const [name, definition] of Object.entries(checks as Record<string, { command?: unknown }>)) {
    const command = definition?.command
    if (!Array.isArray(command) || command.length === 0 || !command.every((word) => typeof word === 'string'))
      throw new UsageError(`${CONFIG_FILE}: check "${name}" needs "command": an array of words, such as ["npm", "test"]`)
  }
  return { checks: checks as Record<string, CheckDefinition>, passed: (checkEnv as string[] | undefined) ?? [] }
}

/**
 * The `vaultplan.config.json` of `cwd` (`undefined` without one), through
 * the one reader of the file.
 *
 * @throws {@link UsageError} for a file that is not a JSON object
 */
export async function readConfig(cwd: string): Promise<Record<string, unknown> | undefined> {
  try {
    return await readRunnerConfig(cwd)
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
}

/**
 * Splits a command into words as a POSIX shell would, without running one:
 * blanks separate words, `'...'` is literal, `"..."` keeps blanks and takes
 * `\` before `"`, `\`, `$` and `` ` ``, and `\` outside quotes escapes the
 * next character. Nothing is expanded (`$HOME`, `*`, `;` stay as written).
 *
 * @throws {@link UsageError} for an unclosed quote
 */
export function splitWords(text: string): string[] {
  const words: string[] = []
  let word: string | undefined
  for (let index = 0; index < text.length; index++) {
    const char = text[index]!
    if (/\s/.test(char)) {
      if (word !== undefined) words.push(word)
      word = undefined
    } else if (char === "'") {
      const end = text.indexOf("'", index + 1)
      if (end === -1) throw new UsageError(`unclosed ' in --check command: ${text}`)
      word = (word ?? '') + text.slice(index + 1, end)
      index = end
    } else if (char === '"') {
      word ??= ''
      for (index++; ; index++) {
        if (index >= text.length) throw new UsageError(`unclosed " in --check command: ${text}`)
        const inner = text[index]!
        if (inner === '"') break
        if (inner === '\\' && '"\\$`'.includes(text[index + 1] ?? '')) word += text[++index]
        else word += inner
      }
    } else if (char === '\\' && index + 1 < text.length) word = (word ?? '') + text[++index]
    else word = (word ?? '') + char
  }
  if (word !== undefined) words.push(word)
  return words
}
