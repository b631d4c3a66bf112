import { resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { displayPath, EXIT, onlyPositional, UsageError, vaultFolder, type Io } from './cli-support.js'
import { RunStateError } from '../core/errors.js'

export const FORK_HELP = `Usage: vaultplan fork <vault> --step N --into DIR

Copies the plan in <vault> and its run up to step N into DIR (a new or
empty folder), leaving <vault> untouched. The fork records where it came
from and gets a new run id; \`vaultplan run DIR\` goes on from the hop after
step N, with DIR's notes as they are (fix a note there first to replay from
before it went wrong). Step 0 keeps only the plan and the query.

Options:
  --step N       the last step of the run the fork keeps
  --into DIR     where the fork goes
  -h, --help     show this help

Exit codes: 0 forked, 1 no run to fork or DIR not empty, 2 bad usage,
70 internal error.`

/** `vaultplan fork`: time travel, a copy of a run up to a step. */
export async function forkCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { step: { type: 'string' }, into: { type: 'string' } }, allowPositionals: true, strict: true })
  const vault = await vaultFolder(onlyPositional(positionals, 'the vault folder'), io)
  if (values.step === undefined || !/^\d+$/.test(values.step))
    throw new UsageError(`--step takes the step number to fork at, got ${values.step === undefined ? 'none' : `'${values.step}'`}`)
  if (values.into === undefined) throw new UsageError('--into DIR is required: the folder the fork goes into')
  const { forkRun } = await import('../run/forks/fork.js')
  try {
    const into = await forkRun(vault, { step: Number(values.step), into: resolve(io.cwd, values.into) })
    io.stdout.write(
      `Forked ${displayPath(io.cwd, vault)} at step ${values.step} into ${displayPath(io.cwd, into)}; \`vaultplan run ${displayPath(io.cwd, into)}\` goes on from there.\n`,
    )
    return EXIT.ok
  } catch (error) {
    if (error instanceof RunStateError) {
      io.stderr.write(`vaultplan: ${error.message}\n`)
      return EXIT.invalid
    }
    if (error instanceof TypeError && error.message.startsWith('Expected `step`'))
      throw new UsageError(error.message.replace('Expected `step` to be', '--step must be'))
    throw error
  }
}
