import { parseGridReply } from './judge-reply.js'
import { ledgerAsText } from '../memory/ledger-tools.js'
import { dataFence, recentOutputs } from '../core/text.js'
import { KNOB_LABELS } from '../core/knobs.js'
import type { CallLLM, DecidedBy, Edge, PlanNode, Predicate, TransitionContext } from '../core/types.js'

/** What `chooseEdge` decided: the edge to take (`null`: work the node again, or the run ends). */
export interface Decision {
  edge: Edge | null
  /** The judge's raw reply, or a sentence saying what decided. */
  rationale: string
  decidedBy: DecidedBy
  /** The judge's answer to each condition it was asked, in file order (set when the LLM judged). */
  answers?: { condition: string; answer: 'YES' | 'NO' }[]
}

/** Options of `chooseEdge`. */
export interface ChooseEdgeOptions {
  /**
   * Predicates by label; they win over the ones registered with `registerPredicate`.
   *
   * @default {}
   */
  predicates?: Record<string, Predicate>
  /**
   * The caller's choice (`completeStep`): after the predicates, it takes its
   * edge (`decidedBy: 'agent'`) instead of the LLM judge. One of the
   * step's `conditions` (a condition label no predicate decides, `next` for
   * the unconditional edge), ignoring case and surrounding space, or the
   * target of exactly one such edge.
   */
  choice?: string
  /**
   * What the note's checks said (`check:`): they decide the labels `passed`
   * and `failed` (`decidedBy: 'check'`) before the predicates. A failure
   * with no `failed` edge works the note again; a pass with no `passed`
   * edge leaves the other edges to be judged as usual.
   */
  check?: 'passed' | 'failed'
  signal?: AbortSignal
}

/** The labels a note's checks decide: the check's outcome, never a predicate's or a judge's. */
const CHECK_LABELS = new Set<string>(KNOB_LABELS.check)

/** How much of each output the judge sees: the freshest in full up to this many characters. */
const CURRENT_OUTPUT_CHARS = 16_000
const OTHER_OUTPUT_CHARS = 4_000
/** The judge sees this visit's output and this many other recent outputs. */
const RECENT_OUTPUTS = 3
/** How much of the ledger the judge sees. */
const LEDGER_CHARS = 4_000

const registry = new Map<string, Predicate>()

/** Predicate labels match ignoring case and surrounding white space. */
function normalizeLabel(label: string): string {
  return label.trim().toLowerCase()
}

/**
 * Registers code that decides a condition label everywhere, instead of the
 * LLM. The `predicates` option of `runPlan` and `chooseEdge` wins over it.
 *
 * @returns a function that removes the registration (tests should call it).
 * @throws `TypeError` when `label` is empty or `fn` is not a function.
 */
export function registerPredicate(label: string, fn: Predicate): () => void {
  if (typeof label !== 'string' || label.trim() === '') throw new TypeError(`Expected \`label\` to be a non-empty string, got \`${String(label)}\``)
  if (typeof fn !== 'function') throw new TypeError(`Expected a predicate function for \`${label}\`, got \`${typeof fn}\``)
  const key = normalizeLabel(label)
  registry.set(key, fn)
  return () => {
    if (registry.get(key) === fn) registry.delete(key)
  }
}

/**
 * Decides which edge leaves a node after its work: the note's checks first
 * (`options.check` takes the `passed` or `failed` edge), then registered predicates (a predicate that holds takes its edge), then one LLM call that
 * judges every remaining condition as a YES/NO grid (the first YES in file
 * order wins), then the unconditional edge, then `null` (work the node
 * again). The LLM is called only when a condition is left undecided.
 *
 * @throws `TypeError` when a condition needs the LLM and no `callLLM` is given.
 */
export async function chooseEdge(node: PlanNode, context: TransitionContext, callLLM?: CallLLM, options: ChooseEdgeOptions = {}): Promise<Decision> {
  if (node.edges.length === 0) return { edge: null, rationale: 'terminal: the node has no edges', decidedBy: 'terminal' }
  if (options.check === 'failed') {
    const edge = labelled(node, 'failed')
    return edge
      ? { edge, rationale: 'a check failed', decidedBy: 'check' }
      : { edge: null, rationale: 'a check failed and the note has no `failed` edge: it works again', decidedBy: 'check' }
  }
  if (options.check === 'passed') {
    const edge = labelled(node, 'passed')
    if (edge) return { edge, rationale: 'the checks passed', decidedBy: 'check' }
  }
  const predicates = predicatesOf(options.predicates)
  const undecided: Edge[] = []
  for (const edge of node.edges) {
    if (!edge.conditional || checkDecides(node, edge)) continue
    const predicate = predicates.get(normalizeLabel(edge.label))
    if (!predicate) undecided.push(edge)
    else if (await predicate(context)) return { edge, rationale: `predicate \`${edge.label}\` held`, decidedBy: 'predicate' }
  }
  if (options.choice !== undefined) {
    const edge = matchChoice(node, options.choice, options.predicates)
    if (edge) return { edge, rationale: `the agent chose \`${options.choice}\``, decidedBy: 'agent' }
  }

  let rationale = ''
  if (undecided.length > 0) {
    if (!callLLM) {
      throw new TypeError(
        `Node \`${node.id}\` has conditions no predicate decides (${undecided.map((e) => `\`${e.label}\``).join(', ')}); pass \`llm\` or \`predicates\``,
      )
    }
    const { prompt, system } = judgePrompt(
      node,
      context,
      undecided.map((edge) => edge.label),
    )
    const call: { role: string; system: string; signal?: AbortSignal } = { role: node.role ?? 'transition', system }
    if (options.signal) call.signal = options.signal
    rationale = await callLLM(prompt, call)
    const grid = parseGridReply(rationale, undecided.length)
    const answers = undecided.map((edge, index) => ({ condition: edge.label, answer: grid[index] ? ('YES' as const) : ('NO' as const) }))
    const chosen = undecided.find((_, index) => grid[index])
    if (chosen) return { edge: chosen, rationale, decidedBy: 'llm', answers }
    const fallback = node.edges.find((edge) => !edge.conditional)
    if (fallback) return { edge: fallback, rationale, decidedBy: 'unconditional', answers }
    return { edge: null, rationale, decidedBy: 'rework', answers }
  }
  const fallback = node.edges.find((edge) => !edge.conditional)
  if (fallback) return { edge: fallback, rationale: 'the only unconditional edge', decidedBy: 'unconditional' }
  return { edge: null, rationale: 'no condition held', decidedBy: 'rework' }
}

/** Whether an edge's label is one the note's checks decide (`passed`, `failed` on a note with `check:`). */
function checkDecides(node: PlanNode, edge: Edge): boolean {
  return node.check !== undefined && edge.conditional && CHECK_LABELS.has(normalizeLabel(edge.label))
}

/** The conditional edge of a note with this label (ignoring case and surrounding space). */
function labelled(node: PlanNode, label: string): Edge | undefined {
  return node.edges.find((edge) => edge.conditional && normalizeLabel(edge.label) === label)
}

/**
 * The edge a visit whose worker failed (after its retries) takes: the one
 * labelled `failed`, on a note with `retries:` or `check:`; `undefined`
 * when there is none (the run rejects with `StepError`). On other notes
 * `failed` is an ordinary condition.
 */
export function failureEdge(node: PlanNode): Edge | undefined {
  return node.retries !== undefined || node.check !== undefined ? labelled(node, 'failed') : undefined
}

function predicatesOf(given: Record<string, Predicate> | undefined): Map<string, Predicate> {
  const predicates = new Map(registry)
  for (const [label, fn] of Object.entries(given ?? {})) predicates.set(normalizeLabel(label), fn)
  return predicates
}

/**
 * The choices a caller may give for a node (`Step.conditions`): the labels of
 * its conditional edges that no predicate decides, in file order, then
 * `next` when it has an unconditional edge. Empty for a terminal.
 */
export function conditionsOf(node: PlanNode, predicates?: Record<string, Predicate>): string[] {
  const known = predicatesOf(predicates)
  const labels = node.edges.filter((edge) => edge.conditional && !known.has(normalizeLabel(edge.label)) && !checkDecides(node, edge)).map((edge) => edge.label)
  return node.edges.some((edge) => !edge.conditional) ? [...labels, 'next'] : labels
}

/**
 * The edge a caller's choice names: a condition label without a predicate
 * (ignoring case and surrounding space), `next` for the unconditional edge,
 * or the target of exactly one such edge; `undefined` when it names none.
 */
export function matchChoice(node: PlanNode, choice: string, predicates?: Record<string, Predicate>): Edge | undefined {
  const known = predicatesOf(predicates)
  const wanted = normalizeLabel(choice)
  const open = node.edges.filter((edge) => !edge.conditional || (!known.has(normalizeLabel(edge.label)) && !checkDecides(node, edge)))
  const byLabel = open.find((edge) => edge.conditional && normalizeLabel(edge.label) === wanted)
  if (byLabel) return byLabel
  if (wanted === 'next') return open.find((edge) => !edge.conditional)
  const byTarget = open.filter((edge) => normalizeLabel(edge.target) === wanted)
  return byTarget.length === 1 ? byTarget[0] : undefined
}

/** How the judge's system message begins: what tells a judge's call from the worker's and the planner's. */
export const JUDGE_SYSTEM = 'You judge conditions of a plan step.'

/**
 * The judge's prompt. Node text, outputs and the ledger's facts and valid
 * assumptions are data, fenced by a marker made fresh for each call so that
 * no text inside can close it; only the numbered conditions, which the
 * plan's author wrote, are questions.
 */
export function judgePrompt(node: PlanNode, context: TransitionContext, conditions: string[]): { prompt: string; system: string } {
  const fence = dataFence('material to judge')
  const data = fence.wrap
  const recent = recentOutputs(context.outputs, RECENT_OUTPUTS)
  // Invalidated assumptions stay out: the judge must not rest a decision on them.
  const ledger = context.ledger ? ledgerAsText(context.ledger, { decisions: false }) : ''
  const parts = [
    'Judge which conditions hold now, after the step below was worked.',
    data('The query of the run:', context.query, OTHER_OUTPUT_CHARS),
    data('The step:', `# ${oneLine(node.title)}\n\n${node.body}`, OTHER_OUTPUT_CHARS),
    data(`The output of this visit (visit ${context.visit}):`, context.output, CURRENT_OUTPUT_CHARS),
    ...recent.map((entry) => data(`An earlier output (${oneLine(entry.node)}, visit ${entry.visit}):`, entry.output, OTHER_OUTPUT_CHARS)),
    ...(ledger === '' ? [] : [data("Facts and valid assumptions recorded in the plan's ledger:", ledger, LEDGER_CHARS)]),
    `Conditions:\n${conditions.map((condition, index) => `${index + 1}. ${oneLine(condition)}`).join('\n')}`,
    `Answer every condition on its own line as "<number>: YES" or "<number>: NO", judged against the outputs above, the freshest first, then a short reason.`,
  ]
  const system = `${JUDGE_SYSTEM} ${fence.rule} Reply only with one numbered YES/NO line per condition.`
  return { prompt: parts.join('\n\n'), system }
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}
