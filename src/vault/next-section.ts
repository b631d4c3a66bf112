import type { ListItem, Nodes, Paragraph, PhrasingContent, Root } from 'mdast'
import { fastPathCounts } from './fast-paths.js'
import { canRequireEsm, lazyModule } from '../core/lazy-module.js'
import type { PlanIssueCode } from '../core/types.js'

type Parser = { parse(markdown: string): unknown }
type Modules = [typeof import('unified'), typeof import('remark-parse'), typeof import('remark-wiki-link')]

const unified = lazyModule<Modules[0]>('unified')
const remarkParse = lazyModule<Modules[1]>('remark-parse')
const wikiLink = lazyModule<Modules[2]>('remark-wiki-link')
/** A Node that cannot `require()` an ES module (before 20.19) imports the parser with this module, as it always did. */
const imported: Modules | undefined = canRequireEsm ? undefined : await Promise.all([import('unified'), import('remark-parse'), import('remark-wiki-link')])
let parser: Parser | undefined

/**
 * The markdown parser, with wikilinks; only ever given small pieces of a
 * note (see the bounds below). Loaded on first use: the plain readers of
 * `## Next` items and headings read most notes without it.
 */
export function markdownParser(): Parser {
  if (parser) return parser
  const [{ unified: processor }, { default: parse }, { default: wikiLinkPlugin }] = imported ?? [unified(), remarkParse(), wikiLink()]
  parser = processor().use(parse).use(wikiLinkPlugin, { aliasDivider: '|' })
  return parser
}

/*
 * Bounds on the `## Next` sections the parser is given: its work grows faster
 * than the text for deep nesting and long runs of brackets or emphasis, and
 * its trees can overflow the stack; no real list comes near these.
 */
const MAX_NEXT_CHARS = 50_000
const MAX_NEXT_LINE_CHARS = 1_000
/** Indentation, `>` and list markers opening a line. */
const MAX_NEXT_NESTING_CHARS = 64
/** Emphasis marks (`*`, `_`) outside wikilinks: the parser's emphasis pairing is quadratic in them. */
const MAX_NEXT_EMPHASIS_MARKS = 1_000
const CONTAINER_PREFIX = /^(?:[ \t]*(?:>|[-*+](?=[ \t])|\d{1,9}[.)](?=[ \t])))*[ \t]*/

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

/** A link path with nothing to normalise: words of letters, digits, `_` and `-` between single `/`. */
const PLAIN_PATH = /^[A-Za-z0-9_-]+(?:\/[A-Za-z0-9_-]+)*$/

/**
 * Normalises the inside of a wikilink to a vault path: drops `|alias`,
 * `#heading`, `^block`, SilverBullet's `@L12` / `@12` position and `.md`.
 * A link starting with `./` or `../` is relative to `folder`, the linking
 * note's folder, as Obsidian writes links in its relative-path format.
 * `fast`: a plain path is returned as it is, without the steps that leave it unchanged.
 */
export function normalizeLink(raw: string, folder = '', fast = true): { link: string; outside: boolean } {
  // The usual link, a plain path (`area-02/n00212|skip ahead`), is already normal: no dot, space, `@` or `\`.
  const bar = raw.indexOf('|')
  const hash = raw.indexOf('#')
  const cut = bar === -1 ? hash : hash === -1 ? bar : Math.min(bar, hash)
  const path = cut === -1 ? raw : raw.slice(0, cut)
  if (fast && PLAIN_PATH.test(path)) return { link: path, outside: false }
  let link = raw
    .split('|')[0]!
    .split('#')[0]!
    .replace(/@L?\d+(C\d+)?$/i, '')
    .trim()
    .replace(/\\/g, '/')
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

/**
 * Reads the edges of a `## Next` section. `fast`: plain items (the usual
 * case) are read line by line, since the markdown parser costs as much as
 * everything else a load does; any other section goes to the parser.
 */
export function readEdges(
  section: string,
  folder: string,
  lineOffset: number,
  report: (code: PlanIssueCode, message: string, line?: number, column?: number) => void,
  fast = true,
): RawEdge[] {
  const edges: RawEdge[] = []
  const problem = sectionProblem(section)
  if (problem) {
    report('unreadable-next', `the \`## Next\` section ${problem.message}; write one item per line, \`- label -> [[target]]\``, lineOffset + problem.line, 1)
    return edges
  }
  if (fast && readSimpleItems(section, folder, lineOffset, report, edges)) {
    fastPathCounts.next++
    return edges
  }
  edges.length = 0
  try {
    readItems(section, markdownParser().parse(section) as Root, folder, lineOffset, report, edges)
  } catch (error) {
    report('unreadable-next', `the \`## Next\` section cannot be read (${String((error as Error).message ?? error).slice(0, 200)})`, lineOffset, 1)
    return []
  }
  return edges
}

/** Why a `## Next` section is too big or too deep to hand to the parser, and where; `undefined` when it is fine. */
function sectionProblem(section: string): { message: string; line: number } | undefined {
  if (section.length > MAX_NEXT_CHARS) return { message: `is over ${MAX_NEXT_CHARS} characters, too long to read`, line: 0 }
  const marks = section.includes('*') || section.includes('_') ? section.replace(WIKILINK, '').replace(/[^*_]+/g, '').length : 0
  if (marks > MAX_NEXT_EMPHASIS_MARKS)
    return { message: `has ${marks} emphasis marks (\`*\`, \`_\`), over the ${MAX_NEXT_EMPHASIS_MARKS} it can read`, line: 0 }
  let line = 0
  for (let start = 0; start < section.length;) {
    let end = section.indexOf('\n', start)
    if (end === -1) end = section.length
    line++
    if (end - start > MAX_NEXT_LINE_CHARS) return { message: `has a line over ${MAX_NEXT_LINE_CHARS} characters, too long to read`, line }
    // A line no longer than the bound cannot nest past it.
    if (end - start > MAX_NEXT_NESTING_CHARS && CONTAINER_PREFIX.exec(section.slice(start, end))![0].length > MAX_NEXT_NESTING_CHARS) {
      return { message: `nests too deeply to read (a line is indented or nested over ${MAX_NEXT_NESTING_CHARS} characters deep)`, line }
    }
    start = end + 1
  }
  return undefined
}

// The text is trimmed after the match: `(.*?)[ \t]*$` would be quadratic in a long run of white space.
const SIMPLE_ITEM = /^([-*+]|\d{1,9}[.)])([ \t]+)(\[([^\]\n])\][ \t]+)?(.*?)\r?$/
const WIKILINK = /\[\[([^[\]\n]*)\]\]/g

/**
 * Reads a section whose every line is blank, a heading or a top-level list
 * item of plain text and wikilinks: no inline markup, no escapes, no HTML,
 * no continuation lines. Returns `false` (reading nothing) for anything else.
 */
function readSimpleItems(
  section: string,
  folder: string,
  lineOffset: number,
  report: (code: PlanIssueCode, message: string, line?: number, column?: number) => void,
  edges: RawEdge[],
): boolean {
  const lines = section.split('\n')
  const problems: [line: number, count: number][] = []
  const found: RawEdge[] = []
  for (let index = 0; index < lines.length; index++) {
    const text = lines[index]!
    // Blank lines, and headings (of level 3 and up: the section ends at the others), hold no edges.
    // (A line opening with `-` is neither: the usual item is not looked at twice.)
    if (text.charCodeAt(0) !== 0x2d && (text.trim() === '' || /^ {0,3}#{1,6}(?:[ \t]|\r?$)/.test(text))) continue
    const item = SIMPLE_ITEM.exec(text)
    if (!item) return false
    const rest = trimBlanks(item[5]!)
    // An item that opens a heading (`- # [[x]]`) holds a heading, not a paragraph: markdown reads no edge from it.
    if (rest.startsWith('#') && /^#{1,6}(?:[ \t]|$)/.test(rest)) return false
    const links: RegExpExecArray[] = []
    WIKILINK.lastIndex = 0
    for (let link = WIKILINK.exec(rest); link; link = WIKILINK.exec(rest)) links.push(link)
    // Plain text, `->` and wikilinks only: anything markdown could read as markup goes to the parser.
    for (let from = 0, at = 0; at <= links.length; at++) {
      const to = at < links.length ? links[at]!.index : rest.length
      if (hasMarkup(rest, from, to)) return false
      if (at < links.length) from = to + links[at]![0].length
    }
    if (links.some((link) => link[1]!.trim() === '' || /[`\\<>&*_~]/.test(link[1]!))) return false
    if (links.length === 0) continue
    const prefix = item[1]!.length + item[2]!.length + (item[3]?.length ?? 0)
    if (links.length > 1) {
      problems.push([lineOffset + index + 1, links.length])
      continue
    }
    const first = links[0]!
    let label = withoutArrow(rest.slice(0, first.index))
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

/**
 * Whether `text` between `from` and `to` (no wikilink in it) holds a character
 * markdown could read as markup: `` ` \ < > & * _ ! ~ [ ] ``, a `>` that ends
 * an arrow (`->`) excepted.
 */
function hasMarkup(text: string, from: number, to: number): boolean {
  for (let at = from; at < to; at++) {
    const code = text.charCodeAt(at)
    if (code === GREATER_THAN) {
      if (at === from || text.charCodeAt(at - 1) !== HYPHEN) return true
    } else if (code < 128 && MARKUP[code] === 1) return true
  }
  return false
}

const GREATER_THAN = 0x3e
const HYPHEN = 0x2d
/** The ASCII characters of markup, by code. */
const MARKUP = new Uint8Array(128)
for (const char of '`\\<&*_!~[]') MARKUP[char.charCodeAt(0)] = 1

function readItems(
  section: string,
  tree: Root,
  folder: string,
  lineOffset: number,
  report: (code: PlanIssueCode, message: string, line?: number, column?: number) => void,
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
      const checked = box ? /[xX]/.test(box[1]!) : (item.checked ?? undefined)
      let label = withoutArrow(box ? beforeText.replace(/^\s*\[[^\]\n]\][ \t]+/, '') : beforeText)
      const itemLine = item.position!.start.line + lineOffset
      const { link, outside } = normalizeLink(String(first.value ?? ''), folder)
      const conditional = label !== '' && label.toLowerCase() !== 'next'
      if (!conditional && label.toLowerCase() !== 'next') label = ''
      edges.push({ label, conditional, link, outside, checked, line, itemLine, column })
    }
  }
}

/** A label without the arrow before its link, trimmed: what `replace(/\s*(->|→)\s*$/, '').trim()` gives, in linear time. */
function withoutArrow(text: string): string {
  const trimmed = text.trimEnd()
  const arrow = trimmed.endsWith('->') ? 2 : trimmed.endsWith('→') ? 1 : 0
  return trimmed.slice(0, trimmed.length - arrow).trim()
}

/** `text` without the spaces and tabs that end it. */
function trimBlanks(text: string): string {
  let end = text.length
  while (end > 0 && (text[end - 1] === ' ' || text[end - 1] === '\t')) end--
  return text.slice(0, end)
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

/** The plain text of a markdown tree, wikilinks left out. */
export function plainText(node: Nodes): string {
  if ((node.type as string) === 'wikiLink') return ''
  if ('value' in node && typeof node.value === 'string') return node.value
  if ('children' in node) return (node.children as Nodes[]).map(plainText).join('')
  return ''
}
