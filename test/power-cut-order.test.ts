import { basename, dirname, join, relative } from 'node:path'
import { realpath } from 'node:fs/promises'
import { beforeEach, describe, expect, it, vi } from 'vitest'
import { loadPlan, runPlan } from 'vaultplan'
import { linear } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { readTree, tempDir, writeVault } from './helpers/vault.js'

// What a power cut keeps is what was flushed, in the order it was: these tests
// record the flushes (fsync of a file or a folder) and the renames of the
// writes done once per run, and check that each rename comes after the flushes
// that make what it moves whole on the disk (the crash harness's power mode
// cuts the power in between: test/crash/power.mjs).

type Op = { op: 'sync'; path: string } | { op: 'rename'; from: string; to: string } | { op: 'write'; path: string }
const log: Op[] = []

vi.mock('node:fs/promises', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs/promises')>()
  const open: typeof real.open = async (path, flags, mode) => {
    const handle = await real.open(path, flags, mode)
    if (typeof flags === 'number' ? (flags & 3) !== 0 : /[wa+]/.test(flags ?? 'r')) log.push({ op: 'write', path: String(path) })
    const sync = handle.sync.bind(handle)
    handle.sync = async () => {
      await sync()
      log.push({ op: 'sync', path: String(path) })
    }
    return handle
  }
  const rename: typeof real.rename = async (from, to) => {
    await real.rename(from, to)
    log.push({ op: 'rename', from: String(from), to: String(to) })
  }
  const mocked = { ...real, open, rename }
  return { ...mocked, default: mocked }
})

beforeEach(() => {
  log.length = 0
})

const options = { query: 'Ship it', fsync: true, llm: noJudge() } as const

/** The index of the first op that `test` accepts after `from`, or -1. */
function find(test: (op: Op) => boolean, from = 0): number {
  const at = log.slice(from).findIndex(test)
  return at === -1 ? -1 : at + from
}

/** Whether `path` was flushed between ops `from` and `to`. */
function syncedBetween(path: string, from: number, to: number): boolean {
  return log.slice(from, to).some((op) => op.op === 'sync' && op.path === path)
}

/** Checks the copy's order: every file and folder of the copy flushed before its rename into place, the rename before the run writes in it. */
function expectDurableCopy(runVault: string, files: string[]): void {
  const into = find((op) => op.op === 'rename' && op.to === runVault)
  expect(into).toBeGreaterThan(-1)
  const temp = (log[into] as { from: string }).from
  const folders = new Set([temp, ...files.map((file) => dirname(join(temp, file)))])
  expect(files.filter((file) => !syncedBetween(join(temp, file), 0, into))).toEqual([])
  expect([...folders].filter((folder) => !syncedBetween(folder, 0, into))).toEqual([])
  const firstWrite = find((op) => op.op === 'write' && op.path.startsWith(`${runVault}/`), into)
  expect(firstWrite).toBeGreaterThan(into)
  expect(syncedBetween(dirname(runVault), into, firstWrite)).toBe(true)
}

describe('a power cut during the writes made once per run loses nothing (fsync: true)', () => {
  it('the copy of a template into a run vault is flushed whole before it is renamed into place, and the rename before the run goes on', async () => {
    const plan = await writeVault({ ...linear(), 'assets/picture.txt': 'a picture\n' })
    const runVault = join(await realpath(await tempDir()), 'runs', 'first')
    const result = await runPlan(plan, { ...options, runVault, work: scriptedWorker() })
    expect(result.status).toBe('completed')
    expectDurableCopy(runVault, ['a.md', 'b.md', 'c.md', 'assets/picture.txt'])
    // The new `runs/` folder's name too, in the folder above it.
    expect(
      syncedBetween(
        dirname(dirname(runVault)),
        0,
        find((op) => op.op === 'rename' && op.to === runVault),
      ),
    ).toBe(true)
  })

  it('an in-memory plan written out to its run vault (savePlan) is flushed whole, its subfolders included, before the rename', async () => {
    const plan = await writeVault({
      'a.md': '---\ntype: start\n---\n# A\n\nDo a.\n\n## Next\n- [[steps/b]]\n',
      'steps/b.md': '# B\n\nDo b.\n\n## Next\n- [[c]]\n',
      'c.md': '# C\n\nDo c.\n',
    })
    const graph = await loadPlan(plan)
    const runVault = join(await realpath(await tempDir()), 'run')
    const result = await runPlan(graph, { ...options, runVault, work: scriptedWorker() })
    expect(result.status).toBe('completed')
    expect(Object.keys(await readTree(runVault, { skipTrace: true }))).toEqual(['a.md', 'c.md', 'steps/b.md'])
    expectDurableCopy(runVault, ['a.md', 'c.md', 'steps/b.md'])
  })

  it('`fresh: true` flushes the archive folder and the moves into it before the trace moves, and the trace move before the new run writes', async () => {
    const vault = await realpath(await writeVault(linear()))
    await runPlan(vault, { ...options, work: scriptedWorker() })
    log.length = 0
    const again = await runPlan(vault, { ...options, fresh: true, work: scriptedWorker() })
    expect(again.status).toBe('completed')
    const folder = join(vault, '00_plan-trace')
    const traceMove = find((op) => op.op === 'rename' && op.from === join(folder, 'trace.md'))
    expect(traceMove).toBeGreaterThan(-1)
    const target = dirname((log[traceMove] as { to: string }).to)
    expect(relative(folder, target)).toMatch(/^archive\/[\w.-]+$/)
    const firstMove = find((op) => op.op === 'rename' && op.to.startsWith(`${target}/`))
    const lastMove = log.slice(0, traceMove).findLastIndex((op) => op.op === 'rename' && op.to.startsWith(`${target}/`))
    expect(basename((log[firstMove] as { to: string }).to)).toBe('outputs')
    // The archive folder's name is on the disk before anything moves into it.
    expect(syncedBetween(dirname(target), 0, firstMove)).toBe(true)
    expect(syncedBetween(folder, 0, firstMove)).toBe(true)
    // The outputs' (and final note's) moves before the trace's: no power cut leaves the trace archived and the outputs in place.
    expect(syncedBetween(target, lastMove, traceMove) && syncedBetween(folder, lastMove, traceMove)).toBe(true)
    // The trace's move before the new run's trace is written.
    const newTrace = find((op) => op.op === 'rename' && op.to === join(folder, 'trace.md'), traceMove)
    expect(newTrace).toBeGreaterThan(traceMove)
    expect(syncedBetween(target, traceMove, newTrace) && syncedBetween(folder, traceMove, newTrace)).toBe(true)
  })
})
