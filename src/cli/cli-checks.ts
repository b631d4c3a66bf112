import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { UsageError } from './cli-support.js'
import type { CheckDefinition } from '../run/core/checks.js'

/*
 * The checks a CLI run may use: `--check name='npm test'` flags and the
 * `checks` of `vaultplan.config.json` in the working folder (never one in
 * the vault: a vault from elsewhere must not run programs). A flag wins
 * over the file.
 */

/** The file of the runner's settings, read from the working folder. */
export const CONFIG_FILE = 'vaultplan.config.json'

/**
 * The checks the runner defines: `vaultplan.config.json`'s in `cwd` (none
 * without `cwd`), then the `--check` flags over them.
 *
 * @throws {@link UsageError} for a flag or a config file that is not well formed
 */
export async function runnerChecks(flags: readonly string[] | undefined, cwd: string | undefined): Promise<Record<string, CheckDefinition>> {
  const checks: Record<string, CheckDefinition> = { ...(cwd === undefined ? {} : await configChecks(cwd)) }
  for (const flag of flags ?? []) {
    const at = flag.indexOf('=')
    const name = flag.slice(0, at).trim()
    const command = at > 0 ? splitWords(flag.slice(at + 1)) : []
    if (name === '' || command.length === 0) throw new UsageError(`--check takes NAME='COMMAND' (such as test='npm test'), got '${flag}'`)
    checks[name] = { command }
  }
  return checks
}

/** The `checks` of `vaultplan.config.json` in `cwd`; none when there is no such file. */
async function configChecks(cwd: string): Promise<Record<string, CheckDefinition>> {
  const file = join(cwd, CONFIG_FILE)
  let text: string
  try {
    text = await readFile(file, 'utf8')
  } catch {
    return {}
  }
  let config: { checks?: unknown }
  try {
    config = JSON.parse(text) as { checks?: unknown }
  } catch (error) {
    throw new UsageError(`${CONFIG_FILE} is not JSON: ${(error as Error).message}`)
  }
  const checks = config?.checks ?? {}
  if (typeof checks !== 'object' || checks === null || Array.isArray(checks)) throw new UsageError(`${CONFIG_FILE}: "checks" must be an object of named checks`)
  for (const [name, definition] of Object.entries(checks as Record<string, { command?: unknown }>)) {
    const command = definition?.command
    if (!Array.isArray(command) || command.length === 0 || !command.every((word) => typeof word === 'string'))
      throw new UsageError(`${CONFIG_FILE}: check "${name}" needs "command": an array of words, such as ["npm", "test"]`)
  }
  return checks as Record<string, CheckDefinition>
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
