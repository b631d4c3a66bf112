#!/usr/bin/env node
import { realpathSync } from 'node:fs'
import { fileURLToPath } from 'node:url'
import { EXIT, readVersion, printable, selfCommand, UsageError, type Command, type Io } from './cli/cli-support.js'
import { RUN_HELP, runCommand } from './cli/cli-run.js'
import { STATUS_HELP, statusCommand } from './cli/cli-status.js'
import { GRAPH_HELP, graphCommand } from './cli/cli-graph.js'
import { INIT_HELP, initCommand } from './cli/cli-init.js'
import { PROPOSE_HELP, proposeCommand } from './cli/cli-propose.js'
import { FORK_HELP, forkCommand } from './cli/cli-fork.js'
import { LEDGER_HELP, ledgerCommand } from './cli/cli-ledger.js'
import { MCP_HELP, mcpCommand } from './cli/cli-mcp.js'
import { BOARD_HELP, boardCommand } from './cli/cli-board.js'
import { SEARCH_HELP, searchCommand } from './cli/cli-search.js'
import { VALIDATE_HELP, validateCommand } from './cli/cli-validate.js'
import { QUEUE_HELP, queueCommand, WORKER_HELP, workerCommand } from './cli/cli-worker.js'
import { SCHEDULE_HELP, scheduleCommand } from './cli/cli-schedule.js'
import { VaultPathError } from './core/errors.js'
import { closestNames, didYouMean } from './core/closest-names.js'

const commands: Record<string, Command> = {
  validate: {
    summary: 'check a plan vault and print every problem',
    help: VALIDATE_HELP,
    run: validateCommand,
  },
  run: {
    summary: 'run or resume a plan vault with the configured models',
    help: RUN_HELP,
    run: runCommand,
  },
  status: {
    summary: 'show where the run of a vault stands and what to do next',
    help: STATUS_HELP,
    run: statusCommand,
  },
  graph: {
    summary: 'picture the plan (mermaid, DOT, SVG, Obsidian canvas), run state included',
    help: GRAPH_HELP,
    run: graphCommand,
  },
  mcp: {
    summary: 'serve the vaults of a folder to coding agents over MCP (stdio or HTTP)',
    help: MCP_HELP,
    run: mcpCommand,
  },
  board: {
    summary: 'serve a live web page to watch runs, decide, fork and search',
    help: BOARD_HELP,
    run: boardCommand,
  },
  init: {
    summary: 'write a starter plan into a new or empty folder',
    help: INIT_HELP,
    run: initCommand,
  },
  propose: {
    summary: 'have the planner write a plan that waits for a person to approve, revise or decline it',
    help: PROPOSE_HELP,
    run: proposeCommand,
  },
  version: {
    summary: 'print the version',
    help: `Usage: vaultplan version

Prints the version of vaultplan, as --version does. Through npm, both
'npx vaultplan version' and 'npx vaultplan --version' reach vaultplan
('npm exec vaultplan --version' is npm's own --version: use
'npm exec -- vaultplan --version').

Options:
  -h, --help     show this help

Exit codes: 0 printed, 2 bad usage.`,
    run: versionCommand,
  },
  fork: {
    summary: 'copy a run up to a step into a new vault, to replay from there',
    help: FORK_HELP,
    run: forkCommand,
  },
  ledger: {
    summary: "show the facts, assumptions and decisions a vault's runs recorded",
    help: LEDGER_HELP,
    run: ledgerCommand,
  },
  search: {
    summary: 'search the outputs, ledgers and judgments of past runs',
    help: SEARCH_HELP,
    run: searchCommand,
  },
  worker: {
    summary: 'work hops of queued runs from PostgreSQL (pg-boss), many workers at once',
    help: WORKER_HELP,
    run: workerCommand,
  },
  schedule: {
    summary: 'run a plan on a cron: each tick copies it into a new run vault and runs it',
    help: SCHEDULE_HELP,
    run: scheduleCommand,
  },
  queue: {
    summary: "show the run queue: 'queue status' counts queued, in flight, waiting, failed",
    help: QUEUE_HELP,
    run: queueCommand,
  },
}

const MAIN_HELP = `Usage: vaultplan <command> [options]

Commands:
${Object.entries(commands)
  .map(([name, command]) => `  ${name.padEnd(14)} ${command.summary}`)
  .join('\n')}
  help [command] show help for a command

Options:
  -h, --help     show this help
  -v, --version  print the version

Run 'vaultplan <command> --help' for a command's options.`

/**
 * Runs the command line `argv` (without `node` and the script) and resolves
 * to the exit code. Never throws: every failure is written to `io.stderr`.
 */
export async function main(argv: string[], io: Io): Promise<number> {
  // npm hands a leading `--` on (`npx vaultplan -- --version`); it separates npm's options from ours, not ours from operands.
  const [name, ...rest] = argv[0] === '--' ? argv.slice(1) : argv
  let command: Command | undefined
  try {
    if (name === '--version' || name === '-v') {
      io.stdout.write(`${await readVersion()}\n`)
      return EXIT.ok
    }
    if (name === '--help' || name === '-h' || name === 'help') return help(rest, io)
    if (name === undefined) throw new UsageError('missing command')
    command = Object.hasOwn(commands, name) ? commands[name] : undefined
    if (!command)
      throw new UsageError(
        name.startsWith('-')
          ? `unknown option '${name}'${meant(name, optionsOf(MAIN_HELP))}`
          : `unknown command '${name}'${meant(name, [...Object.keys(commands), 'help'])}`,
      )
    const own = rest.slice(0, rest.includes('--') ? rest.indexOf('--') : rest.length)
    if (own.includes('--help') || own.includes('-h')) {
      io.stdout.write(`${command.help}\n`)
      return EXIT.ok
    }
    return await command.run(rest, io)
  } catch (error) {
    if (error instanceof UsageError || isParseArgsError(error)) {
      const usage = command ? usageLine(command.help) : usageLine(MAIN_HELP)
      const more = command ? `Run 'vaultplan ${name} --help' for details.` : `Run 'vaultplan --help' for the commands.`
      // parseArgs goes on about '--' after its first sentence; the usage line says enough.
      const reason = error instanceof UsageError ? error.message : `${(error as Error).message.split('. ')[0]}${unknownOption(error, command)}`
      io.stderr.write(`vaultplan: ${reason}\n${usage}\n${more}\n`)
      return EXIT.usage
    }
    if (error instanceof VaultPathError) {
      io.stderr.write(`vaultplan: ${printable(error.message)}\n`)
      return EXIT.usage
    }
    io.stderr.write(`vaultplan: internal error: ${printable(error instanceof Error ? error.message : String(error))}\n`)
    return EXIT.internal
  }
}

function help(topics: string[], io: Io): number {
  const [topic, ...extra] = topics
  if (extra.length > 0) throw new UsageError(`'help' takes one command name, got ${topics.length}`)
  if (topic === undefined) {
    io.stdout.write(`${MAIN_HELP}\n`)
    return EXIT.ok
  }
  const command = Object.hasOwn(commands, topic) ? commands[topic] : undefined
  if (!command) throw new UsageError(`unknown command '${topic}'${meant(topic, Object.keys(commands))}`)
  io.stdout.write(`${command.help}\n`)
  return EXIT.ok
}

async function versionCommand(args: string[], io: Io): Promise<number> {
  if (args.length > 0) throw new UsageError(`'version' takes no arguments, got ${args.map((arg) => `'${arg}'`).join(' ')}`)
  io.stdout.write(`${await readVersion()}\n`)
  return EXIT.ok
}

function usageLine(helpText: string): string {
  return helpText.slice(0, helpText.indexOf('\n'))
}

/** `; did you mean 'validate'?` for a word a typo away from one of `names` (options compared without their dashes); `''` for none. */
function meant(word: string, names: readonly string[]): string {
  const bare = (name: string) => name.replace(/^-+/, '')
  const close = closestNames(bare(word), names.map(bare)).map((name) => names.find((each) => bare(each) === name)!)
  const guess = didYouMean(close, (name) => `'${name}'`)
  return guess === '' ? '' : `; ${guess}`
}

/** The long options a help text lists (`--query`, `--max-steps` ...): what a command takes. */
function optionsOf(helpText: string): string[] {
  return [...helpText.matchAll(/^ {2,}(?:-\w, )?(--[a-z][\w-]*)/gm)].map((match) => match[1]!)
}

/** `; did you mean '--query'?` after parseArgs' unknown option, from the options the command's help lists. */
function unknownOption(error: TypeError & { code: string }, command: Command | undefined): string {
  const option = /^Unknown option '([^']+)'/.exec(error.message)?.[1]
  return error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && option !== undefined && command ? meant(option, optionsOf(command.help)) : ''
}

function isParseArgsError(error: unknown): error is TypeError & { code: string } {
  const code: unknown = error instanceof TypeError ? (error as { code?: unknown }).code : undefined
  return typeof code === 'string' && code.startsWith('ERR_PARSE_ARGS_')
}

function isBinary(): boolean {
  const script = process.argv[1]
  if (script === undefined) return false
  try {
    return realpathSync(script) === fileURLToPath(import.meta.url)
  } catch {
    return false
  }
}

if (isBinary()) {
  // `vaultplan validate x | head` closes the pipe early; that is not a failure.
  process.stdout.on('error', (error: NodeJS.ErrnoException) => {
    if (error.code === 'EPIPE') process.exit(process.exitCode ?? EXIT.ok)
    throw error
  })
  const cwd = process.cwd()
  process.exitCode = await main(process.argv.slice(2), {
    stdout: process.stdout,
    stderr: process.stderr,
    cwd,
    env: process.env,
    self: selfCommand(process.argv[1], cwd),
  })
}
