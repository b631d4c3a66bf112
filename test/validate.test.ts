import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { loadPlan, PlanGraph, PlanValidationError, type PlanNode } from 'vaultplan'
import { issuesOf } from './helpers/issues.js'
import { writeVault } from './helpers/vault.js'

const vaults = fileURLToPath(new URL('../vaults/', import.meta.url))

function node(id: string, edges: [label: string, target: string][], extra: Partial<PlanNode> = {}): PlanNode {
  return {
    id,
    title: id,
    body: '',
    type: 'step',
    status: 'pending',
    maxVisits: 3,
    edges: edges.map(([label, target]) => ({ label, target, conditional: label !== '' && label !== 'next' })),
    frontmatter: {},
    ...extra,
  }
}

describe('the example vaults', () => {
  it.each(['linear', 'draft-review', 'branching'])('%s is valid, without warnings', async (name) => {
    const graph = await loadPlan(join(vaults, name))
    expect(graph.validate()).toEqual([])
  })
})

describe('one broken vault per error code', () => {
  it('dangling-edge points at the link in review.md', async () => {
    expect(await issuesOf(join(vaults, 'broken/dangling-edge'))).toMatchInlineSnapshot(`
      [
        {
          "code": "dangling-edge",
          "column": 21,
          "file": "review.md",
          "line": 11,
          "message": "edge \`needs revision\` -> \`[[drfat]]\` matches no note; did you mean \`[[draft]]\`?",
          "node": "review",
          "severity": "error",
        },
      ]
    `)
  })

  it('cycle-without-exit names the loop', async () => {
    expect(await issuesOf(join(vaults, 'broken/cycle-without-exit'))).toMatchInlineSnapshot(`
      [
        {
          "code": "cycle-without-exit",
          "column": 3,
          "file": "edit.md",
          "line": 6,
          "message": "is in a loop with no way out (\`edit\`, \`write\`); add an edge that leaves the loop",
          "node": "edit",
          "severity": "error",
        },
      ]
    `)
  })

  it('no-start when every note has an incoming edge and none is marked', async () => {
    expect(await issuesOf(join(vaults, 'broken/no-start'))).toMatchInlineSnapshot(`
      [
        {
          "code": "no-start",
          "message": "no note is marked \`type: start\` and every note has an incoming edge; mark the entry note with \`type: start\`",
          "severity": "error",
        },
      ]
    `)
  })

  it('multiple-starts names every marked note', async () => {
    expect(await issuesOf(join(vaults, 'broken/multiple-starts'))).toMatchInlineSnapshot(`
      [
        {
          "code": "multiple-starts",
          "column": 7,
          "file": "research.md",
          "line": 2,
          "message": "2 notes are marked \`type: start\` (\`research\`, \`write\`); keep one",
          "node": "research",
          "severity": "error",
        },
        {
          "code": "multiple-starts",
          "column": 7,
          "file": "write.md",
          "line": 2,
          "message": "2 notes are marked \`type: start\` (\`research\`, \`write\`); keep one",
          "node": "write",
          "severity": "error",
        },
      ]
    `)
  })

  it('a plan that cannot end is reported once, at its loop with no way out (no second no-reachable-terminal)', async () => {
    expect(await issuesOf(fileURLToPath(new URL('fixtures/loop-without-terminal/', import.meta.url)))).toMatchInlineSnapshot(`
      [
        {
          "code": "cycle-without-exit",
          "column": 3,
          "file": "draft.md",
          "line": 9,
          "message": "is in a loop with no way out (\`draft\`, \`review\`, \`send\`); add an edge that leaves the loop",
          "node": "draft",
          "severity": "error",
        },
      ]
    `)
  })

  it('invalid-frontmatter points at the value, counting the frontmatter lines', async () => {
    expect(await issuesOf(join(vaults, 'broken/invalid-frontmatter'))).toMatchInlineSnapshot(`
      [
        {
          "code": "invalid-frontmatter",
          "column": 13,
          "file": "review.md",
          "line": 4,
          "message": "\`max_visits\` must be an integer from 1 up, got \`"three"\`",
          "node": "review",
          "severity": "error",
        },
      ]
    `)
  })

  it('ambiguous-unconditional points at the second unconditional item', async () => {
    expect(await issuesOf(join(vaults, 'broken/ambiguous-unconditional'))).toMatchInlineSnapshot(`
      [
        {
          "code": "ambiguous-unconditional",
          "column": 11,
          "file": "review.md",
          "line": 10,
          "message": "has two unconditional edges; label all but one with a condition",
          "node": "review",
          "severity": "error",
        },
      ]
    `)
  })

  it('ambiguous-link names every matching note', async () => {
    expect(await issuesOf(join(vaults, 'broken/ambiguous-link'))).toMatchInlineSnapshot(`
      [
        {
          "code": "ambiguous-link",
          "column": 25,
          "file": "final/review.md",
          "line": 7,
          "message": "\`[[review]]\` matches 2 notes (\`drafts/review\`, \`final/review\`); write the path",
          "node": "final/review",
          "severity": "error",
        },
      ]
    `)
  })

  it('multiple-targets points at the list item', async () => {
    expect(await issuesOf(join(vaults, 'broken/multiple-targets'))).toMatchInlineSnapshot(`
      [
        {
          "code": "multiple-targets",
          "column": 1,
          "file": "review.md",
          "line": 11,
          "message": "one item under \`## Next\` links 2 notes; write one item per target",
          "node": "review",
          "severity": "error",
        },
      ]
    `)
  })

  it('throws a PlanValidationError whose message lists the errors the way compilers do', async () => {
    const graph = await loadPlan(join(vaults, 'broken/dangling-edge'))
    expect(() => graph.validate()).toThrowErrorMatchingInlineSnapshot(`
      [PlanValidationError: The plan has 1 error:
        review.md:11:21 error dangling-edge edge \`needs revision\` -> \`[[drfat]]\` matches no note; did you mean \`[[draft]]\`?]
    `)
  })
})

describe('validate()', () => {
  it('reports every problem at once', async () => {
    const dir = await writeVault({
      'draft.md': '---\ntype: start\nmax_visits: 0\n---\n# Draft\n\n## Next\n- [[review]]\n',
      'review.md': '# Review\n\n## Next\n- approved -> [[sned]]\n- needs revision -> [[draft]]\n- [[publish]]\n- [[archive]]\n',
      'publish.md': '# Publish\n',
      'archive.md': '# Archive\n',
    })
    const issues = await issuesOf(dir)
    expect(issues.map(({ code, severity, file, line, column }) => ({ code, severity, file, line, column }))).toEqual([
      { code: 'invalid-frontmatter', severity: 'error', file: 'draft.md', line: 3, column: 13 },
      { code: 'dangling-edge', severity: 'error', file: 'review.md', line: 4, column: 15 },
      { code: 'ambiguous-unconditional', severity: 'error', file: 'review.md', line: 7, column: 3 },
    ])
  })

  it('returns warnings for notes the start cannot reach, and downgrades their problems', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n# Start\n\n## Next\n- [[end]]\n',
      'end.md': '# End\n',
      'Ideas.md': '---\nstatus: Draft\n---\n# Ideas\n\n## Next\n- someday -> [[Nowhere]]\n',
    })
    expect(await issuesOf(dir)).toMatchInlineSnapshot(`
      [
        {
          "code": "unreachable",
          "file": "Ideas.md",
          "message": "cannot be reached from the start node",
          "node": "Ideas",
          "severity": "warning",
        },
        {
          "code": "invalid-frontmatter",
          "column": 9,
          "file": "Ideas.md",
          "line": 2,
          "message": "\`status\` must be one of \`pending\`, \`active\`, \`done\`, \`waiting\`, got \`"Draft"\`",
          "node": "Ideas",
          "severity": "warning",
        },
        {
          "code": "dangling-edge",
          "column": 14,
          "file": "Ideas.md",
          "line": 7,
          "message": "edge \`someday\` -> \`[[Nowhere]]\` matches no note",
          "node": "Ideas",
          "severity": "warning",
        },
      ]
    `)
  })

  it('warns about tool names unknown to the tools the caller supplies', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\ntools: [fetch_url, web_serach]\n---\n# Start\n\n## Next\n- [[end]]\n',
      'end.md': '---\ntools: [send_email]\n---\n# End\n',
    })
    expect(await issuesOf(dir, ['fetch_url', 'web_search', 'send_email'])).toMatchInlineSnapshot(`
      [
        {
          "code": "unknown-tool",
          "column": 8,
          "file": "start.md",
          "line": 3,
          "message": "names tool \`web_serach\`, which the runner does not have; did you mean \`web_search\`?",
          "node": "start",
          "severity": "warning",
        },
      ]
    `)
    expect(await issuesOf(dir)).toEqual([])
  })

  it('finds a self-loop without exit', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- ok -> [[end]]\n- retry -> [[poll]]\n',
      'poll.md': '# Poll\n\n## Next\n- [[poll]]\n',
      'end.md': '# End\n',
    })
    expect((await issuesOf(dir)).map((issue) => [issue.code, issue.node, issue.message])).toEqual([
      ['cycle-without-exit', 'poll', 'links only to itself and has no other way out; add an edge that leaves it'],
    ])
  })

  it('accepts a loop with an exit', async () => {
    expect(await issuesOf(join(vaults, 'draft-review'))).toEqual([])
  })

  it('names the notes of a loop without claiming an order the edges do not have', async () => {
    // a -> c -> b -> a: listing them as `a -> b -> c` would describe edges that do not exist.
    const graph = new PlanGraph([
      node(
        'start',
        [
          ['go', 'a'],
          ['stop', 'end'],
        ],
        { type: 'start' },
      ),
      node('a', [['', 'c']]),
      node('b', [['', 'a']]),
      node('c', [['', 'b']]),
      node('end', []),
    ])
    expect(() => graph.validate()).toThrow('is in a loop with no way out (`a`, `b`, `c`)')
  })

  it('picks the only note without incoming edges as the start', () => {
    const graph = new PlanGraph([node('b', [['', 'c']]), node('a', [['', 'b']]), node('c', [])])
    expect(graph.startNode().id).toBe('a')
    expect(graph.validate()).toEqual([])
  })

  it('reports an empty plan as no-start', () => {
    const graph = new PlanGraph([])
    expect(() => graph.startNode()).toThrow(PlanValidationError)
    expect(() => graph.validate()).toThrowErrorMatchingInlineSnapshot(`
      [PlanValidationError: The plan has 1 error:
        <plan> error no-start the plan has no notes]
    `)
  })

  it('checks graphs built in code, without file positions', () => {
    const graph = new PlanGraph([node('start', [['', 'gone']], { type: 'start' }), node('end', [])])
    try {
      graph.validate()
      expect.unreachable()
    } catch (error) {
      expect((error as PlanValidationError).issues).toMatchInlineSnapshot(`
        [
          {
            "code": "dangling-edge",
            "message": "edge \`next\` -> \`[[gone]]\` matches no note",
            "node": "start",
            "severity": "error",
          },
          {
            "code": "unreachable",
            "message": "cannot be reached from the start node",
            "node": "end",
            "severity": "warning",
          },
        ]
      `)
    }
  })

  it('gives PlanValidationError a stable name and code', () => {
    const error = new PlanValidationError([{ code: 'no-start', severity: 'error', message: 'the plan has no notes' }])
    expect([error.name, error.code, error instanceof Error]).toEqual(['PlanValidationError', 'plan-invalid', true])
  })
})

describe('graph.check(): the same issues as validate(), without throwing', () => {
  it('splits errors from warnings, every issue kept in file order, where validate() would throw', () => {
    const graph = new PlanGraph([node('a', [['', 'b']], { type: 'start' }), node('b', [['', 'nowhere']]), node('lonely', [])])
    const checked = graph.check()
    expect(checked.errors.map((issue) => [issue.code, issue.node])).toContainEqual(['dangling-edge', 'b'])
    expect(checked.warnings.map((issue) => [issue.code, issue.node])).toEqual([['unreachable', 'lonely']])
    expect(checked.issues.filter((issue) => issue.severity === 'error')).toEqual(checked.errors)
    expect(() => graph.validate()).toThrow(PlanValidationError)
    try {
      graph.validate()
    } catch (error) {
      expect((error as PlanValidationError).issues).toEqual(checked.issues)
    }
  })

  it('a valid plan: nothing to report', () => {
    expect(new PlanGraph([node('a', [['', 'b']], { type: 'start' }), node('b', [])]).check()).toEqual({ errors: [], warnings: [], issues: [] })
  })
})

describe('validation reads only the graph it is given', () => {
  it("a graph rebuilt from a loaded graph's nodes fails as the loaded one does, at the same places", async () => {
    const vault = await writeVault({
      'start.md': '---\ntype: start\nmax_visits: lots\n---\n## Next\n- [[end]]\n- [[missing]]\n',
      'end.md': '# End\n',
    })
    const loaded = await loadPlan(vault)
    const rebuilt = new PlanGraph(loaded.nodes.values())
    expect(rebuilt.check().errors).toEqual(loaded.check().errors)
    expect(rebuilt.check().errors.map((found) => [found.code, found.line])).toEqual([
      ['invalid-frontmatter', 3],
      ['ambiguous-unconditional', 7],
      ['dangling-edge', 7],
    ])
  })
})
