import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { loadPlan, runPlan, type PlanGraph } from 'vaultplan'
import { linear } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { readTree, tempDir, writeVault } from './helpers/vault.js'

/** The file call of the copy under `under` that stops the process, as a kill there would (-1: none); the rename into place ends the copy. */
const kill = vi.hoisted(() => ({ under: '', at: -1, seen: 0 }))

vi.mock('node:fs/promises', async (importOriginal) => {
  const actual = await importOriginal<typeof import('node:fs/promises')>()
  const killable = <F extends (...args: never[]) => Promise<unknown>>(name: string, call: F) =>
    (async (...args: Parameters<F>) => {
      const here = kill.under !== '' && (args as unknown[]).slice(0, 2).some((arg) => typeof arg === 'string' && arg.startsWith(kill.under))
      if (here && kill.seen++ === kill.at) throw new Error(`killed at ${name} #${kill.at}`)
      if (name === 'rename' && (args as unknown[])[1] === kill.under) kill.under = ''
      return call(...args)
    }) as unknown as F
  const calls = {
    mkdir: killable('mkdir', actual.mkdir),
    copyFile: killable('copyFile', actual.copyFile),
    open: killable('open', actual.open),
    rename: killable('rename', actual.rename),
    symlink: killable('symlink', actual.symlink),
  }
  return { ...actual, ...calls, default: { ...actual, ...calls } }
})

const options = { query: 'Ship it', fsync: false, llm: noJudge() } as const

/**
 * Kills the run at each file call of the copy into the run vault in turn,
 * until a run gets through. After each kill the template is
 * unchanged and the run vault is absent, empty or holds the whole plan; the next
 * run completes in it.
 */
async function killEverywhere(template: string, plan: string | PlanGraph): Promise<number> {
  const before = await readTree(template)
  const notes = Object.keys(linear()).sort()
  for (let at = 0; at < 500; at++) {
    const runVault = join(await tempDir(), 'run')
    Object.assign(kill, { under: runVault, at, seen: 0 })
    const killed = await runPlan(plan, { ...options, runVault, work: scriptedWorker() }).then(
      () => false,
      (error: Error) => (/^killed at/.test(error.message) ? true : Promise.reject(error)),
    )
    Object.assign(kill, { under: '', at: -1, seen: 0 })
    if (!killed) return at
    expect(await readTree(template), `killed at call #${at}`).toEqual(before)
    const made = await readdir(runVault).catch(() => undefined)
    if (made !== undefined && made.length > 0) {
      const graph = await loadPlan(runVault)
      expect([...graph.nodes.values()].map((node) => node.file).sort(), `killed at call #${at}: the run vault holds the whole plan`).toEqual(notes)
      expect(graph.check().errors).toEqual([])
    }
    await expect(runPlan(plan, { ...options, runVault, work: scriptedWorker() }), `killed at call #${at}`).resolves.toMatchObject({
      status: 'completed',
      output: 'c v1',
    })
  }
  throw new Error('the run never got through')
}

describe('a run killed while the plan is copied into its run vault', () => {
  it('a template folder: at any file call, no run vault or a whole one, and the next run completes in it', async () => {
    const template = await writeVault(linear())
    expect(await killEverywhere(template, template)).toBeGreaterThan(3)
  })

  it('an in-memory graph written out: at any file call, no run vault or a whole one, and the next run completes in it', async () => {
    const template = await writeVault(linear())
    expect(await killEverywhere(template, await loadPlan(template))).toBeGreaterThan(3)
  })
})
