import { join, resolve } from 'node:path'
import { waitsForPerson } from '../../core/knobs.js'
import { assertFolder } from '../../vault/fs-atomic.js'
import { readLedger } from '../../memory/ledger.js'
import { replay } from '../core/run-core.js'
import { journaledOutputs, outputsOf } from './run-outputs.js'
import { journaledWrites } from '../../store/journal-format.js'
import { budgetOf, readRecords } from './observe-run.js'
import { standOf } from '../core/vault-stand.js'
import { subplanTree } from '../../plan/subplan-tree.js'
import { conditionsOf, judgePrompt } from '../../models/transitions.js'
import type { Predicate } from '../../core/types.js'
import type { CheckDefinition } from '../core/checks.js'

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
  /** The checks the note runs after its work, before the judge (they decide `passed` / `failed`); absent when it runs none. */
  checks?: string[]
}

/** What stands in the preview for an output the worker has not written yet. */
const NOT_YET = '(the output of this visit: not worked yet)'

/**
 * A dry run: the judge prompt the next hop of `vault` would send, built
 * from the vault exactly as a run would build it, without working,
 * judging or writing anything (no lock, no status, no trace).
 *
 * `options.checks` are the checks a run would have (as `RunOptions.checks`):
 * a note naming another is the validation error `unknown-check`, as for the
 * run; none are run here.
 *
 * @returns `null` when the next hop needs no judge (no condition left for
 *   the model, a person decides, the run completed or stopped)
 * @throws {@link PlanValidationError} when the plan is invalid
 */
export async function dryRun(
  vault: string,
  options: { query?: string; predicates?: Record<string, Predicate>; maxSteps?: number; checks?: Record<string, CheckDefinition> } = {},
): Promise<JudgePreview | null> {
  const dir = resolve(vault)
  await assertFolder(dir, vault)
  const top = await readRecords(dir)
  top.graph.validate(options.checks ? { checks: Object.keys(options.checks) } : {})
  // The next hop is the snapshot's: the first item of its frontier, inside a subplan too.
  const item = standOf(top, budgetOf(top, options.maxSteps)).items[0]
  if (!item || item.kind === 'plan') return null
  const records = [...subplanTree(top)].find(({ folder }) => folder === (item.plan ?? ''))?.vault
  const node = records?.graph.nodes.get(item.plan === undefined ? item.node : item.node.slice(item.plan.length + 1))
  if (!records || !node || waitsForPerson(node)) return null
  const conditions = conditionsOf(node, options.predicates).filter((label) => label !== 'next')
  if (conditions.length === 0) return null
  const folder = item.plan === undefined ? dir : join(dir, item.plan)
  const trace = records.trace
  // The journal first: an output a live run wrote since is in the files; one it has not yet, in the journal read.
  const outputs = await outputsOf(folder, trace?.records ?? [], journaledOutputs(folder, journaledWrites(folder).files, trace?.header.run))
  const saved = item.kind === 'judge' ? records.pending : undefined
  const context = {
    query: top.trace?.header.query ?? options.query ?? '',
    node,
    visit: item.visit,
    step: item.step,
    output: saved ? saved.output : NOT_YET,
    outputs: replay(trace?.records ?? [], (file) => outputs.get(file)).outputs,
    ledger: await readLedger(dir),
  }
  const preview: JudgePreview = {
    node: item.node,
    visit: item.visit,
    step: item.step,
    conditions,
    ...judgePrompt(node, context, conditions),
    worked: saved !== undefined,
  }
  if (node.check) preview.checks = node.check
  return preview
}
