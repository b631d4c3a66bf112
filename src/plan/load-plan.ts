import { LinkResolver } from '../vault/links.js'
import { idFromFile, type ParsedNote } from '../vault/parse-note.js'
import { issueFromSubplan, MAX_SUBPLAN_DEPTH, rerooted, splitSubplans } from '../vault/subplan-folders.js'
import { checkPlan } from './validate.js'
import { readNotes } from '../vault/read-vault.js'
import { PlanGraph } from './plan-graph.js'
import { withNodeOrigin, withOrigin, type EdgeOrigin, type PlanIssue, type PlanNode } from '../core/types.js'

/**
 * Reads a plan vault: every `*.md` file (subfolders too, not `00_plan-trace/`
 * and not dot-folders) becomes a node whose id is its path without `.md`.
 * A bad note becomes diagnostics, never a failed load; call
 * `graph.validate()` to see them.
 *
 * @throws `Error` when `dir` does not exist or is not a folder.
 */
export async function loadPlan(dir: string): Promise<PlanGraph> {
  const { notes, issues } = await readNotes(dir)
  return graphFromNotes(notes, issues)
}

/**
 * Builds the graph of parsed notes, resolving each edge's link to a node id.
 *
 * @param depth - how deep these notes' vault is nested in the top vault (0: the top vault), for the limit on nesting
 */
export function graphFromNotes(notes: ParsedNote[], issues: PlanIssue[] = [], depth = 0): PlanGraph {
  // The notes of a subplan folder are the subplan's: validated with the parent, never its nodes.
  const split = splitSubplans(notes, depth)
  const inner = [...split.inner.values()].flat()
  const innerIds = new Set(inner.map((note) => note.id))
  const claims = new Map<string, PlanIssue[]>()
  for (const found of split.issues) claims.set(found.node!, [...(claims.get(found.node!) ?? []), found])
  const own = split.own.map((note) => (claims.has(note.id) ? { ...note, issues: [...note.issues, ...claims.get(note.id)!] } : note))
  const unique = withoutDuplicateIds(own)
  const resolver = new LinkResolver(unique)
  const innerResolver = inner.length > 0 ? new LinkResolver(inner) : undefined
  const subplans = new Map<string, PlanGraph>()
  const all = issues.filter((found) => found.file === undefined || !innerIds.has(idFromFile(found.file)))
  for (const [folder, members] of split.inner) {
    // A folder nested too deep is reported once, by the note naming it, and not read further.
    if (members.length === 0 || depth >= MAX_SUBPLAN_DEPTH) continue
    const subplan = graphFromNotes(
      members.map((note) => rerooted(note, folder)),
      [],
      depth + 1,
    )
    subplans.set(folder, subplan)
    all.push(...checkPlan(subplan).map((found) => issueFromSubplan(found, folder)))
  }
  return new PlanGraph(
    unique.map((note) => nodeFromNote(note, resolver, innerResolver)),
    { issues: all, ...(subplans.size > 0 && { subplans }) },
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
  // The notes given are left as they are: a first note that gains an issue is a copy.
  const copies = new Set<ParsedNote>()
  for (const note of notes) {
    let earlier = first.get(note.id)
    if (!earlier) {
      first.set(note.id, note)
      continue
    }
    if (!copies.has(earlier)) {
      earlier = { ...earlier, issues: [...earlier.issues] }
      copies.add(earlier)
      first.set(note.id, earlier)
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
export function nodeFromNote(note: ParsedNote, resolver: LinkResolver, innerResolver?: LinkResolver): PlanNode {
  const issues: PlanIssue[] = []
  const edges = note.edges.map((raw) => {
    const origin: EdgeOrigin = { line: raw.line, column: raw.column }
    if (raw.checked !== undefined) origin.checked = raw.checked
    let target = raw.link
    if (raw.outside) origin.problem = 'outside'
    else {
      const resolved = resolver.resolve(raw.link)
      if (resolved.id !== undefined) target = resolved.id
      else if (resolved.candidates.length === 0 && innerResolver?.resolve(raw.link).id !== undefined) origin.problem = 'subplan'
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
  if (note.plan !== undefined) node.plan = note.plan
  if (note.check !== undefined) node.check = note.check
  if (note.retries !== undefined) node.retries = note.retries
  if (note.wait !== undefined) node.wait = note.wait
  if (note.issues.length > 0 || issues.length > 0) node.issues = issues.length > 0 ? [...note.issues, ...issues] : [...note.issues]
  return withNodeOrigin(node, note.origin)
}
