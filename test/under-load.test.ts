import { describe, expect, it } from 'vitest'
import { parsePlanDocument, PlanValidationError, type PlanIssue } from 'vaultplan'

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
