import { readFile, rename, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { completeStep, nextStep, PlanValidationError, runPlan, RunStateError } from 'vaultplan'
import { linear } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { shownInNote, statuses, traceEntries, writeVault } from './helpers/vault.js'

const options = { query: 'Ship it', fsync: false, llm: noJudge() } as const

/** What Obsidian does on a rename: the file moves, and the links to it are rewritten. */
async function obsidianRename(dir: string, from: string, to: string, linkedFrom: string[]): Promise<void> {
  await rename(join(dir, `${from}.md`), join(dir, `${to}.md`))
  for (const file of linkedFrom) {
    const text = await readFile(join(dir, file), 'utf8')
    await writeFile(join(dir, file), text.replaceAll(`[[${from}]]`, `[[${to}]]`))
  }
}

/** A worker that does `change` once, from inside the first visit of `at`. */
/** A worker during whose work of `at` a person changes the vault, once they see the note say `active`. */
function changingWorker(dir: string, at: string, change: () => Promise<void>) {
  return scriptedWorker(async (step) => {
    if (step.node.id !== at || step.visit !== 1) return
    await shownInNote(dir, `${at}.md`, 'active')
    await change()
  })
}

describe('a person renames or deletes the note being worked', () => {
  it('renamed the way Obsidian renames (links rewritten): the run follows it under its new name', async () => {
    const dir = await writeVault(linear())
    const work = changingWorker(dir, 'b', () => obsidianRename(dir, 'b', 'bee', ['a.md']))
    const result = await runPlan(dir, { ...options, work })
    expect(result).toMatchObject({ status: 'completed', output: 'c v1', visits: { a: 1, bee: 1, c: 1 } })
    expect(await statuses(dir)).toEqual({ a: 'done', bee: 'done', c: 'done' })
    expect((await traceEntries(dir)).map((entry) => entry.heading)).toEqual([
      'Step 1 · [[a]] · visit 1',
      'Step 2 · [[bee]] · visit 1',
      'Step 3 · [[c]] · visit 1',
    ])
  })

  it('renamed between two stepping calls: completeStep with the key nextStep handed out finishes it under its new name', async () => {
    const dir = await writeVault(linear())
    const first = await nextStep(dir, options)
    const second = first.kind === 'work' ? await completeStep(dir, first.key, { output: 'a v1' }, options) : first
    expect(second).toMatchObject({ kind: 'work', node: { id: 'b' }, visit: 1 })
    if (second.kind !== 'work') return
    await obsidianRename(dir, 'b', 'bee', ['a.md'])
    const third = await completeStep(dir, second.key, { output: 'bee v1' }, options)
    expect(third).toMatchObject({ kind: 'work', node: { id: 'c' }, visit: 1 })
    if (third.kind !== 'work') return
    expect(await completeStep(dir, third.key, { output: 'c v1' }, options)).toMatchObject({ kind: 'completed' })
    expect(await statuses(dir)).toEqual({ a: 'done', bee: 'done', c: 'done' })
    expect((await traceEntries(dir)).map((entry) => entry.heading)).toEqual([
      'Step 1 · [[a]] · visit 1',
      'Step 2 · [[bee]] · visit 1',
      'Step 3 · [[c]] · visit 1',
    ])
  })

  it('deleted between two stepping calls, another note set active by a person: the old key is `stale-step`, nothing written', async () => {
    const dir = await writeVault(linear())
    const first = await nextStep(dir, options)
    const second = first.kind === 'work' ? await completeStep(dir, first.key, { output: 'a v1' }, options) : first
    if (second.kind !== 'work') throw new Error('expected a work step')
    // b's text moved into a new note that is not b (another inode, other words): no rename to follow. The new note is
    // written before b is removed, so it cannot get the inode b just freed (file systems reuse them at once).
    await writeFile(join(dir, 'bee.md'), '---\nstatus: active\n---\n# Bee\n\nSomething else.\n\n## Next\n- [[c]]\n')
    await rm(join(dir, 'b.md'))
    await writeFile(join(dir, 'a.md'), (await readFile(join(dir, 'a.md'), 'utf8')).replace('[[b]]', '[[bee]]'))
    const error = await completeStep(dir, second.key, { output: 'b v1' }, options).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(RunStateError)
    expect((error as RunStateError).code).toBe('stale-step')
    // The step to go on with, named as a person finds it: the note of the vault, no folder of a subplan before it.
    expect((error as RunStateError).message).toContain(`The pending step is \`bee\`, visit 1`)
  })

  it('renamed with the links left as they were: a PlanValidationError naming the dangling link, and the run goes on once they are fixed', async () => {
    const dir = await writeVault(linear())
    const work = changingWorker(dir, 'b', () => rename(join(dir, 'b.md'), join(dir, 'bee.md')))
    const error = await runPlan(dir, { ...options, work }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(PlanValidationError)
    expect((error as PlanValidationError).issues).toContainEqual(expect.objectContaining({ code: 'dangling-edge', file: 'a.md' }))
    await writeFile(join(dir, 'a.md'), (await readFile(join(dir, 'a.md'), 'utf8')).replace('[[b]]', '[[bee]]'))
    // The renamed note is still `active`: a run there, worked again (the person moved it, as far as the run can tell).
    const again = await runPlan(dir, { ...options, work: scriptedWorker() })
    expect(again).toMatchObject({ status: 'completed', output: 'c v1' })
  })

  it('deleted: a PlanValidationError when the plan needs it, never a raw ENOENT', async () => {
    const dir = await writeVault(linear())
    const work = changingWorker(dir, 'b', () => rm(join(dir, 'b.md')))
    const error = await runPlan(dir, { ...options, work }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(PlanValidationError)
    expect((error as PlanValidationError).issues).toContainEqual(expect.objectContaining({ code: 'dangling-edge', file: 'a.md' }))
  })

  it('deleted, with the plan valid without it: a RunStateError `node-missing` naming the note', async () => {
    const dir = await writeVault(linear())
    const work = changingWorker(dir, 'b', async () => {
      await rm(join(dir, 'b.md'))
      await writeFile(join(dir, 'a.md'), (await readFile(join(dir, 'a.md'), 'utf8')).replace('[[b]]', '[[c]]'))
    })
    const error = await runPlan(dir, { ...options, work }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(RunStateError)
    expect(error).toMatchObject({ code: 'node-missing', message: expect.stringContaining('`b.md` was deleted') })
  })
})

describe('a person deletes `00_plan-trace/outputs/`', () => {
  it('between two runs: the resume makes it again and finishes the run', async () => {
    const dir = await writeVault(linear())
    const failing = scriptedWorker((step) => {
      if (step.node.id === 'b') throw new Error('not now')
    })
    await expect(runPlan(dir, { ...options, work: failing })).rejects.toThrow('not now')
    await rm(join(dir, '00_plan-trace/outputs'), { recursive: true })
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work })
    expect(result).toMatchObject({ status: 'completed', output: 'c v1', steps: 3 })
    expect(work.calls.map((call) => `${call.node} v${call.visit}`)).toEqual(['b v1', 'c v1'])
  })

  it('while the run goes: the next output makes it again', async () => {
    const dir = await writeVault(linear())
    const work = changingWorker(dir, 'b', () => rm(join(dir, '00_plan-trace/outputs'), { recursive: true }))
    const result = await runPlan(dir, { ...options, work })
    expect(result).toMatchObject({ status: 'completed', output: 'c v1', steps: 3 })
  })
})
