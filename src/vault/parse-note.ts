import type { Root } from 'mdast'
import { parseFrontmatter } from './frontmatter.js'
import type { FileStamp } from './fs-atomic.js'
import { markdownParser, plainText, readEdges, type RawEdge } from './next-section.js'
import { scanHeadings } from './headings.js'
import { checkKnob, KNOB_KEYS, KNOBS, knobExpects, type KnobKey } from '../core/knobs.js'
import { countLines } from '../core/text.js'
import type { JudgeKind, NodeOrigin, NodeStatus, NodeType, PlanIssue, PlanIssueCode, PlanNode } from '../core/types.js'

/** One note read from its text: the node's fields with unresolved edges. */
export interface ParsedNote extends Omit<PlanNode, 'edges' | 'file' | 'issues' | 'at'> {
  file: string
  edges: RawEdge[]
  aliases: string[]
  /** Text under `## Feedback`, for human decisions. */
  feedback: string
  /** Offset in the note's text where its last `## Feedback` section ends, when it has one. */
  feedbackEnd?: number
  issues: PlanIssue[]
  /** Where its frontmatter keys are (the node's `at`); a plain field here, so copies of the note keep it. */
  origin: NodeOrigin
  /** The note as read from disk, and the stamp of that version (set by `readNote`). */
  text?: string
  stamp?: FileStamp
}

/** The value the loader takes from a frontmatter knob: `undefined` when the key is empty or its value invalid. */
export function readKnob(key: KnobKey, value: unknown): unknown {
  return value === null || value === undefined ? undefined : checkKnob(key, value)
}

/** The `aliases:` (or `alias:`) a note's frontmatter gives it, trimmed and in NFC, as links are compared. */
export function aliasesOf(frontmatter: Record<string, unknown>): string[] {
  const written = frontmatter.aliases ?? frontmatter.alias ?? []
  const aliases: string[] = []
  for (const alias of Array.isArray(written) ? (written as unknown[]) : [written]) {
    if (typeof alias !== 'string') continue
    const trimmed = alias.trim()
    if (trimmed !== '') aliases.push(trimmed.normalize('NFC'))
  }
  return aliases
}

/** Default visit budget of a node. */
export const DEFAULT_MAX_VISITS = KNOBS.max_visits.fallback

/*
 * Bounds on what the markdown parser is given. Its work grows faster than the
 * text for deep nesting and long runs of brackets or emphasis (minutes for a
 * 250 KB note), and its trees can overflow the stack; no real heading or
 * `## Next` list comes near these.
 */
const MAX_TITLE_CHARS = 1_000
/** A `## Next` or `## Feedback` heading, formatting included, is short. */
const MAX_SECTION_NAME_CHARS = 64

/** Turns a vault-relative file path (`review/final.md`) into a node id (`review/final`): `\\` as `/`, any case of `.md`, NFC. */
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
  const report = (code: PlanIssueCode, message: string, line?: number, column?: number) => {
    const issue: PlanIssue = { code, severity: 'error', message, node: id, file }
    if (line !== undefined) issue.line = line
    if (column !== undefined) issue.column = column
    issues.push(issue)
  }

  const frontmatter = parseFrontmatter(text)
  for (const problem of frontmatter.problems) report('invalid-frontmatter', problem.message, problem.line, problem.column)
  const data = frontmatter.data
  const knobs: Record<string, unknown> = {}
  for (const key of KNOB_KEYS) {
    if (!Object.hasOwn(data, key) || data[key] === null) continue
    const value = checkKnob(key, data[key])
    const position = frontmatter.positions.get(key)
    if (value !== undefined) knobs[KNOBS[key].field] = value
    else
      report(
        'invalid-frontmatter',
        `\`${key}\` must be ${knobExpects(key)}, got \`${JSON.stringify(data[key])?.slice(0, 60)}\``,
        position?.line,
        position?.column,
      )
  }

  const contentStart = frontmatter.split.contentStart
  const content = text.slice(contentStart)
  const lineOffset = countLines(text, contentStart)
  // `view` is the content with Obsidian's `%% comments %%` blanked: what headings and edges are read from.
  const { headings, view } = scanHeadings(content)

  let title: string | undefined
  const cut: [number, number][] = []
  const edges: RawEdge[] = []
  let feedback = ''
  let feedbackEnd: number | undefined
  // Where each heading's section ends: the next heading of level <= 2, found in one backward pass.
  const sectionEnds: number[] = []
  for (let index = headings.length - 1, end = content.length; index >= 0; index--) {
    sectionEnds[index] = end
    if (headings[index]!.depth <= 2) end = headings[index]!.start
  }
  for (let index = 0; index < headings.length; index++) {
    const heading = headings[index]!
    if (heading.depth === 1 && title === undefined) {
      title = heading.text.length > MAX_TITLE_CHARS ? heading.text.trim() : inlineText(heading.text)
      // The title line leaves the body only when it opens the note, so nothing around it moves.
      if (content.slice(0, heading.start).trim() === '') cut.push([heading.start, heading.bodyStart])
    }
    const name = sectionName(heading)
    if (name === undefined) continue
    const end = sectionEnds[index]!
    cut.push([heading.start, end])
    if (name === 'feedback') {
      feedback += content.slice(heading.bodyStart, end).trim()
      feedbackEnd = contentStart + end
    } else edges.push(...readEdges(view.slice(heading.bodyStart, end), id.slice(0, id.lastIndexOf('/') + 1), lineOffset + heading.line, report))
  }
  // The pieces between the cuts; the usual note (title, text, `## Next`) leaves one, taken as a slice, not copied.
  const pieces: string[] = []
  let from = 0
  for (const [start, end] of cut) {
    if (start > from) pieces.push(content.slice(from, start))
    from = end
  }
  if (from < content.length) pieces.push(content.slice(from))
  const body = pieces.length === 1 ? pieces[0]! : pieces.join('')

  const note: ParsedNote = {
    id,
    file,
    title: title || id,
    body: (body.includes('\r') ? body.replace(/\r\n/g, '\n') : body).trim(),
    type: (knobs.type as NodeType | undefined) ?? KNOBS.type.fallback,
    status: (knobs.status as NodeStatus | undefined) ?? KNOBS.status.fallback,
    maxVisits: (knobs.maxVisits as number | undefined) ?? DEFAULT_MAX_VISITS,
    edges,
    aliases: aliasesOf(data),
    frontmatter: data,
    feedback,
    issues,
    origin: frontmatter.problems.length > 0 ? { keys: frontmatter.positions, unread: true } : { keys: frontmatter.positions },
  }
  if (feedbackEnd !== undefined) note.feedbackEnd = feedbackEnd
  if (knobs.tools !== undefined) note.tools = knobs.tools as string[]
  if (knobs.role !== undefined) note.role = knobs.role as string
  if (knobs.judge !== undefined) note.judge = knobs.judge as JudgeKind
  if (knobs.plan !== undefined) note.plan = knobs.plan as string[]
  if (knobs.check !== undefined) note.check = knobs.check as string[]
  if (knobs.retries !== undefined) note.retries = knobs.retries as number
  if (knobs.wait !== undefined) note.wait = knobs.wait as string
  return note
}

/** The section a heading opens, of those a note's reader knows: `## Next` and `## Feedback` (formatting aside, any case). */
export function sectionName(heading: { depth: number; text: string }): 'next' | 'feedback' | undefined {
  if (heading.depth !== 2 || !isSectionName(heading.text)) return undefined
  const name = inlineText(heading.text).toLowerCase()
  return name === 'next' || name === 'feedback' ? name : undefined
}

/** Whether a level-2 heading may read `Next` or `Feedback`, before paying for the markdown parser. */
function isSectionName(text: string): boolean {
  return text.length <= MAX_SECTION_NAME_CHARS && /^(?:next|feedback)$/i.test(text.replace(/[^\p{L}]/gu, ''))
}

/** The plain text of one line of inline markdown (`**Next**` -> `Next`). */
function inlineText(markdown: string): string {
  if (!/[*_`[\]<&\\]/.test(markdown)) return markdown.trim()
  try {
    return plainText(markdownParser().parse(markdown) as Root).trim()
  } catch {
    return markdown.trim()
  }
}
