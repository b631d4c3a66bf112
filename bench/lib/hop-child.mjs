/**
 * Runs the draft/review loop for a number of hops and exits: the process
 * `strace -f -c` counts (see syscalls.mjs).
 *
 * Usage: node bench/lib/hop-child.mjs <vault> <hops> <fsync: 0|1> [finish: 0|1]
 *
 * With `finish` the loop is approved at its last review and the run
 * completes (its journal retired); without, the budget stops it after
 * `hops` hops, a run still going: what its hops' path costs.
 */
import { runVaultplan } from './contenders.mjs'

const [vault, hops, fsync, finish = '1'] = process.argv.slice(2)
const figure =
  finish === '1'
    ? await runVaultplan(vault, { fsync: fsync === '1', maxSteps: 100_000, yesAt: (Number(hops) - 1) / 2 })
    : await runVaultplan(vault, { fsync: fsync === '1', maxSteps: Number(hops) })
process.stdout.write(`${JSON.stringify({ steps: figure.steps })}\n`)
