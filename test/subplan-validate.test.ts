import { mkdir } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { loadPlan, PlanValidationError, runPlan } from 'vaultplan'
import { noJudge } from './helpers/scripted.js'
import { nestedPlan } from './helpers/subplans.js'
import { note, writeVault } from './helpers/vault.js'

const options = { query: 'Write a report on solar power', fsync: false, llm: noJudge() } as const

describe('validation of subplans with the parent', () => {
  const errors = async (files: Record<string, string>, extra?: (dir: string) => Promise<void>) => {
    const dir = await writeVault(files)
    await extra?.(dir)
    const graph = await loadPlan(dir)
    try {
      graph.validate()
      return []
    } catch (error) {
      return (error as PlanValidationError).issues.filter((issue) => issue.severity === 'error').map(({ code, file, message }) => ({ code, file, message }))
    }
  }
  const withPlan = (plan: string) => {
    const files = Object.fromEntries(Object.entries(nestedPlan()).filter(([file]) => !file.startsWith('research/')))
    return { ...files, 'research.md': note({ front: { plan }, title: 'Research', next: ['[[write]]'] }) }
  }

  it('reports a missing folder as `invalid-subplan`', async () => {
    expect(await errors(withPlan('nowhere'))).toEqual([
      {
        code: 'invalid-subplan',
        file: 'research.md',
        message: "`plan: nowhere`: the folder `nowhere/` is missing or holds no notes; create it with the subplan's notes (or write `plan: generate`)",
      },
    ])
  })

  it('reports an empty folder as `invalid-subplan`', async () => {
    const found = await errors(withPlan('empty'), (dir) => mkdir(`${dir}/empty/attachments`, { recursive: true }).then(() => undefined))
    expect(found.map((issue) => [issue.code, issue.file])).toEqual([['invalid-subplan', 'research.md']])
  })

  it('reports a folder outside the vault as `invalid-subplan`', async () => {
    const found = await errors(withPlan('../elsewhere'))
    expect(found).toEqual([
      {
        code: 'invalid-subplan',
        file: 'research.md',
        message: '`plan: ../elsewhere` leads outside the vault; a subplan is a folder inside it, beside the note',
      },
    ])
  })

  it('reports a note nested in a subplan of itself as `invalid-subplan`', async () => {
    const files = nestedPlan()
    files['research/summarise.md'] = note({ front: { plan: '..' }, title: 'Summarise' })
    const found = await errors(files)
    expect(found.map((issue) => [issue.code, issue.file])).toEqual([['invalid-subplan', 'research/summarise.md']])
    expect((await errors(withPlan('.'))).map((issue) => [issue.code, issue.file, issue.message.includes('holds this note itself')])).toEqual([
      ['invalid-subplan', 'research.md', true],
    ])
  })

  it('tells the subplan’s problems with paths from the top vault', async () => {
    const files = nestedPlan()
    files['research/summarise.md'] = note({ title: 'Summarise', next: ['[[nowhere]]'] })
    // The broken edge is the one error: no terminal reachable inside the subplan is its consequence.
    expect(await errors(files)).toEqual([{ code: 'dangling-edge', file: 'research/summarise.md', message: 'edge `next` -> `[[nowhere]]` matches no note' }])
    await expect(runPlan(await writeVault(files), { ...options, work: async () => 'never' })).rejects.toBeInstanceOf(PlanValidationError)
  })

  it('says why a link from the parent into a subplan’s note dangles', async () => {
    const files = nestedPlan()
    files['outline.md'] = note({ front: { type: 'start' }, title: 'Outline', next: ['[[research]]', 'skip -> [[research/summarise]]'] })
    const found = await errors(files)
    expect(found).toEqual([
      {
        code: 'dangling-edge',
        file: 'outline.md',
        message:
          "edge `skip` -> `[[research/summarise]]` points into a subplan's folder: that note belongs to the subplan, which runs on its own; link the note whose `plan:` names the folder",
      },
    ])
  })
})
