import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, parsePlanDocument, PlanValidationError, savePlan } from 'vaultplan'
import { memoryClient } from './helpers/mcp.js'
import { readNotes, tempDir } from './helpers/vault.js'

/*
 * What a plan document says beyond one section a note: subplans in
 * `## folder/note` sections, knob lines that are no knobs, a `# Title`.
 */

/** A plan whose `gather` note runs two subplans, `web` and `papers`, written in the document. */
const withSubplans = `## gather
type: start
plan: [web, papers]
Gather what is known.
### Next
- [[write]]

## write
Write it up.

## web/search
type: start
Search the web.
### Next
- [[read]]

## web/read
Read the pages found.

## papers/find
Find the papers.
`

function issuesOf(document: string) {
  try {
    parsePlanDocument(document)
  } catch (caught) {
    if (caught instanceof PlanValidationError) return caught.issues
    throw caught
  }
  return []
}

describe('a plan document with subplans', () => {
  it('reads `## web/search` sections under a note with `plan: [web, papers]` as the subplans, and savePlan writes them into their folders', async () => {
    const graph = parsePlanDocument(withSubplans)
    expect([...graph.nodes.keys()]).toEqual(['gather', 'write'])
    expect([...(graph.subplans?.keys() ?? [])]).toEqual(['web', 'papers'])
    expect([...graph.subplans!.get('web')!.nodes.keys()]).toEqual(['search', 'read'])
    expect(graph.subplans!.get('web')!.node('search').edges).toEqual([{ label: '', target: 'read', conditional: false }])

    const vault = join(await tempDir(), 'plan')
    await savePlan(graph, vault, { fsync: false })
    expect(Object.keys(await readNotes(vault)).sort()).toEqual(['gather.md', 'papers/find.md', 'web/read.md', 'web/search.md', 'write.md'])
    const loaded = await loadPlan(vault)
    expect(loaded.validate()).toEqual([])
    expect(loaded.subplans!.get('web')!.node('search').body).toBe('Search the web.')
  })

  it('validates the subplans with the parent: a broken edge inside one is an error of the document', () => {
    expect(issuesOf(withSubplans.replace('- [[read]]', '- [[raed]]')).map((found) => [found.code, found.node])).toEqual([['dangling-edge', 'web/search']])
    // `plan: web` alone: the `papers/` section is then a note of the parent.
    expect([...parsePlanDocument(withSubplans.replace('plan: [web, papers]', 'plan: web')).nodes.keys()]).toEqual(['gather', 'write', 'papers/find'])
  })

  it('plan_create writes nothing for a document whose subplan is invalid, so the retry with the fixed document succeeds', async () => {
    const root = await tempDir()
    const agent = await memoryClient(root)
    try {
      const refused = await agent.refuse('plan_create', { vault: 'research', document: withSubplans.replace('- [[read]]', '- [[raed]]') })
      expect(refused).toMatch(/^Error \(plan-invalid\)/)
      expect(await readdir(root)).toEqual([])
      const created = await agent.call('plan_create', { vault: 'research', document: withSubplans })
      expect(created.notes).toEqual(['gather', 'write', 'web/read', 'web/search', 'papers/find'])
      expect(Object.keys(await readNotes(join(root, 'research'))).sort()).toEqual(['gather.md', 'papers/find.md', 'web/read.md', 'web/search.md', 'write.md'])
    } finally {
      await agent.close()
    }
  })
})

describe('the knob lines and the title of a section', () => {
  it('an unknown knob line where knob lines go is an error naming the line, the knobs and the closest one', () => {
    const issues = issuesOf('## a\ntype: start\npriority: high\nmax_vists: 2\nDo a.\nNote: this line is body text.\n')
    expect(issues.map(({ code, line, message }) => ({ code, line, message }))).toEqual([
      {
        code: 'unknown-knob',
        line: 3,
        message:
          '`priority: high` stands where the knob lines go, and `priority` is no knob (type, status, tools, role, max_visits, judge, plan, check, retries, wait); write it after the first line of the body if it is text',
      },
      {
        code: 'unknown-knob',
        line: 4,
        message:
          '`max_vists: 2` stands where the knob lines go, and `max_vists` is no knob (type, status, tools, role, max_visits, judge, plan, check, retries, wait); did you mean `max_visits`?',
      },
    ])
    // A line that reads like one after the body began is body text, as before.
    expect(parsePlanDocument('## a\nDo a.\npriority: high\n').node('a').body).toBe('Do a.\npriority: high')
  })

  it('a `# Title` line is the title and not also body text, wherever in the section it stands, before the knob lines too', async () => {
    const graph = parsePlanDocument('## a\n# Alpha\ntype: start\nDo a.\n### Next\n- [[b]]\n\n## b\nDo b.\n# Beta\nThen more.\n')
    expect(graph.node('a')).toMatchObject({ title: 'Alpha', body: 'Do a.', type: 'start' })
    expect(graph.node('b')).toMatchObject({ title: 'Beta', body: 'Do b.\nThen more.' })
    const vault = join(await tempDir(), 'plan')
    await savePlan(graph, vault, { fsync: false })
    expect((await readNotes(vault))['b.md']).toBe('# Beta\n\nDo b.\nThen more.\n')
  })
})
