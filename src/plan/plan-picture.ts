import type { PlanGraph } from './plan-graph.js'
import type { NodeStatus, PlanNode } from '../core/types.js'
import { clustersOf, type Cluster } from './plan-clusters.js'
import { findStart } from './validate.js'
import { waitsForPerson } from '../core/knobs.js'
import { STATUS_COLOURS } from './status-colours.js'

/** Where a run stands, for a picture: statuses as colours, visits against budgets. */
export interface PictureState {
  /** Visits per node id so far; a `RunResult`'s `visits` fits. A node not listed has 0. */
  visits: Readonly<Record<string, number>>
  /**
   * Status per node id.
   *
   * @default each node's own `status`
   */
  statuses?: Readonly<Record<string, NodeStatus>>
}

const MISSING = { fill: '#fee2e2', stroke: '#dc2626', bold: false }
const TEXT = '#18181b'

/** A node or a link target that is no node, with the safe identifier the picture gives it. */
export interface Box {
  key: string
  label: string
  node?: PlanNode
  start: boolean
  terminal: boolean
}

/** What every picture draws: the boxes, the start first, and the edges between their keys. */
export interface Layout {
  boxes: Box[]
  edges: { from: string; to: string; label: string }[]
}

/**
 * The plan as a mermaid flowchart: the start node as a stadium, terminals as
 * double circles, edge labels on the arrows. With `state`, each node shows
 * its visits against its budget (`review (2/3)`) and its status as a colour
 * (grey pending, yellow active, green done, cyan waiting). Links to notes that
 * do not exist are drawn dashed red, so an invalid plan can be pictured too.
 * Nodes get generated identifiers (`n0`, `n1`, ...); the real id is the label.
 */
export function toMermaid(graph: PlanGraph, state?: PictureState): string {
  const top = pictureOf(graph, state)
  const clusters = clustersOf(graph, top, state, pictureOf)
  const lines = ['flowchart TD']
  const draw = (layout: Layout, indent: string) => {
    for (const box of layout.boxes) {
      const text = `"${mermaidText(box.label)}"`
      const shape = box.node === undefined ? `[${text}]` : box.start ? `([${text}])` : box.terminal ? `(((${text})))` : `(${text})`
      lines.push(`${indent}${box.key}${shape}`)
    }
  }
  // A subplan is a subgraph, reached by a dotted arrow from the note that runs it.
  const drawClusters = (list: Cluster<Layout>[], indent: string) => {
    for (const cluster of list) {
      lines.push(`${indent}subgraph ${cluster.key}["${mermaidText(cluster.label)}"]`)
      draw(cluster.layout, `${indent}  `)
      drawClusters(cluster.clusters, `${indent}  `)
      lines.push(`${indent}end`)
    }
  }
  draw(top, '  ')
  drawClusters(clusters, '  ')
  const all = [top, ...flatten(clusters).map((cluster) => cluster.layout)]
  for (const edge of all.flatMap((layout) => layout.edges))
    lines.push(`  ${edge.from} -->${edge.label === '' ? '' : `|"${mermaidText(edge.label)}"|`} ${edge.to}`)
  for (const cluster of flatten(clusters)) lines.push(`  ${cluster.from} -.-> ${cluster.key}`)
  const boxes = all.flatMap((layout) => layout.boxes)
  const classes = new Map<string, string[]>()
  for (const box of boxes) {
    const name = box.node === undefined ? 'missing' : state ? statusOf(box.node, state) : undefined
    if (name !== undefined) classes.set(name, [...(classes.get(name) ?? []), box.key])
  }
  for (const [name, keys] of classes) {
    const colours = name === 'missing' ? MISSING : STATUS_COLOURS[name as NodeStatus]
    const extra = name === 'missing' ? ',stroke-dasharray:5 3' : colours.bold ? ',stroke-width:3px' : ''
    lines.push(`  classDef ${name} fill:${colours.fill},stroke:${colours.stroke},color:${TEXT}${extra}`, `  class ${keys.join(',')} ${name}`)
  }
  return `${lines.join('\n')}\n`
}

/**
 * The plan as a Graphviz DOT digraph, for `dot -Tsvg`: an arrow from a dot
 * into the start node, terminals with a double border, a note a person
 * decides (`judge: human`) as a hexagon, edge labels on the
 * arrows, each note's title as its tooltip. With `state`, visits against
 * budgets and statuses as colours, as in `toMermaid`. Links to notes that do
 * not exist are drawn dashed red.
 */
export function toDot(graph: PlanGraph, state?: PictureState): string {
  return dotOf(graph, state, false)
}

/** The DOT text of {@link toDot}; with `legend`, a legend below the plan saying what the borders, shapes and colours mean. */
export function dotOf(graph: PlanGraph, state: PictureState | undefined, legend: boolean): string {
  const top = pictureOf(graph, state)
  const clusters = clustersOf(graph, top, state, pictureOf)
  const { boxes } = top
  const lines = [
    'digraph plan {',
    `  graph [rankdir=TB, fontname="Helvetica", nodesep=0.4, ranksep=0.5${clusters.length > 0 ? ', compound=true' : ''}]`,
    `  node [shape=box, style="rounded,filled", fontname="Helvetica", fontsize=12, fillcolor="#ffffff", color="${STATUS_COLOURS.pending.stroke}", fontcolor="${TEXT}"]`,
    '  edge [fontname="Helvetica", fontsize=10, color="#52525b", fontcolor="#3f3f46"]',
  ]
  const start = boxes.find((box) => box.start)
  if (start) lines.push('  entry [shape=point, width=0.15, label="", color="#18181b", fillcolor="#18181b"]')
  const drawBox = (box: Box, indent: string) => {
    const attributes = [`label=${dotString(box.label)}`]
    if (box.node === undefined) {
      attributes.push('style="rounded,filled,dashed"', `fillcolor="${MISSING.fill}"`, `color="${MISSING.stroke}"`)
    } else {
      if (box.node.title !== box.node.id) attributes.push(`tooltip=${dotString(box.node.title)}`)
      if (box.terminal) attributes.push('peripheries=2')
      // A note a person decides is a hexagon: it waits for someone, not for a model.
      if (waitsForPerson(box.node)) attributes.push('shape=hexagon')
      if (state) {
        const colours = STATUS_COLOURS[statusOf(box.node, state)]
        attributes.push(`fillcolor="${colours.fill}"`, `color="${colours.stroke}"`)
        if (colours.bold || box.start) attributes.push('penwidth=2')
      } else if (box.start) attributes.push('penwidth=2')
    }
    lines.push(`${indent}${box.key} [${attributes.join(', ')}]`)
  }
  for (const box of boxes) drawBox(box, '  ')
  // A subplan is a cluster, reached by a dashed arrow from the note that runs it.
  const drawClusters = (list: Cluster<Layout>[], indent: string) => {
    for (const cluster of list) {
      lines.push(
        `${indent}subgraph cluster_${cluster.key} {`,
        `${indent}  label=${dotString(cluster.label)}`,
        `${indent}  style="rounded,dashed"`,
        `${indent}  color="${STATUS_COLOURS.pending.stroke}"`,
      )
      for (const box of cluster.layout.boxes) drawBox(box, `${indent}  `)
      drawClusters(cluster.clusters, `${indent}  `)
      lines.push(`${indent}}`)
    }
  }
  drawClusters(clusters, '  ')
  if (start) lines.push(`  entry -> ${start.key}`)
  const edges = [top, ...flatten(clusters).map((cluster) => cluster.layout)].flatMap((layout) => layout.edges)
  for (const edge of edges) lines.push(`  ${edge.from} -> ${edge.to}${edge.label === '' ? '' : ` [label=${dotString(` ${edge.label} `)}]`}`)
  for (const cluster of flatten(clusters)) {
    const first = cluster.layout.boxes[0]
    if (first) lines.push(`  ${cluster.from} -> ${first.key} [style=dashed, lhead=cluster_${cluster.key}]`)
  }
  if (legend) {
    lines.push(...legendLines(state !== undefined))
    // Below the plan: every note ranks above the legend (arrows not drawn, weightless so they leave the plan's layout be),
    // ranked with the plan as one graph (`newrank`), the legend's rows being a cluster's.
    lines.push('  newrank=true')
    for (const box of top.boxes) lines.push(`  ${box.key} -> legend_start [style=invis, weight=0]`)
  }
  lines.push('}')
  return `${lines.join('\n')}\n`
}

/** A small legend at the bottom of the picture: the start's thick border, a terminal's double one, a person's hexagon, the statuses' colours. */
function legendLines(withState: boolean): string[] {
  const sample = (key: string, label: string, extra: string) =>
    `    ${key} [label=${dotString(label)}, fontsize=9, width=0, height=0, margin="0.08,0.03"${extra}]`
  const shapes = [
    sample('legend_start', 'start', ', penwidth=2'),
    sample('legend_terminal', 'terminal', ', peripheries=2'),
    sample('legend_person', 'a person decides', ', shape=hexagon'),
  ]
  const colours = withState
    ? Object.entries(STATUS_COLOURS).map(([status, colour]) =>
        sample(`legend_${status}`, status, `, fillcolor="${colour.fill}", color="${colour.stroke}"${colour.bold ? ', penwidth=2' : ''}`),
      )
    : []
  const keys = (lines: string[]) => lines.map((line) => line.trim().split(' ')[0]!)
  // A row each, kept in order by invisible arrows; the colours below the shapes.
  const row = (lines: string[]) => (lines.length === 0 ? [] : [`    { rank=same; ${keys(lines).join('; ')} }`, `    ${keys(lines).join(' -> ')} [style=invis]`])
  return [
    '  subgraph cluster_legend {',
    '    label="Legend"',
    '    fontsize=10',
    '    style="rounded"',
    '    color="#d4d4d8"',
    ...shapes,
    ...colours,
    ...row(shapes),
    ...row(colours),
    ...(colours.length > 0 ? [`    ${keys(shapes)[0]} -> ${keys(colours)[0]} [style=invis]`] : []),
    '  }',
  ]
}

/** Gives every node and every missing link target a safe key, the start first, the rest in file order. */
export function pictureOf(graph: PlanGraph, state: PictureState | undefined): Layout {
  const start = findStart(graph).start
  const ordered = [...graph.nodes.values()]
  if (start) ordered.sort((a, b) => Number(b === start) - Number(a === start))
  const keys = new Map<string, string>()
  const boxes: Box[] = ordered.map((node, index) => {
    const key = `n${index}`
    keys.set(node.id, key)
    const visits = state ? ` (${own(state.visits, node.id) ?? 0}/${node.maxVisits})` : ''
    return { key, label: `${node.id}${visits}`, node, start: node === start, terminal: node.edges.length === 0 }
  })
  const missing = new Map<string, string>()
  const edges: Layout['edges'] = []
  for (const node of ordered) {
    for (const edge of node.edges) {
      let to = keys.get(edge.target) ?? missing.get(edge.target)
      if (to === undefined) {
        to = `m${missing.size}`
        missing.set(edge.target, to)
        boxes.push({ key: to, label: `${edge.target} (missing)`, start: false, terminal: false })
      }
      edges.push({ from: keys.get(node.id)!, to, label: edge.conditional ? edge.label : '' })
    }
  }
  return { boxes, edges }
}

/** Every cluster, nested ones included, outer first. */
function flatten(clusters: Cluster<Layout>[]): Cluster<Layout>[] {
  return clusters.flatMap((cluster) => [cluster, ...flatten(cluster.clusters)])
}

/** A node's status in the picture: the state's, else the note's own. */
export function statusOf(node: PlanNode, state: PictureState): NodeStatus {
  return (state.statuses && own(state.statuses, node.id)) ?? node.status
}

/** A record's own entry: ids such as `constructor` are note names, not inherited members. */
function own<T>(record: Readonly<Record<string, T>>, key: string): T | undefined {
  return Object.hasOwn(record, key) ? record[key] : undefined
}

/**
 * Text for a quoted mermaid label. Characters the flowchart grammar or its
 * directive and markdown-string syntax could read become mermaid's numeric
 * entity codes (`#34;`), which it turns back into the characters on render.
 */
function mermaidText(text: string): string {
  // Mermaid drops the last `;` of any line where `style` or `classDef` comes before a `:`, breaking an entity code.
  const special = /style|classDef/.test(text) ? /[#"<>|%`&:]/g : /[#"<>|%`&]/g
  return text
    .replace(/\r\n?/g, '\n')
    .replace(special, (char) => `#${char.codePointAt(0)};`)
    .replace(/\n/g, '<br>')
    .replace(/\p{Cc}/gu, ' ')
}

/**
 * A DOT double-quoted string: backslashes (Graphviz reads `\N`, `\l` ...),
 * quotes and ampersands (it decodes `&#35;`, `&amp;` ...) escaped, line breaks as `\n`.
 */
function dotString(text: string): string {
  const escaped = text
    .replace(/\r\n?/g, '\n')
    .replace(/&/g, '&amp;')
    .replace(/\\/g, '\\\\')
    .replace(/"/g, '\\"')
    .replace(/\n/g, '\\n')
    .replace(/\p{Cc}/gu, ' ')
  return `"${escaped}"`
}
