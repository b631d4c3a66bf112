import { readFile } from 'node:fs/promises'
import { isAbsolute, relative, resolve } from 'node:path'
import { RunStateError, VaultPathError } from '../core/errors.js'
import { dropControls, escapeControls, shellWord } from '../core/text.js'
import { assertFolder } from '../vault/fs-atomic.js'

/** Exit codes; 70 is sysexits' EX_SOFTWARE. */
export const EXIT = { ok: 0, invalid: 1, usage: 2, stopped: 3, waiting: 4, internal: 70, interrupted: 130 } as const

/** Where a command writes and what it resolves paths against; the real process, or a test's stand-in. */
export interface Io {
  stdout: { write(text: string): unknown; isTTY?: boolean }
  stderr: { write(text: string): unknown }
  cwd: string
  env: Record<string, string | undefined>
  /** What a command reads from `-` (`propose --document -`); the process's stdin when absent. */
  stdin?: AsyncIterable<string | Uint8Array>
  /** The command as the person typed it, for the commands the CLI suggests: `vaultplan` (the default), or `node dist/cli.js` in a clone. */
  self?: string
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

export { shellWord }

/**
 * How a person runs this CLI where they ran it, so that the commands it
 * suggests are ones they can type: `node <script>` when they ran the script
 * itself, as in a clone; `npx vaultplan` from the bin npm links into a
 * project's `node_modules/.bin/` (or npx's own cache), which is not on the
 * shell's PATH; `vaultplan` from a bin installed on it (`npm install -g`).
 */
export function selfCommand(script: string | undefined, cwd: string): string {
  if (script === undefined) return 'vaultplan'
  if (/\bcli\.js$/.test(script)) return `node ${shellWord(displayPath(cwd, script))}`
  return /[\\/]node_modules[\\/]\.bin[\\/][^\\/]+$/.test(script) ? 'npx vaultplan' : 'vaultplan'
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

/** Escape sequences a terminal acts on: CSI (colours, cursor moves, erasing), OSC (OSC 52 clipboard writes, OSC 8 hyperlinks, titles), DCS, SOS, PM, APC, and two-character escapes. */
const ESCAPE_SEQUENCES =
  /(?:\u001B\[|\u009B)[0-?]*[ -/]*[@-~]|(?:\u001B[\]PX^_]|[\u0090\u0098\u009D-\u009F])[\s\S]*?(?:\u0007|\u001B\\|\u009C|$)|\u001B[ -/]*[0-~]/g

/**
 * Text a model or a note wrote, made safe to print on a terminal: escape
 * sequences (which could write the clipboard, plant hyperlinks or rewrite
 * the lines above) and control characters are removed, line feeds and tabs
 * kept. A carriage return goes too: it would let text overwrite its own line.
 */
export function printable(text: string): string {
  return dropControls(text.replace(ESCAPE_SEQUENCES, ''))
}

/**
 * JSON for a terminal: `JSON.stringify` leaves C1 controls and
 * bidirectional overrides as they are; here they are written as `\uXXXX`
 * escapes, so the output parses to exactly the same value.
 */
export function printableJson(value: unknown, space?: number | string): string {
  // JSON.stringify escapes the C0 controls in strings; C1 controls and direction overrides it leaves as they are.
  return escapeControls(JSON.stringify(value, null, space), true)
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
 * person (an unreadable or too new trace) is exit 1 with its message (and,
 * with `json`, its error line on stdout, see {@link errorJson}); an error of
 * the operating system names the path (exit 2); anything else is thrown on.
 */
export function vaultReadFailure(dir: string, error: unknown, io: Io, json = false): number {
  if (error instanceof RunStateError) {
    if (json) io.stdout.write(`${printableJson(errorJson(error))}\n`)
    io.stderr.write(`vaultplan: ${printable(error.message)}\n`)
    return EXIT.invalid
  }
  if (isSystemError(error)) throw new VaultPathError('vault-unreadable', `cannot read \`${dir}\`: ${printable(error.message)}`, { cause: error })
  throw error
}

/** The error line of `--json`: what a program branches on (a `RunStateError`'s `data` too, so it never parses the message), never a stack. */
export function errorJson(error: unknown): { name: string; code?: string; message: string; data?: object } {
  const { name, message } = error instanceof Error ? error : { name: 'Error', message: String(error) }
  const code = (error as { code?: unknown } | undefined)?.code
  if (typeof code !== 'string') return { name, message }
  return error instanceof RunStateError ? { name, code, message, data: error.data } : { name, code, message }
}

/** The version in vaultplan's own package.json. */
export async function readVersion(): Promise<string> {
  const manifest = JSON.parse(await readFile(new URL('../../package.json', import.meta.url), 'utf8')) as { version?: unknown }
  if (typeof manifest.version !== 'string') throw new Error('package.json has no `version`')
  return manifest.version
}
