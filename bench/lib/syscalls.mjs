/**
 * System calls per hop, counted by `strace -f -c` (every thread, the
 * thread pool's included) over two runs of the loop of different lengths:
 * the difference divided by the difference in hops leaves out start-up,
 * the vault's reading and the end of the run.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { writeLoopVault } from './vaults.mjs'

const run = promisify(execFile)
const CHILD = join(dirname(fileURLToPath(import.meta.url)), 'hop-child.mjs')

/** Whether `strace` can run here (installed, and allowed to trace). */
export async function straceWorks() {
  try {
    await run('strace', ['-f', '-c', '-o', '/dev/null', process.execPath, '-e', '0'])
    return true
  } catch {
    return false
  }
}

/** Parses the table `strace -c` writes: `{ syscall: calls }`. */
export function parseStraceSummary(text) {
  const counts = {}
  for (const line of text.split('\n')) {
    const cells = line.trim().split(/\s+/)
    if (cells.length < 5 || !/^[\d.]+$/.test(cells[0]) || cells.at(-1) === 'total') continue
    counts[cells.at(-1)] = Number(cells[3])
  }
  return counts
}

async function counted(base, hops, fsync, finish) {
  const vault = join(base, `loop-${hops}-${fsync}-${finish}`)
  await writeLoopVault(vault)
  const out = join(base, `strace-${hops}-${fsync}-${finish}.txt`)
  const args = [CHILD, vault, String(hops), fsync ? '1' : '0', finish ? '1' : '0']
  const { stdout } = await run('strace', ['-f', '-c', '-o', out, process.execPath, ...args], { maxBuffer: 1 << 20 })
  return { steps: JSON.parse(stdout).steps, counts: parseStraceSummary(await readFile(out, 'utf8')) }
}

/**
 * System calls per hop of the loop, by name, and their total; `flushes`
 * counts fsync and fdatasync.
 */
export async function syscallsPerHop({ short, long, fsync, finish = false }) {
  const base = await mkdtemp(join(tmpdir(), 'vaultplan-strace-'))
  try {
    const a = await counted(base, short, fsync, finish)
    const b = await counted(base, long, fsync, finish)
    const hops = b.steps - a.steps
    const perHop = {}
    for (const name of new Set([...Object.keys(a.counts), ...Object.keys(b.counts)])) {
      const value = ((b.counts[name] ?? 0) - (a.counts[name] ?? 0)) / hops
      if (value >= 0.05) perHop[name] = +value.toFixed(2)
    }
    const total = +Object.values(perHop).reduce((sum, value) => sum + value, 0).toFixed(1)
    const flushes = +((perHop.fsync ?? 0) + (perHop.fdatasync ?? 0)).toFixed(2)
    return { hops, perHop, total, flushes }
  } finally {
    await rm(base, { recursive: true, force: true })
  }
}
