import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, parsePlanDocument, pathGraphFromSteps, planGraph, PlanValidationError, runPlan, type PlanNode } from 'vaultplan'
import { noJudge, reviewJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { readNotes, tempDir, traceHeadings } from './helpers/vault.js'

const query = 'Write a post about vaultplan'

const specDocument = `## research
type: start
Find three sources on the topic.
### Next
- [[draft]]

## draft
Write the draft from the sources.
### Next
- [[review]]

## review
role: review
Approve the draft, or say what must change.
### Next
- approved -> [[send]]
- needs revision -> [[draft]]

## send
Send the approved draft.
`

function node(id: string, body: string, edges: PlanNode['edges'], extra: Partial<PlanNode> = {}): PlanNode {
  return { id, title: id, body, type: 'step', status: 'pending', maxVisits: 3, edges, frontmatter: {}, ...extra }
}

const next = (target: string) => ({ label: '', target, conditional: false })

describe('parsePlanDocument', () => {
  it('reads the SPEC example: one node per `## id` section, knobs, body and `### Next` edges', () => {
    const graph = parsePlanDocument(specDocument)
    expect([...graph.nodes.values()]).toEqual([
      node('research', 'Find three sources on the topic.', [next('draft')], { type: 'start', frontmatter: { type: 'start' } }),
      node('draft', 'Write the draft from the sources.', [next('review')]),
      node(
        'review',
        'Approve the draft, or say what must change.',
        [
          { label: 'approved', target: 'send', conditional: true },
          { label: 'needs revision', target: 'draft', conditional: true },
        ],
        { role: 'review', frontmatter: { role: 'review' } },
      ),
      node('send', 'Send the approved draft.', []),
    ])
    expect(graph.startNode().id).toBe('research')
  })

  it('accepts a `Next:` line, CRLF, any knob of the frontmatter and a `# title` in the body', () => {
    const graph = parsePlanDocument(
      '## check\r\ntype: start\r\nmax_visits: 2\r\njudge: human\r\n# Check the numbers\r\nCompare with last month.\r\nNext:\r\n- ok -> [[publish]]\r\n- [[check]]\r\n\r\n## publish\r\nPublish.\r\n',
    )
    expect(graph.node('check')).toEqual(
      node('check', 'Compare with last month.', [{ label: 'ok', target: 'publish', conditional: true }, next('check')], {
        title: 'Check the numbers',
        type: 'start',
        maxVisits: 2,
        judge: 'human',
        frontmatter: { type: 'start', max_visits: 2, judge: 'human' },
      }),
    )
  })

  it('throws PlanValidationError with every problem: a dangling edge, no sections', () => {
    const broken = specDocument.replace('- [[review]]', '- [[reveiw]]')
    const error = (() => {
      try {
        parsePlanDocument(broken)
      } catch (caught) {
        return caught
      }
    })()
    expect(error).toBeInstanceOf(PlanValidationError)
    expect((error as PlanValidationError).issues.map((issue) => [issue.code, issue.node])).toContainEqual(['dangling-edge', 'draft'])
    expect(() => parsePlanDocument('Just some prose.\n\n- a list\n')).toThrow(PlanValidationError)
    expect(() => parsePlanDocument('Just some prose.')).toThrow(expect.objectContaining({ issues: [expect.objectContaining({ code: 'no-sections' })] }))
  })

  it("places each problem at the document's own line, naming no file", () => {
    const document = [
      '# Plan',
      '',
      '## research',
      'type: start',
      'max_visits: zero',
      'Find sources.',
      '### Next',
      '- [[draft]]',
      '',
      '## draft',
      'Write it.',
      '### Next',
      '- ok -> [[nowhere]]',
      '- [[send]]',
      '',
      '## send',
      'Send it.',
    ].join('\n')
    const issues = (() => {
      try {
        parsePlanDocument(document)
      } catch (caught) {
        return (caught as PlanValidationError).issues
      }
    })()
    expect(issues).toEqual([
      {
        code: 'invalid-frontmatter',
        severity: 'error',
        message: '`max_visits` must be an integer from 1 up, got `"zero"`',
        node: 'research',
        line: 5,
        column: 13,
      },
      { code: 'dangling-edge', severity: 'error', message: 'edge `ok` -> `[[nowhere]]` matches no note', node: 'draft', line: 13, column: 9 },
    ])
  })

  it('a parsed document runs like a vault and is written out as one note per node', async () => {
    const runVault = join(await tempDir(), 'run')
    const work = scriptedWorker()
    const result = await runPlan(parsePlanDocument(specDocument), { query, work, llm: reviewJudge('review v1'), runVault, fsync: false })
    expect(work.calls.map((call) => `${call.node}: ${call.body}`)).toEqual([
      'research: Find three sources on the topic.',
      'draft: Write the draft from the sources.',
      'review: Approve the draft, or say what must change.',
      'send: Send the approved draft.',
    ])
    expect(result).toMatchObject({ status: 'completed', runVault })
    expect(Object.keys(await readNotes(runVault))).toEqual(['draft.md', 'research.md', 'review.md', 'send.md'])
    expect((await loadPlan(runVault)).node('review')).toMatchObject({
      role: 'review',
      status: 'done',
      edges: parsePlanDocument(specDocument).node('review').edges,
    })
  })
})

describe('pathGraphFromSteps', () => {
  it('makes a linear plan: one node per step, each leading to the next', () => {
    const graph = pathGraphFromSteps(['Find sources', '  Write the draft  ', '', 'Send!'])
    expect([...graph.nodes.values()]).toEqual([
      node('01-find-sources', 'Find sources', [next('02-write-the-draft')], { title: 'Find sources', type: 'start', frontmatter: { type: 'start' } }),
      node('02-write-the-draft', 'Write the draft', [next('03-send')], { title: 'Write the draft' }),
      node('03-send', 'Send!', [], { title: 'Send!' }),
    ])
    expect(graph.validate()).toEqual([])
  })

  it('refuses an empty list', () => {
    expect(() => pathGraphFromSteps([])).toThrow(TypeError)
    expect(() => pathGraphFromSteps([' ', ''])).toThrow('Expected at least one step, got none')
  })
})

describe('planGraph: a plan written by the planning model', () => {
  it('a valid document becomes the graph it describes, not degraded', async () => {
    const llm = scriptedJudge(() => `\`\`\`markdown\n${specDocument}\`\`\`\n`)
    const graph = await planGraph(query, llm)
    expect(llm.calls.map((call) => call.role)).toEqual(['planning'])
    expect(llm.calls[0]!.prompt).toContain(query)
    expect([...graph.nodes.values()]).toEqual([...parsePlanDocument(specDocument).nodes.values()])
    expect(graph.degraded).toBeUndefined()

    const result = await runPlan(graph, { query, work: scriptedWorker(), llm: reviewJudge('review v1'), runVault: join(await tempDir(), 'run'), fsync: false })
    expect(result.status).toBe('completed')
    expect('degraded' in result).toBe(false)
  })

  it('a document that parses but does not validate degrades to its steps in order, and says so', async () => {
    const broken = specDocument.replace('- needs revision -> [[draft]]', '- needs revision -> [[drfat]]')
    const graph = await planGraph(
      query,
      scriptedJudge(() => broken),
    )
    expect([...graph.nodes.values()].map((step) => step.body)).toEqual([
      'research: Find three sources on the topic.',
      'draft: Write the draft from the sources.',
      'review: Approve the draft, or say what must change.',
      'send: Send the approved draft.',
    ])
    expect(graph.degraded).toBe("The planner's document was not a valid plan (dangling-edge); running its 4 steps in order instead.")

    const runVault = join(await tempDir(), 'run')
    const work = scriptedWorker()
    const result = await runPlan(graph, { query, work, llm: noJudge(), runVault, fsync: false, maxSteps: 2 })
    expect(result).toMatchObject({ status: 'stopped', degraded: graph.degraded })
    // The degradation is remembered by the run vault: a resumed run still reports it.
    const resumed = await runPlan(runVault, { query, work, llm: noJudge(), fsync: false, maxSteps: 50 })
    expect(resumed).toMatchObject({ status: 'completed', steps: 4, degraded: graph.degraded })
    expect(work.calls.map((call) => call.node)).toEqual([
      '01-research-find-three-sources-on-the-topic',
      '02-draft-write-the-draft-from-the-sources',
      '03-review-approve-the-draft-or-say-what-mus',
      '04-send-send-the-approved-draft',
    ])
  })

  it('a numbered list instead of a document: its items become the steps', async () => {
    const graph = await planGraph(
      query,
      scriptedJudge(() => 'Here is the plan:\n1. Research the topic\n2. Write the post\n3. Publish it\n'),
    )
    expect([...graph.nodes.values()].map((step) => step.body)).toEqual(['Research the topic', 'Write the post', 'Publish it'])
    expect(graph.degraded).toMatch(/^The planner's document was not a valid plan \(.+\); running its 3 steps in order instead\.$/)
  })

  it('garbage degrades to the query as the one step', async () => {
    const graph = await planGraph(
      query,
      scriptedJudge(() => 'I am sorry, I cannot do that.'),
    )
    expect([...graph.nodes.values()]).toEqual([
      node('01-write-a-post-about-vaultplan', query, [], { title: query, type: 'start', frontmatter: { type: 'start' } }),
    ])
    expect(graph.degraded).toMatch(/running the query as one step in order instead\.$/)

    const runVault = join(await tempDir(), 'run')
    const result = await runPlan(graph, { query, work: scriptedWorker(), llm: noJudge(), runVault, fsync: false })
    expect(result).toMatchObject({ status: 'completed', steps: 1, output: '01-write-a-post-about-vaultplan v1', degraded: graph.degraded })
    expect(await traceHeadings(runVault)).toEqual(['Step 1 · [[01-write-a-post-about-vaultplan]] · visit 1'])
  })
})
