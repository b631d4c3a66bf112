/**
 * Renders the reference part of docs/cli.md from the built CLI's own help:
 * `vaultplan --help` for the list of commands, then `vaultplan <command>
 * --help` for each, so the page says what the binary says.
 *
 *   tsx scripts/docs-cli.ts            rewrites docs/cli.md (after `npm run build`)
 *   tsx scripts/docs-cli.ts --check    exits 1 when docs/cli.md differs
 */
import { execFile } from 'node:child_process'
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { isMain, replaceGenerated, writeOrCheck } from './generated.js'

const root = fileURLToPath(new URL('..', import.meta.url))
export const cliPage = join(root, 'docs', 'cli.md')
const bin = join(root, 'dist', 'cli.js')

/** What `node dist/cli.js <args>` prints on stdout. */
async function help(args: string[]): Promise<string> {
  const { stdout } = await promisify(execFile)(process.execPath, [bin, ...args], { cwd: root, env: { ...process.env, NO_COLOR: '1' } })
  return stdout.trimEnd()
}

/** The command names of `vaultplan --help`'s "Commands:" list (`help` left out: it is `--help`). */
export function commandsOf(mainHelp: string): string[] {
  const list = mainHelp.split(/\nCommands:\n/)[1]?.split('\n\n')[0]
  if (list === undefined) throw new Error(`Expected a "Commands:" list in \`vaultplan --help\`, got:\n${mainHelp}`)
  return list
    .split('\n')
    .map((line) => line.trim().split(/\s+/)[0] ?? '')
    .filter((name) => name !== '' && name !== 'help')
}

/** The reference: `vaultplan --help`, then each command's `--help`, each under its own heading. */
export async function renderCliReference(): Promise<string> {
  const main = await help(['--help'])
  const commands = commandsOf(main)
  const helps = await Promise.all(commands.map((name) => help([name, '--help'])))
  const block = (title: string, text: string) => `### ${title}\n\n\`\`\`text\n${text}\n\`\`\``
  return [block('vaultplan', main), ...commands.map((name, index) => block(`vaultplan ${name}`, helps[index]!))].join('\n\n')
}

/** docs/cli.md with its reference part as the built CLI prints it. */
export async function renderCliPage(): Promise<string> {
  return replaceGenerated(await readFile(cliPage, 'utf8'), 'cli-reference', await renderCliReference())
}

if (isMain(import.meta.url)) await writeOrCheck(cliPage, await renderCliPage(), "the built CLI's --help")
