import { join, sep } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { runPlan } from 'vaultplan'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { readTree, writeVault } from './helpers/vault.js'

/** The rename into `00_plan-trace/archive/` that stops the process, as a kill there would (-1: none). */
const kill = vi.hoisted(() => ({ at: -1, seen: 0 }))

vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>()
  const rename: typeof actual.rename = async (from, to) => {
    if (String(to).includes(`${sep}archive${sep}`) && kill.seen++ === kill.at) throw new Error(`killed before the archive's rename #${kill.at}`)
    return actual.rename(from, to)
  }
  return { ...actual, rename, default: { ...actual, rename } }
})

const options = { query: 'Announce the release', fsync: false, llm: reviewJudge('review v2') } as const
const TRACE = '00_plan-trace/'

/** The files of a finished run (its trace, outputs, final note, picture), by their path under `00_plan-trace/`. */
async function runFiles(dir: string): Promise<Record<string, string>> {
  const tree = await readTree(dir)
  return Object.fromEntries(
    Object.entries(tree)
      .filter(([path]) => path.startsWith(TRACE) && !path.startsWith(`${TRACE}archive/`) && !path.slice(TRACE.length).startsWith('.'))
      .map(([path, text]) => [path.slice(TRACE.length), text]),
  )
}

describe('`fresh: true` killed while it archives the last run', () => {
  it('at each of its renames: the next fresh start archives the old run whole, byte for byte, and runs again', async () => {
    for (let at = 0; at < 4; at++) {
      const dir = await writeVault(draftReview())
      const first = await runPlan(dir, { ...options, work: scriptedWorker() })
      const old = await runFiles(dir)
      expect(Object.keys(old)).toEqual(expect.arrayContaining(['trace.md', 'final.md', 'outputs/0001-draft.md', 'outputs/0005-send.md']))

      Object.assign(kill, { at, seen: 0 })
      await expect(runPlan(dir, { ...options, work: scriptedWorker(), fresh: true })).rejects.toThrow(/killed before/)
      Object.assign(kill, { at: -1, seen: 0 })

      // The person runs it again: the old run is archived whole, none of its files overwritten by the new run.
      const again = await runPlan(dir, { ...options, work: scriptedWorker(), fresh: true })
      expect(again).toMatchObject({ status: 'completed', steps: 5 })
      const tree = await readTree(dir)
      const archived = Object.fromEntries(Object.keys(old).map((name) => [name, tree[join(`${TRACE}archive`, first.runId, name)]]))
      expect(archived, `killed at rename #${at}`).toEqual(old)
    }
  })

  it('part way, then a plain run: the old run stays archived whole and the run starts over, never resumed without its outputs', async () => {
    const dir = await writeVault(draftReview())
    const first = await runPlan(dir, { ...options, work: scriptedWorker(), maxSteps: 2 })
    expect(first.status).toBe('stopped')
    const old = await runFiles(dir)

    // Killed once the outputs were archived, before the trace was.
    Object.assign(kill, { at: 1, seen: 0 })
    await expect(runPlan(dir, { ...options, work: scriptedWorker(), fresh: true })).rejects.toThrow(/killed before/)
    Object.assign(kill, { at: -1, seen: 0 })

    const work = scriptedWorker()
    expect(await runPlan(dir, { ...options, work })).toMatchObject({ status: 'completed', steps: 5 })
    expect(work.calls[0]).toMatchObject({ node: 'draft', visit: 1, step: 1 })
    const tree = await readTree(dir)
    const archived = Object.fromEntries(Object.keys(old).map((name) => [name, tree[join(`${TRACE}archive`, first.runId, name)]]))
    expect(archived).toEqual(old)
    // And a later fresh start archives this run beside it.
    await expect(runPlan(dir, { ...options, work: scriptedWorker(), fresh: true })).resolves.toMatchObject({ status: 'completed' })
  })
})
