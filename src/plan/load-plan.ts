import { LinkResolver } from '../vault/links.js'
import type { ParsedNote } from '../vault/parse-note.js'
import { readNotes } from '../vault/read-vault.js'
import { PlanGraph } from './plan-graph.js'
import { withOrigin, type EdgeOrigin, type PlanIssue, type PlanNode } from '../core/types.js'

/**
 * Reads a plan vault: every `*.md` file (subfolders too, not `00_plan-trace/`
 * and not dot-folders) becomes a node whose id is its path without `.md`.
 * A bad note becomes diagnostics, never a failed load; call
 * `graph.validate()` to see them.
 *
 * @throws {Error} when `dir` does not exist or is not a folder.
 */
export async function loadPlan(dir: string): Promise<PlanGraph> {
  const { notes, issues } = await readNotes(dir)
  return graphFromNotes(notes, issues)
}

/** Builds the graph of parsed notes, resolving each edge's link to a node id. */
export function graphFromNotes(notes: ParsedNote[], issues: PlanIssue[] = []): PlanGraph {
  const unique = withoutDuplicateIds(notes)
  const resolver = new LinkResolver(unique)
  return new PlanGraph(
    unique.map((note) => nodeFromNote(note, resolver)),
    { issues },
  )
}

/**
 * The notes with the first of each id only: `b.md` and `b.MD`, NFC and NFD
 * spellings of one name, `x/b.md` and a file named `x\\b.md` all have the
 * id `b` or `x/b`. Each later one is a `duplicate-id` error naming both files,
 * kept with the first note's issues.
 */
function withoutDuplicateIds(notes: ParsedNote[]): ParsedNote[] {
  const first = new Map<string, ParsedNote>()
  for (const note of notes) {
    const earlier = first.get(note.id)
    if (!earlier) {
      first.set(note.id, { ...note, issues: [...note.issues] })
      continue
    }
    earlier.issues.push({
      code: 'duplicate-id',
      severity: 'error',
      message: `has the same id \`${note.id}\` as \`${earlier.file}\` (ids ignore the case of \`.md\`, read \`\\\` as \`/\` and compare in Unicode NFC); rename one of the two files`,
      // No \`node\`: two files are wrong, whichever of them the run could reach, so this is never only a warning.
      file: note.file,
    })
  }
  return [...first.values()]
}

/** The node a parsed note describes, its links resolved to ids; the note's issues (an ambiguous link among them) go with it. */
export function nodeFromNote(note: ParsedNote, resolver: LinkResolver): PlanNode {
  const issues = [...note.issues]
  const edges = note.edges.map((raw) => {
    const origin: EdgeOrigin = { line: raw.line, column: raw.column }
    if (raw.checked !== undefined) origin.checked = raw.checked
    let target = raw.link
    if (raw.outside) origin.problem = 'outside'
    else {
      const resolved = resolver.resolve(raw.link)
      if (resolved.id !== undefined) target = resolved.id
      else if (resolved.candidates.length > 1) {
        origin.problem = 'ambiguous'
        issues.push({
          code: 'ambiguous-link',
          severity: 'error',
          message: `\`[[${raw.link}]]\` matches ${resolved.candidates.length} notes (${resolved.candidates.map((id) => `\`${id}\``).join(', ')}); write the path`,
          node: note.id,
          file: note.file,
          line: raw.line,
          column: raw.column,
        })
      }
    }
    return withOrigin({ label: raw.label, target, conditional: raw.conditional }, origin)
  })
  const node: PlanNode = {
    id: note.id,
    title: note.title,
    body: note.body,
    type: note.type,
    status: note.status,
    maxVisits: note.maxVisits,
    edges,
    file: note.file,
    frontmatter: note.frontmatter,
  }
  if (note.tools) node.tools = note.tools
  if (note.role !== undefined) node.role = note.role
  if (note.judge !== undefined) node.judge = note.judge
  if (issues.length > 0) node.issues = issues
  return node
}
