import { PlanValidationError } from '../core/errors.js'
import type { PlanIssue, PlanIssueCode, PlanNode } from '../core/types.js'
import { planEdges, stronglyConnectedComponents, type PlanEdges } from './plan-edges.js'
import { closestNames, didYouMean } from '../core/closest-names.js'
import { KNOB_KEYS, KNOB_LABELS, KNOBS } from '../core/knobs.js'

/** What validation reads of a plan: its nodes (each with the issues of its note) and the issues of no node. `PlanGraph` is one. */
export interface PlanShape {
  readonly nodes: ReadonlyMap<string, PlanNode>
  readonly issues?: readonly PlanIssue[]
}

/** Options of `PlanGraph.validate`. */
export interface ValidateOptions {
  /** Names of the tools the caller supplies; unknown names in a node's `tools:` are warnings. */
  tools?: string[]
  /**
   * Names of the checks the runner defines (`RunOptions.checks`, `--check`,
   * `vaultplan.config.json`); a node's `check:` naming another is the error
   * `unknown-check`, so a vault can never make a runner start a program.
   *
   * Leave it out to not look at `check:` names (a plan read, not run);
   * every runner passes the names it has, `[]` when none.
   */
  checks?: string[]
}

/** Finds the start node: the one marked `type: start`, or the only node without incoming edges. */
export function findStart(graph: PlanShape): { start: PlanNode | undefined; issues: PlanIssue[] } {
  const nodes = [...graph.nodes.values()]
  const entered = (): ((node: PlanNode) => boolean) => {
    const targets = new Set<string>()
    for (const node of nodes) for (const edge of node.edges) if (edge.target !== node.id) targets.add(edge.target)
    return (node) => targets.has(node.id)
  }
  return startOf(nodes, entered)
}

/** {@link findStart} with the nodes in order and a way to learn which have an incoming edge (from another node), asked only when no node is marked. */
function startOf(nodes: readonly PlanNode[], entered: () => (node: PlanNode) => boolean): { start: PlanNode | undefined; issues: PlanIssue[] } {
  const marked = nodes.filter((node) => node.type === 'start')
  if (marked.length === 1) return { start: marked[0], issues: [] }
  if (marked.length > 1) {
    const names = marked.map((node) => `\`${node.id}\``).join(', ')
    return {
      start: undefined,
      issues: marked.map((node) =>
        issue(node, 'multiple-starts', `${marked.length} notes are marked \`type: start\` (${names}); keep one`, node.at?.keys.get('type')),
      ),
    }
  }
  const hasIncoming = entered()
  const roots = nodes.filter((node) => !hasIncoming(node))
  if (roots.length === 1) return { start: roots[0], issues: [] }
  const message =
    nodes.length === 0
      ? 'the plan has no notes'
      : roots.length === 0
        ? 'no note is marked `type: start` and every note has an incoming edge; mark the entry note with `type: start`'
        : `no note is marked \`type: start\` and ${roots.length} notes have no incoming edge (${roots
            .slice(0, 5)
            .map((node) => `\`${node.id}\``)
            .join(', ')}${roots.length > 5 ? ', ...' : ''}); mark the entry note with \`type: start\``
  return { start: undefined, issues: [{ code: 'no-start', severity: 'error', message }] }
}

/**
 * Checks a plan: dangling edges, cycles without an exit, the
 * start node, frontmatter, ambiguous edges and links, misspelled knobs.
 * Problems of notes the start cannot reach are warnings. One mistake is
 * reported once, at its cause: a broken edge is a way out of its loop, and a
 * note whose frontmatter cannot be read may be the start, so neither is also
 * reported as a loop or a missing start; a link's likely meaning counts as
 * reaching its note. A start that reaches no terminal always reaches a loop
 * with no way out or a broken edge, and is reported there.
 *
 * @returns the warnings.
 * @throws {@link PlanValidationError} carrying every issue, when there is at least one error.
 */
export function checkPlan(graph: PlanShape, options: ValidateOptions = {}): PlanIssue[] {
  // A folder passed over because it holds a run is worth saying only as the cause of a dangling edge.
  const runFolders = (graph.issues ?? []).filter((found) => found.code === 'run-folder')
  const nodeIssues: PlanIssue[] = (graph.issues ?? []).filter((found) => found.code !== 'run-folder')
  let danglingIntoRuns = false
  for (const node of graph.nodes.values()) if (node.issues) for (const found of node.issues) nodeIssues.push(found)
  const planIssues: PlanIssue[] = []
  const edges = planEdges(graph.nodes)
  const { nodes, out } = edges
  // Per node: whether an edge of it leads to no note (reported), and the notes such edges likely meant.
  const broken = new Uint8Array(nodes.length)
  const meant: number[][] = nodes.map(() => [])
  const guess = linkGuesser(edges)

  for (let n = 0; n < nodes.length; n++) {
    const node = nodes[n]!
    let unconditional = 0
    for (const edge of node.edges) {
      const origin = edge.at
      if (!edge.conditional && ++unconditional === 2) {
        nodeIssues.push(issue(node, 'ambiguous-unconditional', 'has two unconditional edges; label all but one with a condition', origin))
      }
      if (edges.numberOf.has(edge.target)) continue
      broken[n] = 1
      if (origin?.problem === 'ambiguous') continue
      let why =
        origin?.problem === 'outside'
          ? 'points outside the vault'
          : origin?.problem === 'subplan'
            ? "points into a subplan's folder: that note belongs to the subplan, which runs on its own; link the note whose `plan:` names the folder"
            : 'matches no note'
      if (origin?.problem === undefined) {
        const guesses = guess(edge.target)
        if (guesses.length > 0)
          why += `; ${didYouMean(
            guesses.map(({ link }) => link),
            (link) => `\`[[${link}]]\``,
          )}`
        if (guesses.length === 1) meant[n]!.push(guesses[0]!.node)
        if (runFolders.length > 0) {
          const named = runFolders.map((found) => `\`${found.file}/\``).join(', ')
          why += `${guesses.length > 0 ? ' Or' : ';'} is it in ${named}, which ${runFolders.length === 1 ? 'holds a run' : 'hold runs'} of ${runFolders.length === 1 ? 'its' : 'their'} own and so ${runFolders.length === 1 ? 'is' : 'are'} not part of this plan?`
          danglingIntoRuns = true
        }
      }
      nodeIssues.push(issue(node, 'dangling-edge', `edge \`${edge.label || 'next'}\` -> \`[[${edge.target}]]\` ${why}`, origin))
    }
    for (const key of Object.keys(node.frontmatter)) {
      if (Object.hasOwn(KNOBS, key)) continue
      const knobs = closestNames(key, KNOB_KEYS, { edits: 1 })
      if (knobs.length === 0) continue
      const message = `\`${key}\` is no knob, so it is kept as a key of yours and does nothing; ${didYouMean(knobs)}`
      nodeIssues.push({ ...issue(node, 'misspelled-knob', message, node.at?.keys.get(key)), severity: 'warning' })
    }
    nodeIssues.push(...misspelledLabels(node))
  }

  if (danglingIntoRuns) nodeIssues.push(...runFolders)

  const loops = exitlessLoops(edges, broken)
  for (const component of loops) {
    // File order, not edge order: arrows between them would claim edges that may not exist.
    const ordered = component.map((n) => nodes[n]!)
    const first = ordered[0]!
    const loop = ordered.map((node) => `\`${node.id}\``).join(', ')
    const message =
      ordered.length === 1
        ? 'links only to itself and has no other way out; add an edge that leaves it'
        : `is in a loop with no way out (${loop}); add an edge that leaves the loop`
    // At the edge that keeps the first note in the loop: where a way out is written.
    const members = new Set(ordered.map((node) => node.id))
    nodeIssues.push(issue(first, 'cycle-without-exit', message, first.edges.find((edge) => members.has(edge.target))?.at))
  }

  const { start, issues: startIssues } = startOf(nodes, () => {
    const entered = new Uint8Array(nodes.length)
    for (let n = 0; n < out.length; n++) for (const target of out[n]!) if (target !== n) entered[target] = 1
    return (node) => entered[edges.numberOf.get(node.id)!] === 1
  })
  // A note whose `type:` cannot be read may be the start: its `invalid-frontmatter` says what to fix.
  const unknownType = nodes.some(typeUnknown)
  planIssues.push(...startIssues.filter((found) => found.code !== 'no-start' || !unknownType))
  // Whether the start reaches a node (through an edge, or a broken edge's likely meaning); `undefined` when there is no start.
  let reaches: ((id: string) => boolean) | undefined
  if (start) {
    const seen = new Uint8Array(nodes.length)
    const first = edges.numberOf.get(start.id)!
    seen[first] = 1
    const queue = [first]
    const enter = (target: number) => {
      if (seen[target] === 1) return
      seen[target] = 1
      queue.push(target)
    }
    for (let n = queue.pop(); n !== undefined; n = queue.pop()) {
      for (const target of out[n]!) enter(target)
      for (const target of meant[n]!) enter(target)
    }
    reaches = (id) => seen[edges.numberOf.get(id)!] === 1
  }

  const known = options.tools ? new Set(options.tools) : undefined
  const checks = options.checks ? new Set(options.checks) : undefined
  for (const node of nodes) {
    for (const name of checks ? (node.check ?? []) : []) {
      if (checks!.has(name)) continue
      const guesses = didYouMean(closestNames(name, checks!))
      const defined = checks!.size === 0 ? 'the runner defines no checks' : `the runner defines ${[...checks!].map((each) => `\`${each}\``).join(', ')}`
      const message = `names check \`${name}\`, which the runner does not define (${defined}; checks come from the runner's options, \`--check\` or \`vaultplan.config.json\`, never from the vault)${guesses && `; ${guesses}`}`
      nodeIssues.push(issue(node, 'unknown-check', message, node.at?.keys.get('check')))
    }
    if (reaches && !reaches(node.id)) {
      nodeIssues.push({ ...issue(node, 'unreachable', 'cannot be reached from the start node'), severity: 'warning' })
    }
    for (const tool of known ? (node.tools ?? []) : []) {
      if (known!.has(tool)) continue
      const guesses = didYouMean(closestNames(tool, known!))
      const message = `names tool \`${tool}\`, which the runner does not have${guesses && `; ${guesses}`}`
      nodeIssues.push({ ...issue(node, 'unknown-tool', message, node.at?.keys.get('tools')), severity: 'warning' })
    }
  }
  // A note the run can never enter cannot break it: its problems are only warnings.
  const all = [
    ...planIssues,
    ...nodeIssues.map((found) =>
      reaches && found.node !== undefined && graph.nodes.has(found.node) && !reaches(found.node) ? { ...found, severity: 'warning' as const } : found,
    ),
  ].sort(byPlace)
  return all
}

/** What each knob's own label does, for the warning about a label a typo away from it. */
const LABEL_MEANS: Record<keyof typeof KNOB_LABELS, string> = {
  check: "that `check:` decides by the check's exit code, so no check result takes this edge",
  retries: 'that `retries:` takes when the worker keeps failing, so no failure takes this edge',
  wait: 'that `wait:` takes at its deadline, so no deadline takes this edge',
}

/**
 * Warnings for the conditions of a note a typo away from a label its knobs
 * give meaning to (`passd` beside `check:`, `timout` beside `wait:`): such a
 * label is an ordinary condition, so the check never routes it, or the wait
 * never times out.
 */
function misspelledLabels(node: PlanNode): PlanIssue[] {
  const found: PlanIssue[] = []
  const knobs = (Object.keys(KNOB_LABELS) as (keyof typeof KNOB_LABELS)[]).filter((knob) => node[KNOBS[knob].field] !== undefined)
  const labels = new Set<string>(knobs.flatMap((knob) => KNOB_LABELS[knob]))
  for (const edge of node.edges) {
    const label = edge.label.trim().toLowerCase()
    if (!edge.conditional || labels.has(label)) continue
    const meant = closestNames(label, labels)
    if (meant.length === 0) continue
    const knob = knobs.find((each) => (KNOB_LABELS[each] as readonly string[]).includes(meant[0]!))!
    const message = `\`${edge.label.trim()}\` is an ordinary condition, not the \`${meant[0]}\` ${LABEL_MEANS[knob]}; ${didYouMean(meant)}`
    found.push({ ...issue(node, 'misspelled-label', message, edge.at), severity: 'warning' })
  }
  return found
}

/** Whether a note's `type:` could not be read: its frontmatter is broken, or its `type:` value is not one of the types. */
function typeUnknown(node: PlanNode): boolean {
  const written = node.frontmatter.type
  return node.at?.unread === true || (written !== undefined && written !== null && written !== node.type)
}

/**
 * Guesses what a link that matches no note meant: the notes a typo away, by
 * path for a link with a folder, else by name, each with the link to write
 * (the name, or the path when several notes have that name).
 */
function linkGuesser({ ids, numberOf }: PlanEdges): (link: string) => { link: string; node: number }[] {
  let byName: Map<string, string[]> | undefined
  let guessed = 0
  return (link) => {
    // Enough for any plan a person wrote; a hostile one with thousands of broken links is not searched for each.
    if (++guessed > MAX_GUESSED_LINKS) return []
    if (link.includes('/')) return closestNames(link, ids).map((id) => ({ link: id, node: numberOf.get(id)! }))
    byName ??= namesOf(ids)
    return closestNames(link, byName.keys()).flatMap((name) => {
      const found = byName!.get(name)!
      return found.length === 1 ? [{ link: name, node: numberOf.get(found[0]!)! }] : found.map((id) => ({ link: id, node: numberOf.get(id)! }))
    })
  }
}

/** How many broken links of one plan get a guess. */
const MAX_GUESSED_LINKS = 100

/** The ids by their last part (`review/final` under `final`). */
function namesOf(ids: readonly string[]): Map<string, string[]> {
  const names = new Map<string, string[]>()
  for (const id of ids) {
    const name = id.slice(id.lastIndexOf('/') + 1)
    names.set(name, [...(names.get(name) ?? []), id])
  }
  return names
}

/** `checkPlan`, throwing on errors: resolves to the warnings. */
export function validatePlan(graph: PlanShape, options: ValidateOptions = {}): PlanIssue[] {
  const all = checkPlan(graph, options)
  if (all.some((found) => found.severity === 'error')) throw new PlanValidationError(all)
  return all
}

function issue(node: PlanNode, code: PlanIssueCode, message: string, origin?: { line: number; column: number }): PlanIssue {
  const found: PlanIssue = { code, severity: 'error', message, node: node.id }
  if (node.file !== undefined) found.file = node.file
  if (origin) {
    found.line = origin.line
    found.column = origin.column
  }
  return found
}

function byPlace(a: PlanIssue, b: PlanIssue): number {
  return (a.file ?? '').localeCompare(b.file ?? '') || (a.line ?? 0) - (b.line ?? 0) || (a.column ?? 0) - (b.column ?? 0)
}

/**
 * The loop a run went round to come back to `id`, from `walk`, the nodes it
 * worked, oldest first: the nodes from its last work of `id` on, each leading
 * to the next (by an edge, or by working again) and the last back to `id`.
 * Rounds of an inner loop on the way are left out, so each node is named
 * once, and the loop starts at its node first in file order, so one loop has
 * one name wherever the run stopped in it. Empty when the run did not come
 * back to `id` that way (its first visit, or a person moved the run).
 */
export function loopOf(graph: PlanShape, id: string, walk: readonly string[]): string[] {
  const from = walk.lastIndexOf(id)
  if (from < 0) return []
  const leads = (node: string, next: string) => node === next || (graph.nodes.get(node)?.edges.some((edge) => edge.target === next) ?? false)
  const loop: string[] = []
  for (const node of walk.slice(from)) {
    if (loop.length > 0 && !leads(loop.at(-1)!, node)) return []
    const seen = loop.indexOf(node)
    if (seen >= 0) loop.length = seen + 1
    else loop.push(node)
  }
  if (!leads(loop.at(-1)!, id)) return []
  const members = new Set(loop)
  let first = 0
  for (const each of graph.nodes.keys()) {
    if (!members.has(each)) continue
    first = loop.indexOf(each)
    break
  }
  return [...loop.slice(first), ...loop.slice(0, first)]
}

/**
 * The loops no edge leaves (a node linking only to itself among them), each
 * as its node numbers in file order. A loop with a `broken` edge (one that
 * leads to no note, reported) is left out: that edge leaves it.
 */
function exitlessLoops({ out }: PlanEdges, broken: Uint8Array): number[][] {
  const loops: number[][] = []
  const component = new Int32Array(out.length)
  const components = stronglyConnectedComponents(out)
  for (let c = 0; c < components.length; c++) for (const n of components[c]!) component[n] = c
  for (let c = 0; c < components.length; c++) {
    const members = components[c]!
    const only = members[0]!
    if (members.length === 1 && !out[only]!.includes(only)) continue
    if (members.some((n) => broken[n] === 1 || out[n]!.some((target) => component[target] !== c))) continue
    loops.push(members.sort((a, b) => a - b))
  }
  return loops
}
