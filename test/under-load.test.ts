import { readdir, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parsePlanDocument, PlanValidationError, runPlan, RunStateError, searchRuns, type PlanIssue } from 'vaultplan'
import { firstWordAt } from '../src/memory/search-runs.js'
import { scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { note, tempDir, writeVault } from './helpers/vault.js'

/** The issues `parsePlanDocument` throws for `text`, code and message; any other error is rethrown. */
function issuesOf(text: string): Pick<PlanIssue, 'code' | 'message'>[] {
  try {
    parsePlanDocument(text)
  } catch (error) {
    if (!(error instanceof PlanValidationError)) throw error
    return error.issues.map(({ code, message }) => ({ code, message }))
  }
  throw new Error('the document parsed')
}

describe('a plan document of a hundred thousand lines', () => {
  const lines = 160_000

  it('reads a section of 160k knob lines or 160k edges to its plan errors, not a stack overflow', () => {
    const knobs = issuesOf(`## a\ntype: start\n${'max_visits: 3\n'.repeat(lines)}Do it.\n`)
    expect(knobs.length).toBe(lines - 1)
    expect(knobs[0]).toEqual({ code: 'invalid-frontmatter', message: 'invalid YAML: Map keys must be unique' })
    const edges = issuesOf(`## a\ntype: start\nGo.\n### Next\n${'- [[b]]\n'.repeat(lines)}\n## b\nEnd.\n`)
    expect(edges.map((issue) => issue.code)).toEqual(['unreachable', 'unreadable-next'])
    const nextLines = issuesOf(`## a\ntype: start\nGo.\n${'Next:\n'.repeat(lines)}\n## b\nEnd.\n`)
    expect(nextLines.map((issue) => issue.code)).toEqual(['unreachable', 'unreadable-next'])
  })

  it('refuses a document of 160k sections with too-many-sections, and takes 5,000', () => {
    const sections = (count: number) =>
      Array.from(
        { length: count },
        (_, n) => `## n${n}\n${n === 0 ? 'type: start\n' : ''}Step ${n}.\n${n + 1 < count ? `### Next\n- [[n${n + 1}]]\n` : ''}`,
      ).join('\n')
    expect(issuesOf(sections(lines))).toEqual([
      {
        code: 'too-many-sections',
        message: 'the document has 160000 `## <node-id>` sections, over the 5000 a plan document may hold; split the plan into subplans',
      },
    ])
    expect(parsePlanDocument(sections(5_000)).nodes.size).toBe(5_000)
  })
})

describe('`plan: generate` into a folder that is a symlink', () => {
  it('is refused with trace-outside-vault before the planner is asked, leaving no temporary folder', async () => {
    const dir = await writeVault({
      'outline.md': note({ front: { type: 'start' }, title: 'Outline', next: ['[[research]]'] }),
      'research.md': note({ front: { plan: 'generate' }, title: 'Research', next: ['[[write]]'] }),
      'write.md': note({ title: 'Write' }),
    })
    const elsewhere = await tempDir()
    await symlink(elsewhere, join(dir, 'research'))
    const llm = scriptedJudge(() => '## find\ntype: start\nFind.\n')
    const refused = runPlan(dir, { query: 'solar', fsync: false, llm, work: scriptedWorker() })
    await expect(refused).rejects.toThrow(RunStateError)
    await expect(refused).rejects.toMatchObject({ code: 'trace-outside-vault', data: { path: join(dir, 'research') } })
    expect(llm.calls).toEqual([])
    expect((await readdir(dir)).sort()).toEqual(['00_plan-trace', 'outline.md', 'research', 'research.md', 'write.md'])
    expect(await readdir(elsewhere)).toEqual([])
  })

  it('refuses a run vault that is a symlink the same way, leaving nothing beside it', async () => {
    const plan = await writeVault({ 'a.md': note({ front: { type: 'start' }, title: 'A' }) })
    const runs = await tempDir()
    const elsewhere = await tempDir()
    await symlink(elsewhere, join(runs, 'run'))
    const refused = runPlan(plan, { query: 'solar', fsync: false, runVault: join(runs, 'run'), work: scriptedWorker() })
    await expect(refused).rejects.toMatchObject({ name: 'RunStateError', code: 'trace-outside-vault', data: { path: join(runs, 'run') } })
    expect(await readdir(runs)).toEqual(['run'])
    expect(await readdir(elsewhere)).toEqual([])
  })
})

describe('a search with a long query', () => {
  it('refuses a query over 64 words or 1,000 characters with a RangeError that says so', async () => {
    const root = await tempDir()
    const words = (count: number) => Array.from({ length: count }, (_, n) => `word${n}`).join(' ')
    await expect(searchRuns(root, words(5_000))).rejects.toThrow(
      new RangeError(
        'the query has 5000 words (43889 characters), over the 64 words and 1000 characters a search takes; search with the few words that matter',
      ),
    )
    await expect(searchRuns(root, 'x'.repeat(1_001))).rejects.toThrow(RangeError)
    expect(await searchRuns(root, words(64))).toEqual([])
  })

  it('finds where a snippet starts in one pass, where the scan per word found it', () => {
    const alphabet = fc.constantFrom('a', 'b', 'É', 'é', '1', ' ', '-', '$', '😀', '.')
    const text = fc.array(alphabet, { maxLength: 40 }).map((chars) => chars.join(''))
    const word = fc.array(alphabet, { minLength: 1, maxLength: 4 }).map((chars) => chars.join('').toLowerCase())
    const escape = (value: string) => value.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
    const byScans = (lower: string, words: string[]) => {
      let at = -1
      for (const each of words) {
        const found = lower.search(new RegExp(`(^|[^\\p{L}\\p{N}])${escape(each)}`, 'u'))
        if (found !== -1 && (at === -1 || found < at)) at = found
      }
      return at
    }
    fc.assert(
      fc.property(text, fc.array(word, { minLength: 1, maxLength: 4 }), (raw, words) => {
        const lower = raw.toLowerCase()
        expect(firstWordAt(lower, words)).toBe(byScans(lower, words))
      }),
      { numRuns: 2_000 },
    )
  })
})
