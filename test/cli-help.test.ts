import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { expect, it } from 'vitest'
import { root } from './helpers/cli.js'

/*
 * Each command's --help is the CLI reference (docs/cli.md is generated from
 * it), so it must name every flag the command's parseArgs accepts.
 */

const folder = join(root, 'src', 'cli')

/** The flags the parseArgs calls of a file accept, as `--name`. */
function flagsOf(source: string): string[] {
  const names = [...source.matchAll(/(?:'([a-z][a-z-]*)'|\b([a-z][a-zA-Z]*)): \{ type: '(?:string|boolean)'/g)].map((match) => `--${match[1] ?? match[2]}`)
  return [...new Set(names)].sort()
}

/** The text of the `*_HELP` constants of a file. */
function helpsOf(source: string): string {
  return [...source.matchAll(/export const [A-Z_]+_HELP = `((?:\\`|[^`])*)`/g)].map((match) => match[1]).join('\n')
}

it('the help of each command lists every flag it accepts under Options', () => {
  const missing = readdirSync(folder)
    .filter((name) => name.endsWith('.ts'))
    .flatMap((name) => {
      const source = readFileSync(join(folder, name), 'utf8')
      const help = helpsOf(source)
      return flagsOf(source)
        .filter((flag) => !new RegExp(`^ +${flag}(?![a-z-])`, 'm').test(help))
        .map((flag) => `${name}: ${flag}`)
    })
  expect(missing).toEqual([])
})

it('finds the flags it checks', () => {
  const run = readFileSync(join(folder, 'cli-run.ts'), 'utf8')
  expect(flagsOf(run)).toEqual(['--check', '--check-env', '--dry-run', '--fresh', '--json', '--max-steps', '--no-fsync', '--query', '--run-vault', '--wait'])
  expect(helpsOf(run)).toContain('Usage: vaultplan run <vault>')
})
