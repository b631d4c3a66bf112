import { access, realpath } from 'node:fs/promises'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'
import { parseArgs } from 'node:util'
import { EXIT, readVersion, shellWord, UsageError, vaultFolder, type Io } from './cli-support.js'
import { runnerChecks } from './cli-checks.js'
import { MAX_DURATION_MS } from '../core/durations.js'

export const MCP_HELP = `Usage: vaultplan mcp [--root DIR] [--http HOST:PORT] [--check NAME='CMD'] [options]

Serves the plan vaults under DIR to MCP clients (Claude Code, Cursor, Codex,
any client of the MCP SDK): the tools below, every note and trace as a
resource, and the prompt run_plan. Nothing outside DIR is read or written.
Over stdio by default (the client starts the server).

Tools:
  plan_list, plan_validate, plan_create, plan_status, plan_graph   plans
  plan_propose, plan_edit                                          plans for a person to approve, edits
  plan_next, plan_finish, plan_decide, plan_fork                   a run
  plan_defer, plan_block                                           not now, stuck
  plan_fact, plan_assume, plan_decision, plan_invalidate,
  plan_revalidate, plan_ledger                                     the ledger
  plan_search                                                      past runs

Options:
  --root DIR          the folder whose vaults are served (default: the working folder)
  --http HOST:PORT    serve Streamable HTTP at http://HOST:PORT/mcp instead of
                      stdio; PORT alone binds 127.0.0.1, port 0 picks a free one
  --allowed-host H    another Host the HTTP server answers to (a name behind a
                      proxy, or the addresses clients use when bound to
                      0.0.0.0); may be repeated. Requests with any other
                      Host or Origin are refused (403, DNS rebinding)
  --max-sessions N    over HTTP, hold at most N sessions (default 100): a new
                      one closes the session idle longest (its client gets
                      404 and initializes again); refused (503) when all are busy
  --session-idle MIN  over HTTP, close a session idle MIN minutes (default 60)
  --agent NAME        the agent every session works as when a call names
                      none (default: the client's name and the session's id,
                      so two sessions work two branches of a plan at once)
  --lease MIN         how long a session's claim on a step lasts unless it
                      calls again (default 30); a session that ends lets go
                      of its claims at once, a killed one's wait this long
  --max-steps N       the step budget of a run plan_next starts (or goes on
                      with) when it names no maxSteps and the run recorded
                      none (default: the library's, as 'vaultplan run')
  --check NAME='CMD'  define the check a note's \`check: NAME\` runs after
                      plan_finish (may be repeated; split into words, never run
                      by a shell); wins over the \`checks\` of
                      vaultplan.config.json in the working folder, which is
                      refused when that folder is DIR or inside it (then give
                      the checks with --check). No check runs otherwise
  --check-env NAME    pass the variable NAME to the checks (may be repeated; see
                      'vaultplan run --help')
  -h, --help          show this help

Environment:
  VAULTPLAN_MCP_TOKEN   over HTTP, require 'Authorization: Bearer <token>'
  LLM_MODEL, ...        the judge for plan_finish without a choice (see 'vaultplan run --help')

Needs the MCP SDK: npm install @modelcontextprotocol/sdk

Exit codes: 0 the client went away or the server was stopped, 2 bad usage or a
root that is not a folder, 70 internal error.`

/** What `--http` asked for. */
export interface Address {
  host: string
  port: number
}

/** `vaultplan mcp`: serves the vaults under `--root` over stdio, or Streamable HTTP with `--http`. */
export async function mcpCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      root: { type: 'string' },
      http: { type: 'string' },
      'allowed-host': { type: 'string', multiple: true },
      'max-sessions': { type: 'string' },
      'session-idle': { type: 'string' },
      check: { type: 'string', multiple: true },
      'check-env': { type: 'string', multiple: true },
      'max-steps': { type: 'string' },
      agent: { type: 'string' },
      lease: { type: 'string' },
    },
    allowPositionals: true,
    strict: true,
  })
  if (positionals.length > 0) throw new UsageError(`'mcp' takes no arguments, got '${positionals[0]}'; pass the folder as --root DIR`)
  const address = values.http === undefined ? undefined : parseAddress(values.http)
  if (values['allowed-host'] && !address) throw new UsageError('--allowed-host is for --http; a stdio server has no Host to check')
  const maxSessions = values['max-sessions'] === undefined ? undefined : Number(values['max-sessions'])
  if (maxSessions !== undefined && (!Number.isInteger(maxSessions) || maxSessions < 1))
    throw new UsageError(`--max-sessions takes an integer from 1 up, got '${values['max-sessions']}'`)
  const idleMinutes = values['session-idle'] === undefined ? undefined : Number(values['session-idle'])
  if (idleMinutes !== undefined && !(idleMinutes > 0)) throw new UsageError(`--session-idle takes a number of minutes above 0, got '${values['session-idle']}'`)
  if ((maxSessions !== undefined || idleMinutes !== undefined) && !address)
    throw new UsageError('--max-sessions and --session-idle are for --http; stdio serves one session')
  const maxSteps = values['max-steps'] === undefined ? undefined : Number(values['max-steps'])
  if (maxSteps !== undefined && !(Number.isInteger(maxSteps) && maxSteps >= 1))
    throw new UsageError(`--max-steps takes an integer from 1 up, got '${values['max-steps']}'`)
  const leaseMinutes = values.lease === undefined ? undefined : Number(values.lease)
  if (leaseMinutes !== undefined && !(leaseMinutes > 0 && leaseMinutes * 60_000 <= MAX_DURATION_MS))
    throw new UsageError(`--lease takes minutes above 0, at most a year (${MAX_DURATION_MS / 60_000}), got '${values.lease}'`)
  const root = await realpath(await vaultFolder(values.root ?? '.', io))
  const version = await readVersion()
  // A config file among the served vaults could be written by a client (plan_create): it defines no commands.
  const { checks } = await runnerChecks({ check: values.check, checkEnv: values['check-env'] }, io.cwd, { folders: [root], as: 'root' })
  if (values.agent !== undefined && values.agent.trim() === '') throw new UsageError('--agent takes a name')
  const checking = {
    ...(Object.keys(checks).length > 0 && { checks }),
    ...(maxSteps !== undefined && { maxSteps }),
    ...(values.agent !== undefined && { agent: values.agent }),
    ...(leaseMinutes !== undefined && { leaseMs: Math.max(1, Math.round(leaseMinutes * 60_000)) }),
  }

  let modules
  try {
    modules = await Promise.all([import('../mcp/server.js'), import('../mcp/http.js'), import('@modelcontextprotocol/sdk/server/stdio.js')])
  } catch (error) {
    if (!isMissingSdk(error)) throw error
    io.stderr.write(`vaultplan: \`vaultplan mcp\` needs the MCP SDK, which is not installed. Install it beside vaultplan:\n  ${await sdkInstallCommand()}\n`)
    return EXIT.usage
  }
  const [{ createMcpServer }, { serveHttp }, { StdioServerTransport }] = modules

  if (address) {
    const token = io.env.VAULTPLAN_MCP_TOKEN
    const served = await serveHttp({
      root,
      version,
      ...address,
      allowedHosts: values['allowed-host'] ?? [],
      ...(token ? { token } : {}),
      ...(maxSessions !== undefined && { maxSessions }),
      ...(idleMinutes !== undefined && { sessionIdleMs: idleMinutes * 60_000 }),
      ...checking,
    })
    io.stderr.write(`vaultplan mcp: serving ${root} at ${served.url}${token ? ' (bearer token required)' : ''}\n`)
    await stopSignal()
    await served.close()
    return EXIT.ok
  }
  const mcp = createMcpServer({ root, version, ...checking })
  const transport = new StdioServerTransport()
  const closed = new Promise<void>((resolve) => {
    transport.onclose = () => resolve()
    // The client closing our stdin is the end of the session.
    process.stdin.once('end', () => resolve())
  })
  await mcp.server.connect(transport)
  io.stderr.write(`vaultplan mcp: serving ${root} over stdio\n`)
  await Promise.race([closed, stopSignal()])
  await mcp.close()
  return EXIT.ok
}

/** `127.0.0.1:8808`, `[::1]:8808`, `localhost:0`, or a port alone (bound to 127.0.0.1). */
export function parseAddress(text: string): Address {
  const match = /^(?:(\[[^\]]+\]|[^:]+):)?(\d{1,5})$/.exec(text.trim())
  const port = match ? Number(match[2]) : Number.NaN
  if (!match || port > 65535) throw new UsageError(`--http takes HOST:PORT, like 127.0.0.1:8808, got '${text}'`)
  const host = match[1] === undefined ? '127.0.0.1' : match[1].replace(/^\[|\]$/g, '')
  return { host, port }
}

/**
 * Resolves at the first SIGINT or SIGTERM, so the server closes and ends
 * what its calls run (their checks' process groups); a second signal exits
 * at once.
 */
export function stopSignal(): Promise<void> {
  return new Promise((resolve) => {
    let stopping = false
    // `on`, not `once`: proper-lockfile's signal-exit (a call holding a vault's lock) re-raises a signal when no other
    // listener is left, and the process would die before it closed, leaving a check's process group behind.
    const stop = () => {
      if (stopping) process.exit(EXIT.interrupted)
      stopping = true
      resolve()
    }
    process.on('SIGINT', stop)
    process.on('SIGTERM', stop)
  })
}

/**
 * The command that installs the MCP SDK where this vaultplan resolves it: in the project whose
 * `node_modules` holds vaultplan, in the clone it was built in, or globally beside a global install.
 * (vaultplan is not on the registry, so a command that fetches vaultplan itself would fail.)
 */
export async function sdkInstallCommand(packageRoot = fileURLToPath(new URL('../..', import.meta.url))): Promise<string> {
  const root = resolve(packageRoot)
  const holder = basename(dirname(root)) === 'node_modules' ? dirname(dirname(root)) : root
  const install = 'npm install @modelcontextprotocol/sdk'
  if (await exists(join(holder, 'package.json'))) return `cd ${shellWord(holder)} && ${install}`
  return 'npm install --global @modelcontextprotocol/sdk'
}

async function exists(path: string): Promise<boolean> {
  return access(path).then(
    () => true,
    () => false,
  )
}

function isMissingSdk(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | undefined)?.code
  return (code === 'ERR_MODULE_NOT_FOUND' || code === 'MODULE_NOT_FOUND') && String((error as Error).message).includes('@modelcontextprotocol/sdk')
}
