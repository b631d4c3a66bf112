/**
 * Where a bench writes what it measured: `bench/results/<name>.json`, with
 * the commit that was measured, the machine it ran on and the date, so
 * docs/performance.md can be rendered from it (scripts/docs-bench.mjs) and
 * a reader can tell what the figures stand for.
 */
import { execFileSync } from 'node:child_process'
import { mkdir, writeFile } from 'node:fs/promises'
import { cpus, loadavg, tmpdir, totalmem } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
export const resultsDir = join(here, '..', 'results')

const round2 = (value) => +value.toFixed(2)

/** The commit of the working tree, with `dirty: true` when it has changes the commit does not hold. */
export function commit() {
  const git = (...args) => execFileSync('git', args, { cwd: here, encoding: 'utf8' }).trim()
  try {
    return { sha: git('rev-parse', 'HEAD'), dirty: git('status', '--porcelain', '--untracked-files=no', '--', '../../src').length > 0 }
  } catch {
    return { sha: 'unknown', dirty: false }
  }
}

/** The file system type of `dir` (`df`: `stat -f` says ext2/ext3 for ext4), or 'unknown'. */
function fileSystem(dir) {
  try {
    return execFileSync('df', ['--output=fstype', dir], { encoding: 'utf8' }).trim().split('\n').at(-1)
  } catch {
    return 'unknown'
  }
}

/** The machine a bench runs on; `loadAverage` is the 1, 5 and 15 minute load average now. */
export function machine() {
  const list = cpus()
  return {
    cpus: list.length,
    model: list[0]?.model ?? 'unknown',
    memoryGB: round2(totalmem() / 2 ** 30),
    node: process.version,
    platform: `${process.platform} ${process.arch}`,
    tmpdir: tmpdir(),
    fileSystem: fileSystem(tmpdir()),
    loadAverage: loadavg().map(round2),
  }
}

/**
 * Writes `bench/results/<name>.json`: `{ name, commit, date, machine, loadAverageAtStart, ...data }`.
 * `started` is what {@link startRecord} returned when the bench began.
 */
export async function writeResult(name, started, data) {
  const { loadAverage, ...rest } = machine()
  const result = {
    name,
    commit: started.commit,
    date: started.date,
    machine: { ...rest, loadAverageAtStart: started.loadAverage, loadAverageAtEnd: loadAverage },
    ...data,
  }
  await mkdir(resultsDir, { recursive: true })
  const path = join(resultsDir, `${name}.json`)
  await writeFile(path, `${JSON.stringify(result, null, 2)}\n`)
  return path
}

/** What a bench notes as it begins: the commit, the date and the load average. */
export function startRecord() {
  return { commit: commit(), date: new Date().toISOString(), loadAverage: loadavg().map(round2) }
}
