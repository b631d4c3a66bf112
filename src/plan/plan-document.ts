import { PlanValidationError } from '../core/errors.js'
import { KNOB_KEYS } from '../core/knobs.js'
import { closestNames, didYouMean } from '../core/closest-names.js'
import { graphFromNotes } from './load-plan.js'
import { issueFromSubplan } from '../vault/subplan-folders.js'
import { scanHeadings } from '../vault/headings.js'
import { checkPlan } from './validate.js'
import { subplanTree } from './subplan-tree.js'
import { parseNote } from '../vault/parse-note.js'
import { PlanGraph } from './plan-graph.js'
import type { CallLLM, PlanIssue, PlanNode } from '../core/types.js'

const KNOB_LINE = new RegExp(`^(${KNOB_KEYS.join('|')})\\s*:\\s*\\S`, 'i')
/** Matched against trimmed lines; no two white-space runs side by side, so it cannot backtrack far. */
/** A line that reads like a knob line (`key: value`), whatever the key. */
const KEY_LINE = /^([A-Za-z][\w-]*)\s*:\s+\S/
/** A `# Title` line (no `##`). */
const TITLE_LINE = /^ {0,3}#[ \t]+\S/
const NEXT_LINE = /^(?:#{3,6}\s*next(?:\s*#+)?|next\s*:)$/i
/** The most `## <node-id>` sections a plan document may hold: far past any plan a person walks, short of a flood of notes. */
export const MAX_DOCUMENT_SECTIONS = 5_000

/**
 * Reads a whole plan written as one markdown document: one
 * `## <node-id>` section per node, optional `key: value` knob lines first,
 * then the body, then the edges under `### Next` (or a `Next:` line).
 *
 * @throws {@link PlanValidationError} when the document has no sections (`no-sections`), over 5,000 of
 *   them (`too-many-sections`), or the plan is invalid.
 */
export function parsePlanDocument(text: string): PlanGraph {
  const sections = documentNotes(text)
  const notes = sections.map(({ id, text: note, at, issues }) => {
    const parsed = parseNote(`${id}.md`, note)
    return {
      ...parsed,
      edges: parsed.edges.map((edge) => ({ ...edge, line: at(edge.line) })),
      issues: [...issues, ...parsed.issues.map((found) => inDocument(found, at))],
    }
  })
  // The nodes live in no file yet: savePlan names the notes after their ids.
  const graph = withoutFiles(graphFromNotes(notes))
  graph.validate()
  return graph
}

/**
 * A graph as a document describes it: its nodes (and its subplans') in no
 * file, and the subplans checked so, their issues naming the document's lines.
 */
function withoutFiles(loaded: PlanGraph): PlanGraph {
  const tree = [...subplanTree(loaded)]
  const bare = new Map<PlanGraph, PlanGraph>()
  // Each subplan before the plan that holds it: a plan is built with its subplans and their issues.
  for (const { vault } of [...tree].reverse()) {
    const subplans = new Map<string, PlanGraph>()
    const issues: PlanIssue[] = []
    for (const { inner, vault: subplan } of tree.filter((entry) => entry.parent === vault)) {
      subplans.set(inner, bare.get(subplan)!)
      issues.push(...checkPlan(bare.get(subplan)!).map((found) => issueFromSubplan(found, inner)))
    }
    const nodes = [...vault.nodes.values()].map(({ file: _file, ...node }) => node as PlanNode)
    bare.set(vault, new PlanGraph(nodes, { issues, ...(subplans.size > 0 && { subplans }) }))
  }
  return bare.get(loaded)!
}

/** A section of a plan document as the note it stands for. */
export interface SectionNote {
  /** The node's id, the section's heading: `draft`, or `web/search` for a note of the subplan folder `web`. */
  id: string
  /** The note's text: the knob lines as frontmatter, the `# Title` line first, then the body and `## Next`. */
  text: string
  /** The document's line of the note's line `n`. */
  at: (line: number) => number
  /** What is wrong with the section itself (a knob line of no knob), at the document's lines. */
  issues: PlanIssue[]
}

/**
 * The sections of a plan document, each as the note it stands for, read
 * alone (nothing checks how they link): what `parsePlanDocument` builds a
 * graph of, and what an edit of a vault writes as notes.
 *
 * @throws {@link PlanValidationError} as `parsePlanDocument` for no sections or too many
 */
export function documentNotes(text: string): SectionNote[] {
  const sections = splitSections(text)
  if (sections.length === 0) {
    throw new PlanValidationError([{ code: 'no-sections', severity: 'error', message: 'the document has no `## <node-id>` sections' }])
  }
  if (sections.length > MAX_DOCUMENT_SECTIONS) {
    throw new PlanValidationError([
      {
        code: 'too-many-sections',
        severity: 'error',
        message: `the document has ${sections.length} \`## <node-id>\` sections, over the ${MAX_DOCUMENT_SECTIONS} a plan document may hold; split the plan into subplans`,
      },
    ])
  }
  return sections.map(sectionNote)
}

/** A section read as the note it stands for; `at(n)` is the document's line of the note's line n. */
function sectionNote({ id, line, lines }: { id: string; line: number; lines: DocumentLine[] }): SectionNote {
  const knobs: DocumentLine[] = []
  const issues: PlanIssue[] = []
  let title: DocumentLine | undefined
  let index = 0
  // The knob lines come first; a `# Title` line and blank lines may stand among them.
  for (; index < lines.length; index++) {
    const entry = lines[index]!
    if (KNOB_LINE.test(entry.text)) knobs.push(entry)
    else if (title === undefined && TITLE_LINE.test(entry.text)) title = entry
    else if (entry.text.trim() === '' && knobs.length === 0) continue
    else {
      const unknown = unknownKnob(entry)
      if (unknown === undefined) break
      issues.push(unknown)
    }
  }
  const next = lines.findIndex(({ text: line }, at) => at >= index && NEXT_LINE.test(line.trim()))
  const end = next === -1 ? lines.length : next
  // Built line by line: a section may hold a hundred thousand lines, too many to spread into a call.
  const body: DocumentLine[] = []
  for (let at = index; at < end; at++) body.push(lines[at]!)
  // The title is the first `# ` heading of the text (none in a code fence): it opens the note, so it is not body text too.
  if (title === undefined) {
    const heading = scanHeadings(body.map((entry) => entry.text).join('\n')).headings.find((found) => found.depth === 1)
    if (heading !== undefined) title = body.splice(heading.line - 1, 1)[0]
  }
  const note: DocumentLine[] = []
  if (knobs.length > 0) {
    note.push({ text: '---', line })
    for (const knob of knobs) note.push({ ...knob, text: knob.text.replace(/^(\w+)/, (key) => key.toLowerCase()) })
    note.push({ text: '---', line })
  }
  if (title !== undefined) note.push(title)
  for (const entry of body) note.push(entry)
  if (next !== -1) {
    note.push({ text: '', line: lines[next]!.line }, { text: '## Next', line: lines[next]!.line })
    for (let at = next + 1; at < lines.length; at++) note.push(lines[at]!)
  }
  // The blank lines before the next section are no part of the note.
  while (note.length > 0 && note.at(-1)!.text.trim() === '') note.pop()
  return { id, text: `${note.map((entry) => entry.text).join('\n')}\n`, at: (at) => note[at - 1]?.line ?? at, issues }
}

/**
 * The error of a line where the knob lines go that reads like one of no
 * knob (`priority: high`), or `undefined` when it reads as body text: a
 * key in lower case, or one a typo away from a knob.
 */
function unknownKnob(entry: DocumentLine): PlanIssue | undefined {
  const key = KEY_LINE.exec(entry.text)?.[1]
  if (key === undefined || key.toLowerCase() === 'next') return undefined
  const meant = closestNames(key, KNOB_KEYS, { edits: 1 })
  if (key !== key.toLowerCase() && meant.length === 0) return undefined
  const fix = meant.length > 0 ? didYouMean(meant) : 'write it after the first line of the body if it is text'
  return {
    code: 'unknown-knob',
    severity: 'error',
    message: `\`${entry.text.trim()}\` stands where the knob lines go, and \`${key}\` is no knob (${KNOB_KEYS.join(', ')}); ${fix}`,
    line: entry.line,
    column: 1,
  }
}

/** A line of a plan document and its 1-based number there. */
interface DocumentLine {
  text: string
  line: number
}

/** An issue of a section's note, placed at the document's own line, with no file (the document has none). */
function inDocument(found: PlanIssue, at: (line: number) => number): PlanIssue {
  const { file: _file, ...rest } = found
  if (rest.line !== undefined) rest.line = at(rest.line)
  return rest
}

/**
 * A linear plan: one node per step, each leading to the next unconditionally.
 *
 * @throws `TypeError` when `steps` is empty.
 */
export function pathGraphFromSteps(steps: string[]): PlanGraph {
  const texts = steps.map((step) => String(step).trim()).filter((step) => step !== '')
  if (texts.length === 0) throw new TypeError('Expected at least one step, got none')
  const ids = texts.map((text, index) => {
    const slug = text
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, '-')
      .replace(/^-+|-+$/g, '')
      .slice(0, 40)
      .replace(/-+$/, '')
    return `${String(index + 1).padStart(2, '0')}${slug ? `-${slug}` : ''}`
  })
  return new PlanGraph(
    texts.map((text, index) => {
      const node: PlanNode = {
        id: ids[index]!,
        title: text.split('\n')[0]!.slice(0, 120),
        body: text,
        type: index === 0 ? 'start' : 'step',
        status: 'pending',
        maxVisits: 3,
        edges: index + 1 < texts.length ? [{ label: '', target: ids[index + 1]!, conditional: false }] : [],
        frontmatter: index === 0 ? { type: 'start' } : {},
      }
      return node
    }),
  )
}

/**
 * Asks the `planning` role's model to write a plan for `query` as one
 * document (one `## <node-id>` section a node). A reply that does not parse or validate
 * degrades to a path graph of its steps, and `graph.degraded` says why.
 */
export async function planGraph(query: string, llm: CallLLM, options: { signal?: AbortSignal } = {}): Promise<PlanGraph> {
  const callOptions: { role: string; system: string; signal?: AbortSignal } = { role: 'planning', system: PLANNER_SYSTEM }
  if (options.signal) callOptions.signal = options.signal
  const reply = await llm(`Write a plan for this task:\n\n${query}`, callOptions)
  const document = reply.replace(/^\s*```[\w-]*\n([\s\S]*?)\n```\s*$/, '$1')
  try {
    return parsePlanDocument(document)
  } catch (error) {
    const why =
      error instanceof PlanValidationError
        ? error.issues
            .filter((issue) => issue.severity === 'error')
            .map((issue) => issue.code)
            .join(', ')
        : String(error)
    const found = stepsOf(document)
    const steps = found.slice(0, MAX_DOCUMENT_SECTIONS)
    const graph = pathGraphFromSteps(steps.length > 0 ? steps : [query])
    const which = steps.length < found.length ? `its first ${steps.length} of ${found.length} steps` : `its ${steps.length} steps`
    graph.degraded = `The planner's document was not a valid plan (${why}); running ${steps.length > 0 ? which : 'the query as one step'} in order instead.`
    return graph
  }
}

const PLANNER_SYSTEM = `You write plans as one markdown document. One "## <node-id>" section per step (ids are short lowercase words with dashes). Inside a section: optional knob lines first ("type: start" on the first step, "role: review" for a reviewing step, "max_visits: 3"), then what the step must do, then "### Next" with one list item per transition: "- <condition> -> [[<node-id>]]" or "- [[<node-id>]]" when it always goes on. A step with no "### Next" ends the plan. Every loop needs a way out. Reply with the document only.

## research
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
Send the approved draft.`

function splitSections(text: string): { id: string; line: number; lines: DocumentLine[] }[] {
  const sections: { id: string; line: number; lines: DocumentLine[] }[] = []
  for (const [index, line] of text.replace(/\r\n/g, '\n').split('\n').entries()) {
    const heading = line.startsWith('###') ? undefined : sectionHeading(line)
    if (heading !== undefined) sections.push({ id: heading.replace(/^\[\[|\]\]$/g, '').trim(), line: index + 1, lines: [] })
    else sections.at(-1)?.lines.push({ text: line, line: index + 1 })
  }
  return sections.filter((section) => section.id !== '')
}

/**
 * The name of a `## name` line, as `/^##\s+(.+?)\s*#*\s*$/` captures it
 * (a closing run of `#` left out), found in one scan: the pattern is
 * quadratic in a long run of white space. `undefined` for any other line.
 */
export function sectionHeading(line: string): string | undefined {
  if (!line.startsWith('##')) return undefined
  let at = 2
  while (at < line.length && /\s/.test(line[at]!)) at++
  if (at === 2) return undefined
  let end = line.length
  while (end > at && /\s/.test(line[end - 1]!)) end--
  if (end === at) {
    // Only white space: the pattern's name is its last character that is no line break, past the first.
    for (let last = line.length - 1; last >= 3; last--) if (!/[\r\u2028\u2029]/.test(line[last]!)) return line[last]
    return undefined
  }
  // A closing run of `#`, with or without white space before it, is not part of the name (which keeps one character).
  let close = end
  while (close > at && line[close - 1] === '#') close--
  if (close < end) {
    while (close > at && /\s/.test(line[close - 1]!)) close--
    end = Math.max(close, at + 1)
  }
  const name = line.slice(at, end)
  return /[\r\u2028\u2029]/.test(name) ? undefined : name
}

/** The steps a broken plan document still names: its sections, or else its list items. */
function stepsOf(document: string): string[] {
  const sections = splitSections(document)
  if (sections.length > 0) {
    return sections.map(({ id, lines }) => {
      const body = lines
        .map((entry) => entry.text)
        .filter((line) => !KNOB_LINE.test(line) && !NEXT_LINE.test(line.trim()) && !/^\s*[-*]\s.*\[\[/.test(line))
        .join('\n')
        .trim()
      return body ? `${id}: ${body}` : id
    })
  }
  return document
    .split('\n')
    .map((line) => /^\s*(?:\d+[.)]|[-*+])\s+(.+)$/.exec(line)?.[1]?.trim())
    .filter((step): step is string => step !== undefined && step !== '')
}
