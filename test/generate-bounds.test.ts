import { describe, expect, it } from 'vitest'
import { loadPlan, PlanValidationError, runPlan, type StepInput } from 'vaultplan'
import { note, writeVault } from './helpers/vault.js'

const query = 'Write a report on solar power'

const work = async (step: StepInput) => `${step.plan ?? ''}/${step.node.id}`

/** A vault whose notes run subplans nested `depth` folders deep: `d1/d2/.../d<depth>/leaf.md`. */
function nestedFolders(depth: number): Record<string, string> {
  const files: Record<string, string> = {
    'start.md': note({ front: { type: 'start' }, title: 'Start', next: ['[[go]]'] }),
    'go.md': note({ front: { plan: 'd1' }, title: 'Go', next: ['[[end]]'] }),
    'end.md': note({ title: 'End' }),
  }
  let folder = ''
  for (let level = 1; level <= depth; level++) {
    folder = `${folder}d${level}/`
    if (level < depth) files[`${folder}go.md`] = note({ front: { type: 'start', plan: `d${level + 1}` }, title: `Go ${level}` })
    else files[`${folder}leaf.md`] = note({ title: 'Leaf' })
  }
  return files
}

describe('subplans nested deeper than 8', () => {
  it('are `invalid-subplan` at validation', async () => {
    const graph = await loadPlan(await writeVault(nestedFolders(9)))
    const error = (() => {
      try {
        graph.validate()
      } catch (caught) {
        return caught
      }
    })()
    expect(error).toBeInstanceOf(PlanValidationError)
    const issues = (error as PlanValidationError).issues.filter((issue) => issue.code === 'invalid-subplan')
    expect(issues).toMatchObject([{ severity: 'error', file: 'd1/d2/d3/d4/d5/d6/d7/d8/go.md' }])
    expect(issues[0]!.message).toContain('8 deep')
  })

  it('refuse to run, while 8 deep runs', async () => {
    const deep = await writeVault(nestedFolders(9))
    await expect(runPlan(deep, { query, fsync: false, work })).rejects.toMatchObject({ name: 'PlanValidationError' })
    const ok = await runPlan(await writeVault(nestedFolders(8)), { query, fsync: false, work })
    expect(ok).toMatchObject({ status: 'completed', output: '/end', steps: 3 })
  })
})
