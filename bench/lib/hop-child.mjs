/**
 * Runs the draft/review loop for a number of hops and exits: the process
 * `strace -f -c` counts (see syscalls.mjs).
 *
 * Usage: node bench/lib/hop-child.mjs <vault> <hops> <fsync: 0|1>
 */
import { runVaultplan } from './contenders.mjs'

const [vault, hops, fsync] = process.argv.slice(2)
const figure = await runVaultplan(vault, { fsync: fsync === '1', maxSteps: 100_000, yesAt: (Number(hops) - 1) / 2 })
process.stdout.write(`${JSON.stringify({ steps: figure.steps })}\n`)
