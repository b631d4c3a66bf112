import { readFile } from 'node:fs/promises'
import { isAbsolute, relative, resolve } from 'node:path'
import { RunStateError, VaultPathError } from './errors.js'
import { assertFolder } from './fs-atomic.js'

/** Exit codes; 70 is sysexits' EX_SOFTWARE. */
export const EXIT = { ok: 0, invalid: 1, usage: 2, stopped: 3, waiting: 4, internal: 70, interrupted: 130 } as const

/** Where a command writes and what it resolves paths against; the real process, or a test's stand-in. */
export interface Io {
  stdout: { write(text: string): unknown; isTTY?: boolean }
  stderr: { write(text: string): unknown }
  cwd: string
  env: Record<string, string | undefined>
}

/** A subcommand: its help (first line is the usage) and what it does with its own arguments. */
export interface Command {
  summary: string
  help: string
  run(args: string[], io: Io): Promise<number>
}

/** A mistake in the command line: reported in one line with the usage, exit 2. */
export class UsageError extends Error {
  override name = 'UsageError'
}


/** The one positional a command takes; a usage error when there is none or more. */
export function onlyPositional(positionals: string[], what: string): string {
  if (positionals.length === 0) throw new UsageError(`missing ${what}`)
  if (positionals.length > 1) {
    throw new UsageError(`expected one argument (${what}), got ${positionals.length}: ${positionals.map((p) => `'${p}'`).join(' ')}`)
  }
  return positionals[0]!
}

/** Resolves `dir` against the working directory; a `VaultPathError` naming it when it is no folder. */
export async function vaultFolder(dir: string, io: Io): Promise<string> {
  const vault = resolve(io.cwd, dir)
  await assertFolder(vault, dir)
  return vault
}

/** A path as the user can type it from `cwd`: relative inside it, absolute outside. */
export function displayPath(cwd: string, path: string): string {
  const shown = relative(cwd, path)
  if (shown === '') return '.'
  if (shown === '..' || shown.startsWith('../') || shown.startsWith('..\\') || isAbsolute(shown)) return path
  return shown
}

/** Colours a piece of output, or leaves it as it is. */
export type Paint = (text: string, colour: keyof typeof COLOURS) => string
/** ANSI colour codes the CLI uses. */
export const COLOURS = { red: 31, green: 32, yellow: 33 } as const

/** Colours only for a terminal, and never when `NO_COLOR` is set (no-color.org) or `TERM=dumb`. */
export function painter(io: Io): Paint {
  const colour = io.stdout.isTTY === true && !io.env.NO_COLOR && io.env.TERM !== 'dumb'
  return colour ? (text, name) => `\u001B[${COLOURS[name]}m${text}\u001B[39m` : (text) => text
}

/** `1 note`, `3 notes`. */
export function count(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`
}

/** Whether an error came from the operating system (it has an errno `code` and a `syscall`). */
export function isSystemError(error: unknown): error is NodeJS.ErrnoException & { code: string } {
  return error instanceof Error && typeof (error as NodeJS.ErrnoException).code === 'string' && typeof (error as NodeJS.ErrnoException).syscall === 'string'
}

/**
 * What a command does when reading a vault failed: a vault that needs a
 * person (an unreadable or too new trace) is exit 1 with its message; an
 * error of the operating system names the path (exit 2); anything else is
 * thrown on.
 */
export function vaultReadFailure(dir: string, error: unknown, io: Io): number {
  if (error instanceof RunStateError) {
    io.stderr.write(`vaultplan: ${error.message}\n`)
    return EXIT.invalid
  }
  if (isSystemError(error)) throw new VaultPathError('vault-unreadable', `cannot read \`${dir}\`: ${error.message}`, { cause: error })
  throw error
}

/** The version in vaultplan's own package.json. */
export async function readVersion(): Promise<string> {
  const manifest = JSON.parse(await readFile(new URL('../package.json', import.meta.url), 'utf8')) as { version?: unknown }
  if (typeof manifest.version !== 'string') throw new Error('package.json has no `version`')
  return manifest.version
}
