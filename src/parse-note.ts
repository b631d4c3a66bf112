import type { Root } from 'mdast'
import { z } from 'zod'
import { parseFrontmatter } from './frontmatter.js'
import type { FileStamp } from './fs-atomic.js'
import { markdownParser, plainText, readEdges, type RawEdge } from './next-section.js'
import { scanHeadings } from './headings.js'
import { countLines } from './text.js'
import type { JudgeKind, NodeStatus, NodeType, PlanIssue } from './types.js'

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
  /** The `plan:` knob: subplan folders relative to the note's folder (`['generate']` for `plan: generate`). */
  plan?: string[]
  edges: RawEdge[]
  aliases: string[]
  frontmatter: Record<string, unknown>
  /** Text under `## Feedback`, for human decisions. */
  feedback: string
  /** Offset in the note's text where its last `## Feedback` section ends, when it has one. */
  feedbackEnd?: number
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
  plan: z.union([z.string().trim().min(1), z.array(z.string().trim().min(1)).min(1)]),
} as const

/** The value the loader takes from a frontmatter knob: `undefined` when the key is empty or its value invalid. */
export function readKnob(key: keyof typeof knobSchemas, value: unknown): unknown {
  if (value === null || value === undefined) return undefined
  const parsed = knobSchemas[key].safeParse(value)
  return parsed.success ? parsed.data : undefined
}

/** The `aliases:` (or `alias:`) a note's frontmatter gives it, trimmed and in NFC, as links are compared. */
export function aliasesOf(frontmatter: Record<string, unknown>): string[] {
  return ([] as unknown[])
    .concat(frontmatter.aliases ?? frontmatter.alias ?? [])
    .filter((alias): alias is string => typeof alias === 'string' && alias.trim() !== '')
    .map((alias) => alias.trim().normalize('NFC'))
}

/** Default visit budget of a node. */
export const DEFAULT_MAX_VISITS = 3

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
  for (const [index, heading] of headings.entries()) {
    if (heading.depth === 1 && title === undefined) {
      title = heading.text.length > MAX_TITLE_CHARS ? heading.text.trim() : inlineText(heading.text)
      // The title line leaves the body only when it opens the note, so nothing around it moves.
      if (content.slice(0, heading.start).trim() === '') cut.push([heading.start, heading.bodyStart])
    }
    const name = heading.depth === 2 && isSectionName(heading.text) ? inlineText(heading.text).toLowerCase() : undefined
    if (name !== 'next' && name !== 'feedback') continue
    const end = sectionEnds[index]!
    cut.push([heading.start, end])
    const sectionText = content.slice(heading.bodyStart, end)
    if (name === 'feedback') {
      feedback += sectionText.trim()
      feedbackEnd = contentStart + end
    }
    else edges.push(...readEdges(view.slice(heading.bodyStart, end), id.slice(0, id.lastIndexOf('/') + 1), lineOffset + heading.line, report))
  }
  let body = ''
  let from = 0
  for (const [start, end] of cut) {
    body += content.slice(from, start)
    from = end
  }
  body += content.slice(from)

  const note: ParsedNote = {
    id,
    file,
    title: title || id,
    body: body.replace(/\r\n/g, '\n').trim(),
    type: (knobs.type as NodeType | undefined) ?? 'step',
    status: (knobs.status as NodeStatus | undefined) ?? 'pending',
    maxVisits: (knobs.max_visits as number | undefined) ?? DEFAULT_MAX_VISITS,
    edges,
    aliases: aliasesOf(data),
    frontmatter: data,
    feedback,
    issues,
  }
  if (feedbackEnd !== undefined) note.feedbackEnd = feedbackEnd
  if (knobs.tools !== undefined) note.tools = knobs.tools as string[]
  if (knobs.role !== undefined) note.role = knobs.role as string
  if (knobs.judge !== undefined) note.judge = knobs.judge as JudgeKind
  if (knobs.plan !== undefined) note.plan = ([] as string[]).concat(knobs.plan as string | string[])
  return note
}

/** Whether a level-2 heading may read `Next` or `Feedback`, before paying for the markdown parser. */
function isSectionName(text: string): boolean {
  return text.length <= MAX_SECTION_NAME_CHARS && /^(?:next|feedback)$/i.test(text.replace(/[^\p{L}]/gu, ''))
}

/** The plain text of one line of inline markdown (`**Next**` -> `Next`). */
function inlineText(markdown: string): string {
  if (!/[*_`[\]<&\\]/.test(markdown)) return markdown.trim()
  try {
    return plainText(markdownParser.parse(markdown) as Root).trim()
  } catch {
    return markdown.trim()
  }
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
    case 'plan':
      return `must be a folder beside the note (\`plan: research\`), a list of folders, or \`generate\`, ${got}`
    default:
      return `must be \`llm\` or \`human\`, ${got}`
  }
}
