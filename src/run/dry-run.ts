import { resolve } from 'node:path'
import { waitsForPerson } from '../core/knobs.js'
import { assertFolder } from '../vault/fs-atomic.js'
import { readLedger } from '../memory/ledger.js'
import { loadPlan } from '../plan/load-plan.js'
import { locate, notesOf, replay } from './run-core.js'
import { outputsOf, pendingOutput } from './run-open.js'
import { stepBudget } from './run-options.js'
import { readTrace } from '../store/trace.js'
import { conditionsOf, judgePrompt } from '../models/transitions.js'
import type { Predicate } from '../core/types.js'

/** The judge prompt the next hop of a vault would send, as `dryRun` shows it. */
export interface JudgePreview {
  node: string
  visit: number
  step: number
  /** The conditions the judge would be asked, in file order. */
  conditions: string[]
  system: string
  prompt: string
  /** `false` when the visit is not worked yet: the prompt shows a placeholder where its output will be. */
  worked: boolean
}

/** What stands in the preview for an output the worker has not written yet. */
const NOT_YET = '(the output of this visit: not worked yet)'

/**
 * A dry run: the judge prompt the next hop of `vault` would send, built
 * from the vault exactly as a run would build it, without working,
 * judging or writing anything (no lock, no status, no trace).
 *
 * @returns `null` when the next hop needs no judge (no condition left for
 *   the model, a person decides, the run completed or stopped)
 * @throws {PlanValidationError} when the plan is invalid
 */
export async function dryRun(
  vault: string,
  options: { query?: string; predicates?: Record<string, Predicate>; maxSteps?: number } = {},
): Promise<JudgePreview | null> {
  const dir = resolve(vault)
  await assertFolder(dir, vault)
  const graph = await loadPlan(dir)
  graph.validate()
  const trace = await readTrace(dir)
  const outputs = await outputsOf(dir, trace?.records ?? [])
  const state = replay(trace?.records ?? [], (file) => outputs.get(file))
  const active = [...graph.nodes.values()].filter((node) => node.status === 'active').map((node) => node.id)
  const pending = trace ? await pendingOutput(dir, state.steps) : undefined
  const position = locate(
    { runId: trace?.header.run ?? '', replay: state, pending, maxSteps: stepBudget(options.maxSteps) },
    notesOf(graph, active, graph.startNode().id),
  )
  if (position.kind !== 'work' && position.kind !== 'judge') return null
  const node = graph.nodes.get(position.node)
  if (!node || waitsForPerson(node)) return null
  const conditions = conditionsOf(node, options.predicates).filter((label) => label !== 'next')
  if (conditions.length === 0) return null
  const worked = position.kind === 'judge'
  const context = {
    query: trace?.header.query ?? options.query ?? '',
    node,
    visit: position.visit,
    step: position.step,
    output: worked ? position.saved.output : NOT_YET,
    outputs: state.outputs,
    ledger: await readLedger(dir),
  }
  return { node: node.id, visit: position.visit, step: position.step, conditions, ...judgePrompt(node, context, conditions), worked }
}
