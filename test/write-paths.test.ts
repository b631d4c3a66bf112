import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { recordEntry, runPlan, searchRuns } from 'vaultplan'
import { graphCommand } from '../src/cli/cli-graph.js'
import { linear } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { readTree, tempDir, writeVault } from './helpers/vault.js'

/**
 * Every write of a run's own files (trace, outputs, final note, journal,
 * lock, archive, ledger, `graph --write`, the search index, a run vault)
 * crossed with a symlink planted at each part of its path: nothing is ever
 * written outside the vault, and a symlinked folder on the way is refused
 * with `trace-outside-vault` before anything goes through it.
 */

const quiet = { stdout: { write: () => true }, stderr: { write: () => true }, env: {} }

/** A vault where `b` fails once: the run stops with a trace, outputs and a journal to resume from. */
async function interruptedRun(dir: string): Promise<void> {
  const work = scriptedWorker((step) => {
    if (step.node.id === 'b') throw new Error('not now')
  })
  await runPlan(dir, { query: 'q', work, llm: noJudge() }).catch(() => undefined)
}

async function completedRun(dir: string): Promise<void> {
  await runPlan(dir, { query: 'q', work: scriptedWorker(), llm: noJudge() })
}

interface WritePath {
  name: string
  /** Brings the vault to where the write happens next. */
  before?: (dir: string) => Promise<void>
  /** The parts of the write's path, relative to the vault: folders end with `/`. */
  parts: string[]
  write: (dir: string) => Promise<unknown>
}

const writePaths: WritePath[] = [
  {
    name: 'a new run (lock, trace header, outputs, journal, final)',
    parts: ['00_plan-trace/', '00_plan-trace/outputs/', '00_plan-trace/trace.md', '00_plan-trace/.journal'],
    write: (dir) => completedRun(dir),
  },
  {
    name: 'a resumed run (outputs, trace append, journal, final)',
    before: interruptedRun,
    parts: ['00_plan-trace/', '00_plan-trace/outputs/', '00_plan-trace/outputs/0002-b.md', '00_plan-trace/final.md', '00_plan-trace/.journal'],
    write: (dir) => completedRun(dir),
  },
  {
    name: '`fresh: true` archiving the last run',
    before: completedRun,
    parts: ['00_plan-trace/archive/'],
    write: (dir) => runPlan(dir, { query: 'q', fresh: true, work: scriptedWorker(), llm: noJudge() }),
  },
  {
    name: 'a ledger entry',
    parts: ['00_plan-trace/', '00_plan-trace/ledger.md'],
    write: (dir) => recordEntry(dir, { kind: 'fact', text: 'The sky is blue.' }),
  },
  {
    name: 'vaultplan graph --write',
    parts: ['00_plan-trace/', '00_plan-trace/plan-graph.md'],
    write: async (dir) => {
      let said = ''
      const code = await graphCommand([dir, '--write'], { ...quiet, stderr: { write: (text: string) => (said += text) }, cwd: dir })
      // A symlinked run folder is refused when the run is read, before the write: exit 1 and the refusal said, read back as the error.
      if (code !== 0) throw Object.assign(new Error(said), { name: 'RunStateError', code: /is a symlink/.test(said) ? 'trace-outside-vault' : 'other' })
    },
  },
  {
    name: 'a run vault resumed (the copy of a template)',
    before: async (dir) => {
      const plan = await writeVault(linear())
      await runPlan(plan, {
        query: 'q',
        runVault: join(dir, 'run'),
        work: scriptedWorker((step) => {
          if (step.node.id === 'b') throw new Error('not now')
        }),
        llm: noJudge(),
      }).catch(() => undefined)
    },
    parts: ['run/00_plan-trace/', 'run/00_plan-trace/outputs/'],
    write: (dir) => runPlan(join(dir, 'run'), { work: scriptedWorker(), llm: noJudge() }),
  },
]

describe('no write of a run follows a symlink', () => {
  const cases = writePaths.flatMap((path) => path.parts.map((part) => [path.name, part, path] as const))

  it.each(cases)('%s, with a symlink at `%s`', async (_name, part, path) => {
    const dir = await writeVault(linear())
    const outside = await writeVault({ 'keep.md': 'outside the vault\n' })
    await path.before?.(dir)
    const planted = join(dir, part.replace(/\/$/, ''))
    const folder = part.endsWith('/')
    // The run's own file or folder moves outside, and a symlink takes its place.
    const target = join(outside, folder ? 'folder' : 'file')
    if (folder) await mkdir(target)
    else await writeFile(target, await readFile(planted, 'utf8').catch(() => 'a file outside\n'))
    await rmAny(planted)
    await mkdir(join(planted, '..'), { recursive: true })
    await symlink(target, planted)
    const before = await readTree(outside)

    const outcome = await path.write(dir).then(
      () => undefined,
      (error: unknown) => error,
    )

    expect(await readTree(outside)).toEqual(before)
    if (folder || part.endsWith('ledger.md') || part.endsWith('.journal')) expect(outcome).toMatchObject({ name: 'RunStateError', code: 'trace-outside-vault' })
  })

  it('the search index: a symlinked `.vaultplan` is never written through, the search still answers', async () => {
    const root = await tempDir()
    const dir = await writeVault(linear(), join(root, 'plan'))
    await completedRun(dir)
    const outside = await tempDir()
    await symlink(outside, join(root, '.vaultplan'))
    const hits = await searchRuns(root, 'b v1')
    expect(hits.length).toBeGreaterThan(0)
    expect(await readTree(outside)).toEqual({})
  })
})

async function rmAny(path: string): Promise<void> {
  const { rm } = await import('node:fs/promises')
  await rm(path, { recursive: true, force: true })
}
