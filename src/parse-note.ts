import type { ListItem, Nodes, Paragraph, PhrasingContent, Root } from 'mdast'
import remarkParse from 'remark-parse'
import wikiLinkPlugin from 'remark-wiki-link'
import { unified } from 'unified'
import { z } from 'zod'
import { parseFrontmatter } from './frontmatter.js'
import type { FileStamp } from './fs-atomic.js'
import type { JudgeKind, NodeStatus, NodeType, PlanIssue } from './types.js'

/** An edge as written in a note, before its link is resolved to a node. */
export interface RawEdge {
  label: string
  conditional: boolean
  /** The link's path with `|alias`, `#heading`, `@L12` and `.md` removed, NFC. */
  link: string
  /** Set when the link climbs out of the vault (`[[../x]]`): it matches no note. */
  outside: boolean
  /** The box of a task item: `true` ticked (`[x]`), `false` any other box (`[ ]`, Obsidian's `[-]` ...), `undefined` no box. */
  checked: boolean | undefined
  /** 1-based line of the item's list marker (the link may sit on a later line of the item). */
  itemLine: number
  line: number
  column: number
}

/** One note read from its text: the node's fields with unresolved edges. */
export interface ParsedNote {
  id: string
  file: string
  title: string
  body: string
  type: NodeType
  status: NodeStatus
  tools?: string[]
  role?: string
  maxVisits: number
  judge?: JudgeKind
  edges: RawEdge[]
  aliases: string[]
  frontmatter: Record<string, unknown>
  /** Text under `## Feedback`, for human decisions. */
  feedback: string
  issues: PlanIssue[]
  /** The note as read from disk, and the stamp of that version (set by `readNote`). */
  text?: string
  stamp?: FileStamp
}

/** The knobs of SPEC section 2; any other key is the user's. */
const knobSchemas = {
  type: z.enum(['step', 'start']),
  status: z.enum(['pending', 'active', 'done', 'waiting']),
  tools: z.array(z.string().min(1)),
  role: z.string().min(1),
  max_visits: z.number().int().min(1),
  judge: z.enum(['llm', 'human']),
} as const

/** The value the loader takes from a frontmatter knob: `undefined` when the key is empty or its value invalid. */
export function readKnob(key: keyof typeof knobSchemas, value: unknown): unknown {
  if (value === null || value === undefined) return undefined
  const parsed = knobSchemas[key].safeParse(value)
  return parsed.success ? parsed.data : undefined
}

/** Default visit budget of a node. */
export const DEFAULT_MAX_VISITS = 3

const processor = unified().use(remarkParse).use(wikiLinkPlugin, { aliasDivider: '|' })

/*
 * Bounds on what the markdown parser is given. Its work grows faster than the
 * text for deep nesting and long runs of brackets or emphasis (minutes for a
 * 250 KB note), and its trees can overflow the stack; no real heading or
 * `## Next` list comes near these.
 */
const MAX_TITLE_CHARS = 1_000
/** A `## Next` or `## Feedback` heading, formatting included, is short. */
const MAX_SECTION_NAME_CHARS = 64
const MAX_NEXT_CHARS = 50_000
const MAX_NEXT_LINE_CHARS = 1_000
/** Indentation, `>` and list markers opening a line. */
const MAX_NEXT_NESTING_CHARS = 64
const CONTAINER_PREFIX = /^(?:[ \t]*(?:>|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t])))*[ \t]*/

/** Turns a vault-relative file path (`review/final.md`) into a node id (`review/final`). */
export function idFromFile(file: string): string {
  return file.replace(/\\/g, '/').replace(/\.md$/i, '').normalize('NFC')
}

/**
 * Reads one note. Never throws on the note's content: every problem becomes
 * a diagnostic pointing into the real file.
 */
export function parseNote(file: string, text: string): ParsedNote {
  const id = idFromFile(file)
  const issues: PlanIssue[] = []
  const report = (code: string, message: string, line?: number, column?: number) => {
    const issue: PlanIssue = { code, severity: 'error', message, node: id, file }
    if (line !== undefined) issue.line = line
    if (column !== undefined) issue.column = column
    issues.push(issue)
  }

  const frontmatter = parseFrontmatter(text)
  for (const problem of frontmatter.problems) report('invalid-frontmatter', problem.message, problem.line, problem.column)
  const data = frontmatter.data
  const knobs: Record<string, unknown> = {}
  for (const [key, schema] of Object.entries(knobSchemas)) {
    if (!Object.hasOwn(data, key) || data[key] === null) continue
    const parsed = schema.safeParse(data[key])
    const position = frontmatter.positions.get(key)
    if (parsed.success) knobs[key] = parsed.data
    else report('invalid-frontmatter', `\`${key}\` ${describeKnobError(key, data[key])}`, position?.line, position?.column)
  }

  const contentStart = frontmatter.split.contentStart
  const content = text.slice(contentStart)
  const lineOffset = countLines(text, contentStart)
  const headings = scanHeadings(content)

  let title: string | undefined
  const cut: [number, number][] = []
  const edges: RawEdge[] = []
  let feedback = ''
  for (const [index, heading] of headings.entries()) {
    if (heading.depth === 1 && title === undefined) {
      title = heading.text.length > MAX_TITLE_CHARS ? heading.text.trim() : inlineText(heading.text)
      // The title line leaves the body only when it opens the note, so nothing around it moves.
      if (content.slice(0, heading.start).trim() === '') cut.push([heading.start, heading.bodyStart])
    }
    const name = heading.depth === 2 && isSectionName(heading.text) ? inlineText(heading.text).toLowerCase() : undefined
    if (name !== 'next' && name !== 'feedback') continue
    let end = content.length
    for (const next of headings.slice(index + 1)) {
      if (next.depth <= 2) {
        end = next.start
        break
      }
    }
    cut.push([heading.start, end])
    const sectionText = content.slice(heading.bodyStart, end)
    if (name === 'feedback') feedback += sectionText.trim()
    else edges.push(...readEdges(sectionText, id.slice(0, id.lastIndexOf('/') + 1), lineOffset + heading.line, report))
  }
  let body = ''
  let from = 0
  for (const [start, end] of cut) {
    body += content.slice(from, start)
    from = end
  }
  body += content.slice(from)

  const aliases = ([] as unknown[]).concat(data.aliases ?? data.alias ?? []).filter((a): a is string => typeof a === 'string' && a.trim() !== '')
  const note: ParsedNote = {
    id,
    file,
    title: title || id,
    body: body.replace(/\r\n/g, '\n').trim(),
    type: (knobs.type as NodeType | undefined) ?? 'step',
    status: (knobs.status as NodeStatus | undefined) ?? 'pending',
    maxVisits: (knobs.max_visits as number | undefined) ?? DEFAULT_MAX_VISITS,
    edges,
    aliases: aliases.map((alias) => alias.trim().normalize('NFC')),
    frontmatter: data,
    feedback,
    issues,
  }
  if (knobs.tools !== undefined) note.tools = knobs.tools as string[]
  if (knobs.role !== undefined) note.role = knobs.role as string
  if (knobs.judge !== undefined) note.judge = knobs.judge as JudgeKind
  return note
}

/**
 * Normalises the inside of a wikilink to a vault path: drops `|alias`,
 * `#heading`, `^block`, SilverBullet's `@L12` / `@12` position and `.md`.
 * A link starting with `./` or `../` is relative to `folder`, the linking
 * note's folder, as Obsidian writes links in its relative-path format.
 */
export function normalizeLink(raw: string, folder = ''): { link: string; outside: boolean } {
  let link = raw.split('|')[0]!.split('#')[0]!.replace(/@L?\d+(C\d+)?$/i, '').trim().replace(/\\/g, '/')
  link = link.replace(/\.md$/i, '').normalize('NFC')
  const parts: string[] = /^\.\.?(\/|$)/.test(link) ? folder.split('/').filter(Boolean) : []
  for (const part of link.replace(/^\/+/, '').split('/')) {
    if (part === '' || part === '.') continue
    if (part === '..') {
      // Kept as written, so it can never equal a note id and match a note.
      if (parts.length === 0) return { link, outside: true }
      parts.pop()
    } else parts.push(part)
  }
  return { link: parts.join('/'), outside: false }
}

interface HeadingLine {
  depth: number
  text: string
  /** Offset of the heading line and of the line after it. */
  start: number
  bodyStart: number
  /** 1-based line of the heading within the content. */
  line: number
}

const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\r?$/
const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})/

/**
 * Finds the top-level ATX headings of a note, skipping fenced code. A line
 * scan, so that loading a large vault costs about as much as reading it: the
 * full markdown parser only sees the `## Next` sections.
 */
function scanHeadings(content: string): HeadingLine[] {
  const headings: HeadingLine[] = []
  let fence: string | undefined
  let line = 0
  for (let start = 0; start < content.length; ) {
    let end = content.indexOf('\n', start)
    if (end === -1) end = content.length
    const text = content.slice(start, end)
    line++
    if (fence !== undefined) {
      const close = FENCE_OPEN.exec(text)
      if (close && close[1]![0] === fence[0] && close[1]!.length >= fence.length && text.trim() === close[1]) fence = undefined
    } else {
      const open = FENCE_OPEN.exec(text)
      const atx = open ? undefined : ATX.exec(text)
      if (open && !(open[1]![0] === '`' && text.slice(open[0].length).includes('`'))) fence = open[1]
      else if (atx) headings.push({ depth: atx[1]!.length, text: atx[2] ?? '', start, bodyStart: Math.min(end + 1, content.length), line })
    }
    start = end + 1
  }
  return headings
}

/** Whether a level-2 heading may read `Next` or `Feedback`, before paying for the markdown parser. */
function isSectionName(text: string): boolean {
  return text.length <= MAX_SECTION_NAME_CHARS && /^(?:next|feedback)$/i.test(text.replace(/[^\p{L}]/gu, ''))
}

/** The plain text of one line of inline markdown (`**Next**` -> `Next`). */
function inlineText(markdown: string): string {
  if (!/[*_`[\]<&\\]/.test(markdown)) return markdown.trim()
  try {
    return plainText(processor.parse(markdown) as Root).trim()
  } catch {
    return markdown.trim()
  }
}

/**
 * Reads the edges of a `## Next` section. `fast`: plain items (the usual
 * case) are read line by line, since the markdown parser costs as much as
 * everything else a load does; any other section goes to the parser.
 */
export function readEdges(
  section: string,
  folder: string,
  lineOffset: number,
  report: (code: string, message: string, line?: number, column?: number) => void,
  fast = true,
): RawEdge[] {
  const edges: RawEdge[] = []
  const problem = sectionProblem(section)
  if (problem) {
    report('unreadable-next', `the \`## Next\` section ${problem.message}; write one item per line, \`- label -> [[target]]\``, lineOffset + problem.line, 1)
    return edges
  }
  if (fast && readSimpleItems(section, folder, lineOffset, report, edges)) return edges
  edges.length = 0
  try {
    readItems(section, processor.parse(section) as Root, folder, lineOffset, report, edges)
  } catch (error) {
    report('unreadable-next', `the \`## Next\` section cannot be read (${String((error as Error).message ?? error).slice(0, 200)})`, lineOffset, 1)
    return []
  }
  return edges
}

/** Why a `## Next` section is too big or too deep to hand to the parser, and where; `undefined` when it is fine. */
function sectionProblem(section: string): { message: string; line: number } | undefined {
  if (section.length > MAX_NEXT_CHARS) return { message: `is over ${MAX_NEXT_CHARS} characters, too long to read`, line: 0 }
  let line = 0
  for (let start = 0; start < section.length; ) {
    let end = section.indexOf('\n', start)
    if (end === -1) end = section.length
    line++
    const text = section.slice(start, end)
    if (text.length > MAX_NEXT_LINE_CHARS) return { message: `has a line over ${MAX_NEXT_LINE_CHARS} characters, too long to read`, line }
    if (CONTAINER_PREFIX.exec(text)![0].length > MAX_NEXT_NESTING_CHARS) {
      return { message: `nests too deeply to read (a line is indented or nested over ${MAX_NEXT_NESTING_CHARS} characters deep)`, line }
    }
    start = end + 1
  }
  return undefined
}

const SIMPLE_ITEM = /^([-*+]|\d{1,9}[.)])([ \t]+)(\[([^\]\n])\][ \t]+)?(.*?)[ \t]*\r?$/
const WIKILINK = /\[\[([^[\]\n]*)\]\]/g

/**
 * Reads a section whose every line is blank or a top-level list item of
 * plain text and wikilinks: no inline markup, no escapes, no HTML, no
 * continuation lines. Returns `false` (reading nothing) for anything else.
 */
function readSimpleItems(
  section: string,
  folder: string,
  lineOffset: number,
  report: (code: string, message: string, line?: number, column?: number) => void,
  edges: RawEdge[],
): boolean {
  const lines = section.split('\n')
  const problems: [line: number, count: number][] = []
  const found: RawEdge[] = []
  for (const [index, text] of lines.entries()) {
    if (text.trim() === '') continue
    const item = SIMPLE_ITEM.exec(text)
    if (!item) return false
    const rest = item[5]!
    const links = [...rest.matchAll(WIKILINK)]
    // Plain text, `->` and wikilinks only: anything markdown could read as markup goes to the parser.
    if (/[`\\<>&*_!~[\]]/.test(rest.replace(WIKILINK, ' ').replace(/->/g, ' '))) return false
    if (links.some((link) => link[1]!.trim() === '' || /[`\\<>&*_~]/.test(link[1]!))) return false
    if (links.length === 0) continue
    const prefix = item[1]!.length + item[2]!.length + (item[3]?.length ?? 0)
    if (links.length > 1) {
      problems.push([lineOffset + index + 1, links.length])
      continue
    }
    const first = links[0]!
    let label = rest.slice(0, first.index).replace(/\s*(->|→)\s*$/, '').trim()
    const { link, outside } = normalizeLink(first[1]!, folder)
    const conditional = label !== '' && label.toLowerCase() !== 'next'
    if (!conditional && label.toLowerCase() !== 'next') label = ''
    const checked = item[4] === undefined ? undefined : /[xX]/.test(item[4])
    const line = lineOffset + index + 1
    found.push({ label, conditional, link, outside, checked, line, itemLine: line, column: prefix + first.index! + 1 })
  }
  for (const [line, count] of problems) report('multiple-targets', `one item under \`## Next\` links ${count} notes; write one item per target`, line, 1)
  edges.push(...found)
  return true
}

function readItems(
  section: string,
  tree: Root,
  folder: string,
  lineOffset: number,
  report: (code: string, message: string, line?: number, column?: number) => void,
  edges: RawEdge[],
): void {
  for (const list of tree.children) {
    if (list.type !== 'list') continue
    for (const item of list.children as ListItem[]) {
      const paragraph = item.children.find((child): child is Paragraph => child.type === 'paragraph')
      if (!paragraph) continue
      const links = collectLinks(paragraph)
      if (links.length === 0) continue
      const first = links[0]!
      const line = first.position!.start.line + lineOffset
      const column = first.position!.start.column
      if (links.length > 1) {
        const start = item.position!.start
        report('multiple-targets', `one item under \`## Next\` links ${links.length} notes; write one item per target`, start.line + lineOffset, start.column)
        continue
      }
      const linkStart = first.position!.start.offset!
      const before = paragraph.children.filter((child) => child.position!.end.offset! <= linkStart)
      const beforeText = plainText({ type: 'paragraph', children: before })
      // The box as written, one character between brackets and a space after: an escaped `\[x]` is part of the label.
      const box = /^\s*\[([^\]\n])\][ \t]+/.exec(section.slice(paragraph.position!.start.offset!, linkStart))
      const checked = box ? /[xX]/.test(box[1]!) : item.checked ?? undefined
      let label = (box ? beforeText.replace(/^\s*\[[^\]\n]\][ \t]+/, '') : beforeText).replace(/\s*(->|→)\s*$/, '').trim()
      const itemLine = item.position!.start.line + lineOffset
      const { link, outside } = normalizeLink(String(first.value ?? ''), folder)
      const conditional = label !== '' && label.toLowerCase() !== 'next'
      if (!conditional && label.toLowerCase() !== 'next') label = ''
      edges.push({ label, conditional, link, outside, checked, line, itemLine, column })
    }
  }
}

type WikiLinkNode = PhrasingContent & { value?: string }

function collectLinks(node: Nodes): WikiLinkNode[] {
  const found: WikiLinkNode[] = []
  const visit = (current: Nodes) => {
    if ((current.type as string) === 'wikiLink') found.push(current as WikiLinkNode)
    else if ('children' in current) for (const child of current.children) visit(child as Nodes)
  }
  visit(node)
  return found
}

function plainText(node: Nodes): string {
  if ((node.type as string) === 'wikiLink') return ''
  if ('value' in node && typeof node.value === 'string') return node.value
  if ('children' in node) return (node.children as Nodes[]).map(plainText).join('')
  return ''
}

function countLines(text: string, end: number): number {
  let lines = 0
  for (let index = text.indexOf('\n'); index !== -1 && index < end; index = text.indexOf('\n', index + 1)) lines++
  return lines
}

function describeKnobError(key: string, value: unknown): string {
  const got = `got \`${JSON.stringify(value)?.slice(0, 60)}\``
  switch (key) {
    case 'type':
      return `must be \`step\` or \`start\`, ${got}`
    case 'status':
      return `must be one of \`pending\`, \`active\`, \`done\`, \`waiting\`, ${got}`
    case 'tools':
      return `must be a list of tool names, ${got}`
    case 'role':
      return `must be a role name such as \`review\`, ${got}`
    case 'max_visits':
      return `must be an integer from 1 up, ${got}`
    default:
      return `must be \`llm\` or \`human\`, ${got}`
  }
}
