import { PlanValidationError } from './errors.js'
import { graphFromNotes } from './markdown-io.js'
import { parseNote } from './parse-note.js'
import { PlanGraph } from './plan-graph.js'
import type { CallLLM, PlanNode } from './types.js'

const KNOB_LINE = /^(type|status|tools|role|max_visits|judge)\s*:\s*\S/i
/** Matched against trimmed lines; no two white-space runs side by side, so it cannot backtrack far. */
const NEXT_LINE = /^(?:#{3,6}\s*next(?:\s*#+)?|next\s*:)$/i

/**
 * Reads a whole plan written as one markdown document (SPEC section 5): one
 * `## <node-id>` section per node, optional `key: value` knob lines first,
 * then the body, then the edges under `### Next` (or a `Next:` line).
 *
 * @throws {PlanValidationError} when the document has no sections or the plan is invalid.
 */
export function parsePlanDocument(text: string): PlanGraph {
  const sections = splitSections(text)
  if (sections.length === 0) {
    throw new PlanValidationError([{ code: 'no-sections', severity: 'error', message: 'the document has no `## <node-id>` sections' }])
  }
  const notes = sections.map(({ id, lines }) => {
    const knobs: string[] = []
    let index = 0
    for (; index < lines.length && (KNOB_LINE.test(lines[index]!) || (knobs.length === 0 && lines[index]!.trim() === '')); index++) {
      if (lines[index]!.trim() !== '') knobs.push(lines[index]!)
    }
    const rest = lines.slice(index)
    const next = rest.findIndex((line) => NEXT_LINE.test(line.trim()))
    const body = (next === -1 ? rest : rest.slice(0, next)).join('\n')
    const edges = next === -1 ? '' : `\n## Next\n${rest.slice(next + 1).join('\n')}\n`
    const front = knobs.length > 0 ? `---\n${knobs.map((line) => line.replace(/^(\w+)/, (key) => key.toLowerCase())).join('\n')}\n---\n` : ''
    return parseNote(`${id}.md`, `${front}${body}\n${edges}`)
  })
  const loaded = graphFromNotes(notes)
  // The nodes live in no file yet: savePlan names the notes after their ids.
  const graph = new PlanGraph([...loaded.nodes.values()].map(({ file: _file, ...node }) => node as PlanNode))
  loaded.validate()
  return graph
}

/**
 * A linear plan: one node per step, each leading to the next unconditionally.
 *
 * @throws {TypeError} when `steps` is empty.
 */
export function pathGraphFromSteps(steps: string[]): PlanGraph {
  const texts = steps.map((step) => String(step).trim()).filter((step) => step !== '')
  if (texts.length === 0) throw new TypeError('Expected at least one step, got none')
  const ids = texts.map((text, index) => {
    const slug = text.toLowerCase().replace(/[^a-z0-9]+/g, '-').replace(/^-+|-+$/g, '').slice(0, 40).replace(/-+$/, '')
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
 * document (SPEC section 5). A reply that does not parse or validate
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
    const why = error instanceof PlanValidationError ? error.issues.filter((issue) => issue.severity === 'error').map((issue) => issue.code).join(', ') : String(error)
    const steps = stepsOf(document)
    const graph = pathGraphFromSteps(steps.length > 0 ? steps : [query])
    graph.degraded = `The planner's document was not a valid plan (${why}); running ${steps.length > 0 ? `its ${steps.length} steps` : 'the query as one step'} in order instead.`
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

function splitSections(text: string): { id: string; lines: string[] }[] {
  const sections: { id: string; lines: string[] }[] = []
  for (const line of text.replace(/\r\n/g, '\n').split('\n')) {
    const heading = line.startsWith('###') ? undefined : sectionHeading(line)
    if (heading !== undefined) sections.push({ id: heading.replace(/^\[\[|\]\]$/g, '').trim(), lines: [] })
    else sections.at(-1)?.lines.push(line)
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
      const body = lines.filter((line) => !KNOB_LINE.test(line) && !NEXT_LINE.test(line.trim()) && !/^\s*[-*]\s.*\[\[/.test(line)).join('\n').trim()
      return body ? `${id}: ${body}` : id
    })
  }
  return document
    .split('\n')
    .map((line) => /^\s*(?:\d+[.)]|[-*+])\s+(.+)$/.exec(line)?.[1]?.trim())
    .filter((step): step is string => step !== undefined && step !== '')
}
