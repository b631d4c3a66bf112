import { fileURLToPath } from 'node:url'
import { describe, expect, test } from 'vitest'
import { loadPlan, PlanGraph, type Edge, type PlanNode } from 'vaultplan'
import { toCanvas, type CanvasDocument, type CanvasNode } from 'vaultplan/pictures'
import { canvasProblems } from './helpers/json-canvas.js'

const vaults = fileURLToPath(new URL('../vaults', import.meta.url))

function node(id: string, edges: [label: string, target: string][] = [], extra: Partial<PlanNode> = {}): PlanNode {
  const built: Edge[] = edges.map(([label, target]) => ({ label, target, conditional: label !== '' && label !== 'next' }))
  return { id, title: id, body: '', type: 'step', status: 'pending', maxVisits: 3, edges: built, frontmatter: {}, ...extra }
}

/** Whether two cards' rectangles share any area. */
function overlap(a: CanvasNode, b: CanvasNode): boolean {
  return a.x < b.x + b.width && b.x < a.x + a.width && a.y < b.y + b.height && b.y < a.y + a.height
}

function cardsOf(canvas: CanvasDocument): CanvasNode[] {
  return canvas.nodes.filter((card) => card.type !== 'group')
}

describe('toCanvas', () => {
  test('the draft/review vault: one file card per note in layers from the start, labelled edges, the loop back up the side', async () => {
    const canvas = toCanvas(await loadPlan(`${vaults}/draft-review`))
    expect(canvas).toEqual({
      nodes: [
        { id: 'n0', type: 'file', file: 'draft.md', x: 0, y: 0, width: 320, height: 200, color: '6' },
        { id: 'n1', type: 'file', file: 'review.md', x: 0, y: 320, width: 320, height: 200 },
        { id: 'n2', type: 'file', file: 'send.md', x: 0, y: 640, width: 320, height: 200, color: '5' },
      ],
      edges: [
        { id: 'e0', fromNode: 'n0', fromSide: 'bottom', toNode: 'n1', toSide: 'top' },
        { id: 'e1', fromNode: 'n1', fromSide: 'bottom', toNode: 'n2', toSide: 'top', label: 'approved' },
        { id: 'e2', fromNode: 'n1', fromSide: 'right', toNode: 'n0', toSide: 'right', label: 'needs revision' },
      ],
    })
    expect(canvasProblems(canvas)).toEqual([])
  })

  test('with a run: statuses as preset colours; paths from the Obsidian vault that holds the plan', async () => {
    const graph = new PlanGraph([
      node('draft', [['', 'review']], { type: 'start', status: 'done' }),
      node(
        'review',
        [
          ['approved', 'send'],
          ['needs revision', 'draft'],
        ],
        { status: 'waiting', file: 'review.md' },
      ),
      node('send'),
      node('notes/fix', [['', 'send']], { status: 'active', file: 'notes/fix.MD' }),
    ])
    const canvas = toCanvas(graph, { visits: { draft: 1, review: 1 }, statuses: { send: 'pending' } }, { folder: 'Plans/blog/' })
    expect(canvas.nodes.map((card) => [card.type === 'file' ? card.file : card.type, card.color])).toEqual([
      ['Plans/blog/draft.md', '4'],
      ['Plans/blog/review.md', '5'],
      ['Plans/blog/send.md', undefined],
      ['Plans/blog/notes/fix.MD', '3'],
    ])
    expect(canvasProblems(canvas)).toEqual([])
    expect(toCanvas(graph, undefined, { folder: './' }).nodes[0]).toMatchObject({ file: 'draft.md' })
  })

  test('a branching vault: rows one hop apart, side by side, never overlapping; every edge drawn once', async () => {
    const graph = await loadPlan(`${vaults}/branching`)
    const canvas = toCanvas(graph)
    expect(canvasProblems(canvas)).toEqual([])
    const row = (file: string) => canvas.nodes.find((card) => card.type === 'file' && card.file === file)!.y / 320
    expect(['triage.md', 'bugs/reproduce.md', 'support/reply.md', 'bugs/fix.md', 'bugs/verify.md'].map(row)).toEqual([0, 1, 1, 2, 3])
    const cards = cardsOf(canvas)
    for (const [index, card] of cards.entries()) for (const other of cards.slice(index + 1)) expect(overlap(card, other)).toBe(false)
    const edges = [...graph.nodes.values()].reduce((sum, planNode) => sum + planNode.edges.length, 0)
    expect(canvas.edges).toHaveLength(edges)
    expect(canvas.edges.map((edge) => edge.label).filter(Boolean)).toEqual([
      'the ticket reports a bug',
      'the ticket is a question',
      'the tests still fail',
      'all tests pass',
    ])
  })

  test('an invalid plan is pictured too: a missing note as a red text card, an unreachable note in a row of its own', () => {
    const graph = new PlanGraph([node('a', [['ok', 'sned']], { type: 'start' }), node('orphan', [['', 'a']])])
    const canvas = toCanvas(graph)
    expect(canvasProblems(canvas)).toEqual([])
    expect(canvas.nodes).toEqual([
      { id: 'n0', type: 'file', file: 'a.md', x: 0, y: 0, width: 320, height: 200, color: '6' },
      { id: 'n1', type: 'file', file: 'orphan.md', x: 0, y: 520, width: 320, height: 200 },
      { id: 'm0', type: 'text', text: 'sned (missing)', x: 0, y: 320, width: 320, height: 80, color: '1' },
    ])
  })

  test('groups: the notes of a group laid out inside a group node, drawn below the cards', async () => {
    const graph = await loadPlan(`${vaults}/branching`)
    const canvas = toCanvas(graph, undefined, { group: (planNode) => (planNode.id.startsWith('bugs/') ? 'bugs' : undefined) })
    expect(canvasProblems(canvas)).toEqual([])
    const [group, ...rest] = canvas.nodes
    expect(group).toMatchObject({ id: 'g0', type: 'group', label: 'bugs' })
    expect(rest.every((card) => card.type !== 'group')).toBe(true)
    const inside = (card: CanvasNode) =>
      card.x >= group!.x && card.y >= group!.y && card.x + card.width <= group!.x + group!.width && card.y + card.height <= group!.y + group!.height
    // Laid out inside from the note the walk from the start meets first, top to bottom.
    const members = rest.filter(inside).sort((a, b) => a.y - b.y)
    expect(members.map((card) => (card.type === 'file' ? card.file : ''))).toEqual(['bugs/reproduce.md', 'bugs/fix.md', 'bugs/verify.md'])
    for (const [index, card] of rest.entries()) for (const other of rest.slice(index + 1)) expect(overlap(card, other)).toBe(false)
  })

  test('groups are named by their label only: a label like a card id stays apart from that card', async () => {
    const graph = await loadPlan(`${vaults}/branching`)
    const canvas = toCanvas(graph, undefined, {
      group: (planNode) => (planNode.id === 'bugs/verify' ? 'n0' : planNode.id.startsWith('bugs/') ? 'n1' : undefined),
    })
    expect(canvasProblems(canvas)).toEqual([])
    expect(canvas.nodes.filter((card) => card.type === 'group').map((group) => [group.id, group.type === 'group' && group.label])).toEqual([
      ['g0', 'n1'],
      ['g1', 'n0'],
    ])
    expect(cardsOf(canvas).map((card) => card.id)).toEqual(['n0', 'n1', 'n2', 'n3', 'n4'])
    expect(() => toCanvas(graph, undefined, { group: () => 7 as unknown as string })).toThrow(
      new TypeError('Expected `group` to return a label (a string) or undefined, got `7` for `triage`'),
    )
  })

  test('a folder outside the Obsidian vault is a programmer error', () => {
    const graph = new PlanGraph([node('a', [], { type: 'start' })])
    expect(() => toCanvas(graph, undefined, { folder: '../elsewhere' })).toThrow(
      new TypeError("Expected `folder` to be the plan vault's path inside the Obsidian vault, like `Plans/blog`, got `../elsewhere`"),
    )
    expect(() => toCanvas(graph, undefined, { folder: '/abs' })).toThrow(TypeError)
  })
})

describe('the JSON Canvas 1.0 check', () => {
  test('finds what Obsidian would not open, so the checks above can fail', () => {
    expect(
      canvasProblems({
        nodes: [
          { id: 'a', type: 'file', file: 'a.md', x: 0, y: 0, width: 10 },
          { id: 'a', type: 'text', text: 'hi', x: 0.5, y: 0, width: 10, height: 10, color: 'red' },
          { id: 'c', type: 'card', x: 0, y: 0, width: 10, height: 10 },
        ],
        edges: [{ id: 'e', fromNode: 'a', toNode: 'zz', toSide: 'middle' }],
      }),
    ).toEqual([
      'node 0: `height` is not an integer',
      'node 1: id `a` is used twice',
      'node 1: `x` is not an integer',
      'node 1: `color` `red` is neither a preset "1".."6" nor a hex colour',
      'node 2: `type` `card` is not text, file, link or group',
      'edge 0: `toNode` `zz` is no node',
      'edge 0: bad `toSide`',
    ])
  })
})
