import fc from 'fast-check'
import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'
import { loadPlan, PlanGraph, type Edge, type PlanNode } from 'vaultplan'
import { toDot, toMermaid, toSvg } from 'vaultplan/pictures'
import { parseMermaid, parseSvg, renderDot } from './helpers/renderers.js'

const draftReview = fileURLToPath(new URL('../vaults/draft-review', import.meta.url))

function node(id: string, edges: [label: string, target: string][] = [], extra: Partial<PlanNode> = {}): PlanNode {
  const built: Edge[] = edges.map(([label, target]) => ({ label, target, conditional: label !== '' && label !== 'next' }))
  return { id, title: id, body: '', type: 'step', status: 'pending', maxVisits: 3, edges: built, frontmatter: {}, ...extra }
}

describe('toMermaid', () => {
  test('the draft/review vault: start as a stadium, the terminal as a double circle, labels on the arrows; mermaid accepts it', async () => {
    const text = toMermaid(await loadPlan(draftReview))
    expect(text).toBe(
      [
        'flowchart TD',
        '  n0(["draft"])',
        '  n1("review")',
        '  n2((("send")))',
        '  n0 --> n1',
        '  n1 -->|"approved"| n2',
        '  n1 -->|"needs revision"| n0',
        '',
      ].join('\n'),
    )
    expect(await parseMermaid(text)).toEqual({
      diagramType: 'flowchart-v2',
      vertices: [
        { id: 'n0', text: 'draft', type: 'stadium', classes: [] },
        { id: 'n1', text: 'review', type: 'round', classes: [] },
        { id: 'n2', text: 'send', type: 'doublecircle', classes: [] },
      ],
      edges: [
        { start: 'n0', end: 'n1', text: '' },
        { start: 'n1', end: 'n2', text: 'approved' },
        { start: 'n1', end: 'n0', text: 'needs revision' },
      ],
    })
  })

  test('with a run: visits of budget in the labels, statuses as classes with colours', async () => {
    const graph = new PlanGraph([
      node('draft', [['', 'review']], { type: 'start', status: 'done' }),
      node(
        'review',
        [
          ['approved', 'send'],
          ['needs revision', 'draft'],
        ],
        { status: 'waiting', maxVisits: 4 },
      ),
      node('send', [], { maxVisits: 1 }),
      node('fix', [['', 'send']], { status: 'active' }),
    ])
    const text = toMermaid(graph, { visits: { draft: 2, review: 2 } })
    const parsed = await parseMermaid(text)
    expect(parsed.vertices.map(({ text: label, classes }) => [label, classes])).toEqual([
      ['draft (2/3)', ['done']],
      ['review (2/4)', ['waiting']],
      ['send (0/1)', ['pending']],
      ['fix (0/3)', ['active']],
    ])
    expect(text).toContain('  classDef done fill:#dcfce7,stroke:#16a34a,color:#18181b\n  class n0 done\n')
    expect(text).toContain('  classDef waiting fill:#cffafe,stroke:#0891b2,color:#18181b,stroke-width:3px\n  class n1 waiting\n')
    // statuses passed in win over the notes' own
    expect((await parseMermaid(toMermaid(graph, { visits: {}, statuses: { fix: 'done' } }))).vertices[3]!.classes).toEqual(['done'])
  })

  test('mermaid rejects broken text, so the checks above can fail', async () => {
    await expect(parseMermaid('flowchart TD\n  n0["draft')).rejects.toThrow(/Parse error/)
    await expect(parseMermaid('flowchart TD\n  n0 -->|a|b| n1\n')).rejects.toThrow(/Parse error/)
  })
})

describe('toDot', () => {
  test('the draft/review vault renders with Graphviz: an entry arrow into the start, a double border on the terminal', async () => {
    const text = toDot(await loadPlan(draftReview))
    expect(text).toBe(
      [
        'digraph plan {',
        '  graph [rankdir=TB, fontname="Helvetica", nodesep=0.4, ranksep=0.5]',
        '  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=12, fillcolor="#ffffff", color="#71717a", fontcolor="#18181b"]',
        '  edge [fontname="Helvetica", fontsize=10, color="#52525b", fontcolor="#3f3f46"]',
        '  entry [shape=point, width=0.15, label="", color="#18181b", fillcolor="#18181b"]',
        '  n0 [label="draft", tooltip="Draft the announcement", penwidth=2]',
        '  n1 [label="review", tooltip="Review the draft"]',
        '  n2 [label="send", tooltip="Send the announcement", peripheries=2]',
        '  entry -> n0',
        '  n0 -> n1',
        '  n1 -> n2 [label=" approved "]',
        '  n1 -> n0 [label=" needs revision "]',
        '}',
        '',
      ].join('\n'),
    )
    const rendered = await renderDot(text)
    expect({ status: rendered.status, errors: rendered.errors }).toEqual({ status: 'success', errors: [] })
    const svg = await parseSvg(rendered.svg!)
    expect(svg).toMatchObject({ root: 'svg', namespace: 'http://www.w3.org/2000/svg', nodes: ['entry', 'n0', 'n1', 'n2'] })
    expect(svg.texts.map((line) => line.trim()).sort()).toEqual(['approved', 'draft', 'needs revision', 'review', 'send'])
  })

  test('with a run: visits of budget in the labels, statuses as fill colours', async () => {
    const graph = new PlanGraph([node('draft', [['', 'review']], { type: 'start', status: 'done' }), node('review', [], { status: 'active' })])
    const svg = await parseSvg((await renderDot(toDot(graph, { visits: { draft: 1, review: 1 } }))).svg!)
    expect(svg.texts.sort()).toEqual(['draft (1/3)', 'review (1/3)'])
    expect(svg.fills).toEqual(['#18181b', '#dcfce7', '#fef3c7'])
  })

  test('Graphviz rejects broken DOT, so the checks above can fail', async () => {
    expect(await renderDot('digraph plan {\n  n0 -> \n}\n')).toEqual({ status: 'failure', svg: undefined, errors: ["syntax error in line 3 near '}'"] })
    await expect(parseSvg('<svg xmlns="http://www.w3.org/2000/svg"><g>')).rejects.toThrow(/not well-formed SVG/)
  })
})

describe('toSvg', () => {
  test('draws the DOT picture in-process: an SVG image with every note, label and status colour', async () => {
    const graph = await loadPlan(draftReview)
    const state = { visits: { draft: 2, review: 2, send: 1 }, statuses: { draft: 'done', review: 'done', send: 'active' } } as const
    const svg = await toSvg(graph, state)
    const picture = await parseSvg(svg)
    // The picture of toDot, and a legend.
    const plain = await parseSvg((await renderDot(toDot(graph, state))).svg!)
    expect(picture).toMatchObject({ root: 'svg', namespace: 'http://www.w3.org/2000/svg' })
    expect(plain.nodes).toEqual(['entry', 'n0', 'n1', 'n2'])
    const legend = ['legend_start', 'legend_terminal', 'legend_person', 'legend_pending', 'legend_active', 'legend_done', 'legend_waiting']
    expect([...picture.nodes].sort()).toEqual([...plain.nodes, ...legend].sort())
    const words = ['Legend', 'start', 'terminal', 'a person decides', 'pending', 'active', 'done', 'waiting']
    expect(picture.texts.map((text) => text.trim()).sort()).toEqual([...plain.texts.map((text) => text.trim()), ...words].sort())
    expect(plain.texts.map((text) => text.trim()).sort()).toEqual(['approved', 'draft (2/3)', 'needs revision', 'review (2/3)', 'send (1/3)'])
    // The plan's colours, the legend's four, and its three white shapes.
    expect([...picture.fills].sort()).toEqual([...plain.fills, '#f4f4f5', '#fef3c7', '#dcfce7', '#cffafe', '#ffffff', '#ffffff', '#ffffff'].sort())
    expect(plain.fills).toEqual(['#18181b', '#dcfce7', '#dcfce7', '#fef3c7'])
  })

  test('without a state: the plan alone, white boxes', async () => {
    const picture = await parseSvg(await toSvg(await loadPlan(draftReview)))
    // The legend has no colours without a run.
    expect(picture.texts.map((text) => text.trim()).sort()).toEqual(
      ['a person decides', 'approved', 'draft', 'Legend', 'needs revision', 'review', 'send', 'start', 'terminal'].sort(),
    )
    expect(new Set(picture.fills.slice(1))).toEqual(new Set(['#ffffff']))
  })
})

describe('a tricky plan', () => {
  // Ids as notes can be named in Obsidian or built in code; labels as people write them.
  const ids = {
    start: 'plans/blog post/start',
    final: 'review/final',
    quotes: 'say "hi" [draft] (v2) {x}',
    unicode: 'naïve café 日本語 🚀',
    keyword: 'end',
    marks: '#1 & <b>50%</b> | a;b `code` %%{init: {"theme": "dark"}}%%',
    backslash: 'back\\N and \\l \\',
  }
  const labels = {
    pipes: 'a | b -> c --> d',
    quotes: 'says "yes" [really] (truly)',
    newline: 'first line\nsecond line',
    unicode: 'approuvé ✅ 承認',
    entity: '#quot; stays #35; & <i>',
  }
  const graph = new PlanGraph([
    node(ids.start, [['', ids.final]], { type: 'start', status: 'done' }),
    node(
      ids.final,
      [
        [labels.pipes, ids.quotes],
        [labels.quotes, ids.unicode],
        [labels.newline, ids.keyword],
        [labels.unicode, ids.marks],
        [labels.entity, 'ghöst/“missing”'],
        ['', ids.backslash],
      ],
      { status: 'active' },
    ),
    node(ids.quotes, [['again', ids.start]]),
    node(ids.unicode),
    node(ids.keyword),
    node(ids.marks),
    node(ids.backslash, [
      ['loop', ids.backslash],
      ['out', ids.keyword],
    ]),
  ])

  test('mermaid accepts it and reads back every id and label', async () => {
    const parsed = await parseMermaid(toMermaid(graph, { visits: { [ids.start]: 1 } }))
    expect(parsed.vertices.map((vertex) => vertex.text)).toEqual([
      `${ids.start} (1/3)`,
      `${ids.final} (0/3)`,
      `${ids.quotes} (0/3)`,
      `${ids.unicode} (0/3)`,
      `${ids.keyword} (0/3)`,
      `${ids.marks} (0/3)`,
      `${ids.backslash} (0/3)`,
      'ghöst/“missing” (missing)',
    ])
    expect(parsed.vertices.at(-1)!.classes).toEqual(['missing'])
    expect(parsed.edges.map((edge) => edge.text)).toEqual([
      '',
      labels.pipes,
      labels.quotes,
      labels.newline,
      labels.unicode,
      labels.entity,
      '',
      'again',
      'loop',
      'out',
    ])
  })

  test('Graphviz renders it and draws every id and label as written', async () => {
    const rendered = await renderDot(toDot(graph, { visits: {} }))
    expect({ status: rendered.status, errors: rendered.errors }).toEqual({ status: 'success', errors: [] })
    const texts = (await parseSvg(rendered.svg!)).texts.map((line) => line.trim())
    for (const id of Object.values(ids)) expect(texts).toContain(`${id} (0/3)`)
    for (const label of [labels.pipes, labels.quotes, labels.unicode, labels.entity, 'first line', 'second line']) expect(texts).toContain(label)
    expect(texts).toContain('ghöst/“missing” (missing)')
  })

  test('any ids and labels: both renderers accept the picture and keep the text', async () => {
    const tricky = fc.constantFrom(...'"\'[](){}<>|#%&;:`\\/-> .,*_=~^$@!?'.split(''), 'é', '日', '🚀', '-->', '%%', '#35;', 'end', 'style')
    const text = fc.string({ unit: fc.oneof(tricky, fc.constantFrom('a', 'b', 'Z', '1')), minLength: 1, maxLength: 16 })
    // Leading and trailing spaces are layout to both renderers; ids and labels are compared without them.
    const clean = (value: string) => value.replace(/ +/g, ' ').trim()
    await fc.assert(
      fc.asyncProperty(
        fc.uniqueArray(
          text.filter((value) => clean(value) !== ''),
          { minLength: 2, maxLength: 4, selector: clean },
        ),
        fc.array(text.map(clean), { minLength: 2, maxLength: 4 }),
        async (names, words) => {
          const nodes = names.map((name, index) =>
            node(name, index + 1 < names.length ? [[words[index % words.length]!, names[index + 1]!]] : [], index === 0 ? { type: 'start' } : {}),
          )
          const plan = new PlanGraph(nodes)
          const labels = nodes.flatMap((planNode) => planNode.edges.map((edge) => (edge.conditional ? edge.label : '')))
          const parsed = await parseMermaid(toMermaid(plan))
          expect(parsed.vertices.map((vertex) => clean(vertex.text))).toEqual(names.map(clean))
          expect(parsed.edges.map((edge) => clean(edge.text))).toEqual(labels)
          const rendered = await renderDot(toDot(plan))
          expect(rendered.errors).toEqual([])
          const drawn = (await parseSvg(rendered.svg!)).texts.map(clean)
          for (const text of [...names.map(clean), ...labels.filter(Boolean)]) expect(drawn).toContain(text)
        },
      ),
      { numRuns: 40 },
    )
  })
})
