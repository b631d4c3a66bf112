import { posix } from 'node:path'
import type { PlanGraph } from './plan-graph.js'
import { pictureOf, statusOf, type Box, type PictureState } from './plan-picture.js'
import { STATUS_COLOURS } from './status-colours.js'
import { subplansOf } from './plan-clusters.js'
import type { NodeStatus, PlanNode } from '../core/types.js'

/** A JSON Canvas colour: one of the six presets (red, orange, yellow, green, cyan, purple) or a hex colour. */
export type CanvasColor = '1' | '2' | '3' | '4' | '5' | '6' | `#${string}`

/**
 * One node of a JSON Canvas 1.0 document: a note (`file`), a text card or a
 * group around other nodes; `x`, `y`, `width`, `height` are integer pixels.
 */
export type CanvasNode = { id: string; x: number; y: number; width: number; height: number; color?: CanvasColor } & (
  { type: 'file'; file: string } | { type: 'text'; text: string } | { type: 'group'; label: string }
)

/** One edge of a JSON Canvas 1.0 document, from one node's side to another's. */
export interface CanvasEdge {
  id: string
  fromNode: string
  fromSide: 'top' | 'right' | 'bottom' | 'left'
  toNode: string
  toSide: 'top' | 'right' | 'bottom' | 'left'
  label?: string
}

/** A JSON Canvas 1.0 document (jsoncanvas.org), the `.canvas` files Obsidian opens; groups come first, below the cards. */
export interface CanvasDocument {
  nodes: CanvasNode[]
  edges: CanvasEdge[]
}

/** How `toCanvas` names the notes and gathers them. */
export interface CanvasOptions {
  /**
   * The plan vault's folder inside the Obsidian vault that holds it, such
   * as `Plans/blog`: file cards name notes from the Obsidian vault's root.
   *
   * @default '' (the plan vault is the Obsidian vault)
   */
  folder?: string
  /**
   * Gathers notes into groups: returns the label of a node's group, or
   * `undefined` for a node drawn on its own. The notes of one group are laid
   * out together inside a group box.
   *
   * @default no groups
   */
  group?: (node: PlanNode) => string | undefined
}

/** Colours of the statuses, as presets so they follow Obsidian's theme; pending is left uncoloured. */
const STATUS_PRESETS: Record<NodeStatus, CanvasColor | undefined> = Object.fromEntries(
  Object.entries(STATUS_COLOURS).map(([status, colour]) => [status, colour.canvas]),
) as Record<NodeStatus, CanvasColor | undefined>
/** Colours of the start and the terminals when there is no run to show. */
const ROLE_COLOURS = { start: '6', terminal: '5', missing: '1' } as const satisfies Record<string, CanvasColor>
const CARD = { width: 320, height: 200 }
const MISSING_CARD = { width: 320, height: 80 }
const GAP = { x: 80, y: 120 }
const GROUP_PADDING = 40

/** Something the layout places: a card, or a group laid out inside. */
interface Unit {
  key: string
  width: number
  height: number
  /** Offsets of the cards inside a group, from its top-left corner. */
  inner?: Map<string, { x: number; y: number }>
  label?: string
}

/**
 * The plan as a JSON Canvas 1.0 document, the format of Obsidian's `.canvas`
 * files: one `file` card per note (clicking it opens the note), one edge per
 * plan edge, labelled with its condition. The layout is layered from the
 * start: the start alone in the top row, each row the notes one hop further
 * (then a row of the notes the start cannot reach), edges down the page,
 * loops drawn back up the right side. With `state`, each card's colour is its
 * status (yellow active, green done, cyan waiting, pending uncoloured);
 * without, the start is purple and the terminals cyan. Links to notes that
 * do not exist are red text cards, so an invalid plan can be pictured too.
 * With `options.group`, the notes of a group are laid out together inside a
 * `group` node (drawn first, so below the cards). Each subplan is a group
 * labelled with its folder (`research/`), laid out like a plan of its own
 * in the row below the note that runs it, with an edge from that note to it.
 *
 * @throws `TypeError` when `options.folder` is not a relative path inside the Obsidian vault.
 */
export function toCanvas(graph: PlanGraph, state?: PictureState, options: CanvasOptions = {}): CanvasDocument {
  const { groups, cards, edges } = canvasOf(graph, state, options.group, { folder: vaultFolder(options.folder ?? ''), plan: '', key: '' })
  return { nodes: [...groups, ...cards], edges }
}

/** A plan laid out from (0, 0): its groups (outer first), its cards, its edges and its size. */
interface Laid {
  groups: CanvasNode[]
  cards: CanvasNode[]
  edges: CanvasEdge[]
  width: number
  height: number
}

/**
 * Lays out one plan: `at.folder` is its folder from the Obsidian vault's
 * root, `at.plan` from the top plan vault (`''`, `research/`), and `at.key`
 * prefixes its ids so a subplan's never clash with its parent's.
 */
function canvasOf(graph: PlanGraph, state: PictureState | undefined, group: CanvasOptions['group'], at: { folder: string; plan: string; key: string }): Laid {
  const picture = pictureOf(graph, state)
  const key = (each: string) => `${at.key}${each}`
  const boxes = picture.boxes.map((box) => ({ ...box, key: key(box.key) }))
  const edges = picture.edges.map((edge) => ({ ...edge, from: key(edge.from), to: key(edge.to) }))
  const byKey = new Map(boxes.map((box) => [box.key, box]))
  const links = edges.map((edge): [string, string] => [edge.from, edge.to])
  const start = boxes[0]?.start ? boxes[0].key : undefined
  // The order the walk from the start meets the notes: a group is laid out from its first note met.
  const met = [...breadthFirst(links, start).keys()]

  // A group's key is `g0`, `g1` ... in the order its first note comes, never a box's `n0` or `m0`, whatever its label.
  const groupOf = new Map<string, string>()
  const members = new Map<string, Box[]>()
  const labels = new Map<string, string>()
  for (const box of boxes) {
    const label = box.node && group ? group(box.node) : undefined
    if (label === undefined) continue
    if (typeof label !== 'string')
      throw new TypeError(`Expected \`group\` to return a label (a string) or undefined, got \`${String(label)}\` for \`${box.node!.id}\``)
    const groupKey = [...labels].find(([, known]) => known === label)?.[0] ?? key(`g${labels.size}`)
    labels.set(groupKey, label)
    groupOf.set(box.key, groupKey)
    members.set(groupKey, [...(members.get(groupKey) ?? []), box])
  }
  const unitOf = (each: string) => groupOf.get(each) ?? each
  const units = new Map<string, Unit>()
  for (const box of boxes) {
    const unitKey = unitOf(box.key)
    if (units.has(unitKey)) continue
    const inside = members.get(unitKey)
    if (inside === undefined) {
      units.set(unitKey, cardUnit(box))
      continue
    }
    const keys = new Set(inside.map((member) => member.key))
    const entry = met.find((each) => keys.has(each)) ?? inside[0]!.key
    const inner = place(arrange(inside.map(cardUnit), links, entry))
    units.set(unitKey, {
      key: unitKey,
      width: inner.width + 2 * GROUP_PADDING,
      height: inner.height + 2 * GROUP_PADDING,
      inner: inner.at,
      label: labels.get(unitKey)!,
    })
  }
  // Each subplan: laid out on its own, then placed as one unit below the note that runs it, and the note's next notes below the subplan.
  const subplans: { key: string; from: string; laid: Laid }[] = []
  for (const [index, part] of subplansOf(graph, state).entries()) {
    const from = boxes.find((box) => box.node !== undefined && box.node === part.note)?.key
    if (from === undefined) continue
    const subKey = key(`s${index}`)
    const plan = `${at.plan}${part.folder}/`
    const laid = canvasOf(part.subplan, part.state, group, { folder: posix.join(at.folder, part.folder), plan, key: `${subKey}_` })
    subplans.push({ key: subKey, from, laid })
    units.set(subKey, { key: subKey, width: laid.width + 2 * GROUP_PADDING, height: laid.height + 2 * GROUP_PADDING, label: plan })
  }
  // For the rows, a link from a note that runs subplans starts below them instead.
  const below = (from: string) => {
    const run = subplans.filter((subplan) => subplan.from === from).map((subplan) => subplan.key)
    return run.length > 0 ? run : [from]
  }
  const unitLinks = [
    ...subplans.map((subplan): [string, string] => [subplan.from, subplan.key]),
    ...links.flatMap(([from, to]) => below(from).map((each): [string, string] => [each, to])),
  ]
    .map(([from, to]): [string, string] => [unitOf(from), unitOf(to)])
    .filter(([from, to]) => from !== to)
  const outer = place(arrange([...units.values()], unitLinks, start === undefined ? undefined : unitOf(start)))

  const groups: CanvasNode[] = []
  const cards: CanvasNode[] = []
  const nested: Laid[] = []
  const frames = new Map<string, Frame>()
  for (const unit of units.values()) {
    const corner = outer.at.get(unit.key)!
    const frame = { ...corner, width: unit.width, height: unit.height }
    frames.set(unit.key, frame)
    if (unit.label === undefined) continue
    groups.push({ id: unit.key, type: 'group', label: unit.label, ...frame })
    for (const [cardKey, offset] of unit.inner ?? [])
      frames.set(cardKey, {
        x: corner.x + GROUP_PADDING + offset.x,
        y: corner.y + GROUP_PADDING + offset.y,
        ...(byKey.get(cardKey)!.node ? CARD : MISSING_CARD),
      })
    const subplan = subplans.find((each) => each.key === unit.key)
    if (subplan) nested.push(moved(subplan.laid, corner.x + GROUP_PADDING, corner.y + GROUP_PADDING))
  }
  for (const box of boxes) {
    const frame = frames.get(box.key)!
    const colour = colourOf(box, state)
    const geometry = { ...frame, ...(colour === undefined ? {} : { color: colour }) }
    cards.push(
      box.node
        ? { id: box.key, type: 'file', file: posix.join(at.folder, box.node.file ?? `${box.node.id}.md`), ...geometry }
        : { id: box.key, type: 'text', text: box.label, ...geometry },
    )
  }
  const drawn = [...edges, ...subplans.map((subplan) => ({ from: subplan.from, to: subplan.key, label: '' }))]
  const canvasEdges = drawn.map((edge, index): CanvasEdge => {
    const sides = sidesOf(frames.get(edge.from)!, frames.get(edge.to)!, edge.from === edge.to)
    return { id: key(`e${index}`), fromNode: edge.from, toNode: edge.to, ...sides, ...(edge.label === '' ? {} : { label: edge.label }) }
  })
  return {
    groups: [...groups, ...nested.flatMap((laid) => laid.groups)],
    cards: [...cards, ...nested.flatMap((laid) => laid.cards)],
    edges: [...canvasEdges, ...nested.flatMap((laid) => laid.edges)],
    width: outer.width,
    height: outer.height,
  }
}

/** A laid-out plan moved right by `dx` and down by `dy`. */
function moved(laid: Laid, dx: number, dy: number): Laid {
  const move = (node: CanvasNode): CanvasNode => ({ ...node, x: node.x + dx, y: node.y + dy })
  return { ...laid, groups: laid.groups.map(move), cards: laid.cards.map(move) }
}

function cardUnit(box: Box): Unit {
  return { key: box.key, ...(box.node ? CARD : MISSING_CARD) }
}

/**
 * Rows of units, top to bottom: breadth-first layers from `start` (so the
 * start is alone in the top row), then one row of the units the start
 * cannot reach, each row in the order the units were met.
 */
function arrange(units: Unit[], links: [string, string][], start: string | undefined): Unit[][] {
  const byKey = new Map(units.map((unit) => [unit.key, unit]))
  const layer = breadthFirst(
    links.filter(([from, to]) => byKey.has(from) && byKey.has(to)),
    start !== undefined && byKey.has(start) ? start : undefined,
  )
  const rows: Unit[][] = []
  for (const [key, depth] of layer) (rows[depth] ??= []).push(byKey.get(key)!)
  return [...rows, units.filter((unit) => !layer.has(unit.key))].filter((row) => row.length > 0)
}

/** How many hops each key is from `start`, in the order a breadth-first walk meets them. */
function breadthFirst(links: [string, string][], start: string | undefined): Map<string, number> {
  const layer = new Map<string, number>()
  if (start === undefined) return layer
  layer.set(start, 0)
  const queue = [start]
  for (let index = 0; index < queue.length; index++) {
    const from = queue[index]!
    for (const [source, target] of links) {
      if (source !== from || layer.has(target)) continue
      layer.set(target, layer.get(from)! + 1)
      queue.push(target)
    }
  }
  return layer
}

/** Positions of the rows' units, each row centred under the widest, and the size of the whole. */
function place(rows: Unit[][]): { at: Map<string, { x: number; y: number }>; width: number; height: number } {
  const widthOf = (row: Unit[]) => row.reduce((sum, unit) => sum + unit.width, 0) + GAP.x * (row.length - 1)
  const width = Math.max(0, ...rows.map(widthOf))
  const at = new Map<string, { x: number; y: number }>()
  let y = 0
  for (const row of rows) {
    let x = Math.round((width - widthOf(row)) / 2)
    for (const unit of row) {
      at.set(unit.key, { x, y })
      x += unit.width + GAP.x
    }
    y += Math.max(...row.map((unit) => unit.height)) + GAP.y
  }
  return { at, width, height: Math.max(0, y - GAP.y) }
}

/** Down the page from bottom to top; back up the right side for a loop; sideways within a row. */
function sidesOf(from: Frame, to: Frame, self: boolean): Pick<CanvasEdge, 'fromSide' | 'toSide'> {
  if (self) return { fromSide: 'right', toSide: 'top' }
  if (to.y >= from.y + from.height) return { fromSide: 'bottom', toSide: 'top' }
  if (to.y + to.height <= from.y) return { fromSide: 'right', toSide: 'right' }
  return to.x > from.x ? { fromSide: 'right', toSide: 'left' } : { fromSide: 'left', toSide: 'right' }
}

interface Frame {
  x: number
  y: number
  width: number
  height: number
}

function colourOf(box: Box, state: PictureState | undefined): CanvasColor | undefined {
  if (!box.node) return ROLE_COLOURS.missing
  if (state) return STATUS_PRESETS[statusOf(box.node, state)]
  return box.start ? ROLE_COLOURS.start : box.terminal ? ROLE_COLOURS.terminal : undefined
}

/** `folder` as a clean relative POSIX path; a TypeError for one that leaves the Obsidian vault. */
function vaultFolder(folder: unknown): string {
  const clean =
    typeof folder === 'string'
      ? posix
          .normalize(folder.replace(/\\/g, '/'))
          .replace(/^\.\/?$/, '')
          .replace(/\/$/, '')
      : undefined
  if (clean === undefined || posix.isAbsolute(clean) || clean === '..' || clean.startsWith('../')) {
    throw new TypeError(`Expected \`folder\` to be the plan vault's path inside the Obsidian vault, like \`Plans/blog\`, got \`${String(folder)}\``)
  }
  return clean
}
