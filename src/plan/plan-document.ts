import { PlanValidationError } from '../core/errors.js'
import { KNOB_KEYS } from '../core/knobs.js'
import { graphFromNotes } from './load-plan.js'
import { parseNote } from '../vault/parse-note.js'
import { PlanGraph } from './plan-graph.js'
import type { CallLLM, PlanIssue, PlanNode } from '../core/types.js'

const KNOB_LINE = new RegExp(`^(${KNOB_KEYS.join('|')})\\s*:\\s*\\S`, 'i')
/** Matched against trimmed lines; no two white-space runs side by side, so it cannot backtrack far. */
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
  // Each section is read as the note it stands for; `at[n]` is the document's line of that note's line n + 1.
  const notes = sections.map(({ id, line, lines }) => {
    const knobs: DocumentLine[] = []
    let index = 0
    for (; index < lines.length && (KNOB_LINE.test(lines[index]!.text) || (knobs.length === 0 && lines[index]!.text.trim() === '')); index++) {
      if (lines[index]!.text.trim() !== '') knobs.push(lines[index]!)
    }
    const next = lines.findIndex(({ text: line }, at) => at >= index && NEXT_LINE.test(line.trim()))
    // Built line by line: a section may hold a hundred thousand lines, too many to spread into a call.
    const note: DocumentLine[] = []
    if (knobs.length > 0) {
      note.push({ text: '---', line })
      for (const knob of knobs) note.push({ ...knob, text: knob.text.replace(/^(\w+)/, (key) => key.toLowerCase()) })
      note.push({ text: '---', line })
    }
    for (let at = index; at < (next === -1 ? lines.length : next); at++) note.push(lines[at]!)
    if (next !== -1) {
      note.push({ text: '', line: lines[next]!.line }, { text: '## Next', line: lines[next]!.line })
      for (let at = next + 1; at < lines.length; at++) note.push(lines[at]!)
    }
    const parsed = parseNote(`${id}.md`, `${note.map((entry) => entry.text).join('\n')}\n`)
    const at = (line: number) => note[line - 1]?.line ?? line
    return { ...parsed, edges: parsed.edges.map((edge) => ({ ...edge, line: at(edge.line) })), issues: parsed.issues.map((found) => inDocument(found, at)) }
  })
  const loaded = graphFromNotes(notes)
  // The nodes live in no file yet: savePlan names the notes after their ids.
  const graph = new PlanGraph([...loaded.nodes.values()].map(({ file: _file, ...node }) => node as PlanNode))
  graph.validate()
  return graph
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
