import { spawn } from 'node:child_process'
import { realpath } from 'node:fs/promises'
import { parseArgs } from 'node:util'
import { isWildcard } from '../core/host-check.js'
import { parseAddress, stopSignal } from './cli-mcp.js'
import { displayPath, EXIT, UsageError, vaultFolder, type Io } from './cli-support.js'
import { checksToAsk, resumeCommand } from './cli-resume.js'

export const BOARD_HELP = `Usage: vaultplan board [--root DIR] [--http HOST:PORT] [--allowed-host H] [--open]

Serves a web page for the people around the plans under DIR: every run with
its phase (those that wait on you first), each run's plan drawn with
statuses, the hops with who decided and why, the outputs and the ledger;
decide a waiting note or a proposal with a click, fork from a step, search
past runs. Open pages follow the files live. Nothing outside DIR is read or
written.

The first line printed is 'board: <url>'; the URL carries the board's token
(every request needs it; opening the URL once keeps it in a cookie).

Options:
  --root DIR          the folder whose vaults are shown (default: the working folder)
  --http HOST:PORT    the address to listen on (default 127.0.0.1 and a free
                      port); PORT alone binds 127.0.0.1. Requests whose Host
                      or Origin is not this address are refused
  --allowed-host H    another Host the board answers to: the name or address
                      a teammate's browser uses when it is bound to 0.0.0.0
                      (the printed URL then names the first), or a proxy's;
                      may be repeated. Requests with any other Host or Origin
                      are refused (403, DNS rebinding)
  --open              open the board in the default browser
  -h, --help          show this help

Exit codes: 0 stopped (Ctrl-C), 2 bad usage or a root that is not a folder, 70 internal error.`

/** `vaultplan board`: serves the board of the vaults under `--root` until stopped. */
export async function boardCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { root: { type: 'string' }, http: { type: 'string' }, 'allowed-host': { type: 'string', multiple: true }, open: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  })
  if (positionals.length > 0) throw new UsageError(`'board' takes no arguments, got '${positionals[0]}'; pass the folder as --root DIR`)
  const address = values.http === undefined ? { host: '127.0.0.1', port: 0 } : parseAddress(values.http)
  const root = await realpath(await vaultFolder(values.root ?? '.', io))
  const { startBoard } = await import('../board/start-board.js')
  const allowedHosts = values['allowed-host'] ?? []
  // A page names the command that goes on with a run as a person here types it, the run's checks included.
  const self = io.self ?? 'vaultplan'
  const goOnCommand = async (vault: string) => resumeCommand(self, displayPath(io.cwd, vault), {}, await checksToAsk(vault, io.cwd))
  const board = await startBoard({ root, ...address, allowedHosts, goOnCommand })
  io.stdout.write(`board: ${board.url}\n`)
  io.stderr.write(`vaultplan board: showing ${root}; stop with Ctrl-C\n`)
  if (isWildcard(address.host) && allowedHosts.length === 0)
    io.stderr.write(
      `vaultplan board: listening on every address of this machine, but a browser that opens it by any (its name, its LAN address, 127.0.0.1) is refused (403): pass the one it uses with --allowed-host\n`,
    )
  if (values.open) openInBrowser(board.url)
  await stopSignal()
  await board.close()
  return EXIT.ok
}

/** Opens `url` in the default browser, without waiting for it; a missing opener is no failure (the URL is printed). */
function openInBrowser(url: string): void {
  const [command, args] =
    process.platform === 'darwin' ? ['open', [url]] : process.platform === 'win32' ? ['cmd', ['/c', 'start', '""', url]] : ['xdg-open', [url]]
  const child = spawn(command, args, { stdio: 'ignore', detached: true })
  child.on('error', () => undefined)
  child.unref()
}
