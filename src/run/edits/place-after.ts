import type { PlanIssue } from '../../core/types.js'
import type { SectionNote } from '../../plan/plan-document.js'
import type { PlanGraph } from '../../plan/plan-graph.js'
import { subplanTree } from '../../plan/subplan-tree.js'
import { splitFrontmatter } from '../../vault/frontmatter.js'
import { scanHeadings } from '../../vault/headings.js'
import { sectionName } from '../../vault/parse-note.js'

/*
 * `editPlan`'s `after`: the notes of a document put in a row after a note of
 * the plan, so adding to a queue or moving a note in it is one edit that
 * restates no other note. Decided on the plan as it is (its notes' texts
 * and the graph read from them), as the sections an edit writes.
 */

/**
 * The sections that put the document's notes, in its order, after the note
 * `after`: `after` leads to the first, each to the next, the last to where
 * `after` led. A note of the plan among them moves: the notes that led to
 * it lead to where it led. Each other note whose edges change gets a
 * section of its `### Next` alone (its text kept).
 *
 * @param texts - each note's text on disk, by id
 * @returns the sections to write, or the problems (`unplaceable-note`) that keep the edit from being made
 */
export function placedAfter(
  sections: readonly SectionNote[],
  after: string,
  graph: PlanGraph,
  texts: ReadonlyMap<string, string>,
): { sections: SectionNote[]; issues: PlanIssue[] } {
  const folders = [...subplanTree(graph)].sort((a, b) => b.folder.length - a.folder.length)
  const place = folders.find(({ folder }) => folder === '' || after.startsWith(`${folder}/`))!
  const inner = (id: string) => (place.folder === '' ? id : id.slice(place.folder.length + 1))
  const plan = place.vault
  const problem = (message: string, node = after): { sections: SectionNote[]; issues: PlanIssue[] } => ({
    sections: [...sections],
    issues: [{ code: 'unplaceable-note', severity: 'error', message, node }],
  })
  const anchor = plan.nodes.get(inner(after))
  if (!anchor) return problem(`\`after\` names \`${after}\`, which is no note of the plan`)
  if (anchor.edges.some((edge) => edge.conditional))
    return problem(
      `\`after\` names \`${after}\`, whose way on is a choice (${anchor.edges.map((edge) => `\`${edge.label}\``).join(', ')}): write the \`### Next\` of the notes instead`,
    )
  const row = sections.map((section) => section.id)
  for (const id of row) {
    if (id === after) return problem(`\`after\` names \`${after}\`, which the document puts after itself`, id)
    if (place.folder !== '' ? !id.startsWith(`${place.folder}/`) || id.slice(place.folder.length + 1).includes('/') : id.includes('/'))
      return problem(`\`${id}\` is not in the folder of \`${after}\`: a note goes after another of its own plan`, id)
    if (nextLines(sections.find((section) => section.id === id)!.text) !== undefined)
      return problem(`\`${id}\` names its own \`### Next\`, and \`after\` gives it one: leave one of the two out`, id)
  }
  // The edges of each note the edit changes, as its `## Next` lines; a note of the row that moves gives up its place first:
  // each line of an edge to it leads where it led (or goes, when it led nowhere), by the line the edge was read from.
  const full = (id: string) => (place.folder === '' ? id : `${place.folder}/${id}`)
  const rewritten = new Map<string, Map<number, string | undefined>>()
  const linesOf = (id: string) =>
    (nextLines(texts.get(full(id)) ?? '') ?? []).flatMap((line) => {
      const changes = rewritten.get(id)
      if (!changes?.has(line.line)) return [line.text]
      const text = changes.get(line.line)
      return text === undefined ? [] : [text]
    })
  for (const id of row) {
    const moved = plan.nodes.get(inner(id))
    if (!moved) continue
    if (moved.edges.length > 1 || moved.edges.some((edge) => edge.conditional))
      return problem(`\`${id}\` moves, and its way on is a choice: the notes that lead to it cannot be led past it`, id)
    const onward = moved.edges[0]?.target
    for (const node of plan.nodes.values()) {
      const leading = new Set(node.edges.filter((edge) => edge.target === moved.id && edge.at).map((edge) => edge.at!.line))
      if (node.id === moved.id || leading.size === 0) continue
      const changes = rewritten.get(node.id) ?? new Map<number, string | undefined>()
      for (const line of nextLines(texts.get(full(node.id)) ?? '') ?? [])
        if (leading.has(line.line)) changes.set(line.line, onward === undefined ? undefined : line.text.replace(/\[\[[^\]]*\]\]/, `[[${onward}]]`))
      rewritten.set(node.id, changes)
    }
  }
  const next = new Map<string, string[]>([...rewritten.keys()].map((id) => [id, linesOf(id)]))
  const onward = linesOf(anchor.id)
  next.set(anchor.id, [`- [[${inner(row[0]!)}]]`])
  row.forEach((id, at) => next.set(inner(id), at + 1 < row.length ? [`- [[${inner(row[at + 1]!)}]]`] : onward))
  const given = new Map(sections.map((section) => [inner(section.id), section]))
  const out: SectionNote[] = []
  for (const [id, lines] of next) {
    const own = given.get(id)
    // A note written anew with no way on has no `## Next`; one of the plan's loses its edges to an empty one.
    const edges = lines.length === 0 && !texts.has(full(id)) ? '' : `## Next\n${lines.map((line) => `${line}\n`).join('')}`
    const text = `${[own?.text.trimEnd() ?? '', edges.trimEnd()].filter((part) => part !== '').join('\n\n')}\n`
    out.push({ id: place.folder === '' ? id : `${place.folder}/${id}`, text, at: own?.at ?? ((line) => line), issues: own?.issues ?? [] })
  }
  return { sections: out, issues: [] }
}

/**
 * The lines under a note's `## Next` heading, blank ones left out, each with
 * its 1-based line in the file (as an edge's `at` says it); none when the
 * note has no such heading.
 */
function nextLines(text: string): { line: number; text: string }[] | undefined {
  const start = splitFrontmatter(text).contentStart
  const content = text.slice(start)
  const { headings } = scanHeadings(content)
  const at = headings.findIndex((heading) => sectionName(heading) === 'next')
  if (at === -1) return undefined
  const end = headings.slice(at + 1).find((heading) => heading.depth <= 2)?.start ?? content.length
  // The heading's line in the file: the frontmatter's lines, then its line in the content.
  const first = text.slice(0, start).split('\n').length - 1 + headings[at]!.line + 1
  return content
    .slice(headings[at]!.bodyStart, end)
    .split(/\r?\n/)
    .map((line, index) => ({ line: first + index, text: line }))
    .filter((line) => line.text.trim() !== '')
}
