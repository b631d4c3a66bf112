import { abortable } from '../core/abort.js'
import { waitsForPerson } from '../core/knobs.js'
import { createLLM, resolveModelConfig } from '../models/llm-client.js'
import { lockVault } from '../vault/lock.js'
import type { PlanGraph } from '../plan/plan-graph.js'
import type { RunDriver } from './run-driver.js'
import { PlanTree, type TreeSettings } from './plan-tree.js'
import { countedModel } from './run-words.js'
import { isGenerate } from '../vault/subplan-folders.js'
import { checkOptions, DEFAULTS, stepBudget, type DriverOptions, type RunOptions, type RunResult } from './run-options.js'
import { prepareRunVault } from './run-vault.js'
import { proposalGate, proposalResult } from './proposal-gate.js'
import { runTelemetry } from './telemetry.js'
import { conditionsOf } from '../models/transitions.js'
import type { PlanNode } from '../core/types.js'
import { VaultSession } from '../store/vault-session.js'
import { tidyFinishedRun } from '../store/tidy-finished-run.js'
import { createWorker } from '../models/worker.js'
import { workVisit } from './work-visit.js'
import { LEDGER_TOOL_NAMES } from '../memory/ledger-tools.js'

/**
 * Runs a plan: validates it (no model is called for an invalid plan), then
 * walks it from the start node, hop by hop: the node becomes `active`, the
 * worker works it, it becomes `done`, and the transition is judged
 * (predicates, then one YES/NO LLM call, then the unconditional edge, then
 * work again). Every hop is appended to `00_plan-trace/trace.md`. Running
 * the same vault again resumes where it stopped. The walk is `nextStep` /
 * work / `completeStep` under one lock.
 *
 * @param plan - a vault folder, or an in-memory graph (written to a run vault first)
 * @throws {PlanValidationError} when the plan (or an edit made mid-run) is invalid
 * @throws {StepError} when the worker fails; the vault stays resumable
 * @throws {RunStateError} when the vault's state needs a person (two `active` notes, a lock held by another run, another query than the recorded one, ...)
 * @throws {ModelConfigError} before anything is written, when the run needs a model and none is configured
 * @throws {RunAbortedError} when `signal` aborts the run; the vault stays resumable
 * @throws {TypeError} on bad options, or a new run without `query`
 */
export async function runPlan(plan: string | PlanGraph, options: RunOptions = {}): Promise<RunResult> {
  checkOptions(plan, options)
  const fsync = options.fsync ?? DEFAULTS.fsync
  const prepared = await prepareRunVault(plan, { query: options.query, fsync, runVault: options.runVault })
  return abortable(options.signal, prepared.vault, () => runPrepared(plan, prepared, options))
}

async function runPrepared(plan: string | PlanGraph, prepared: Awaited<ReturnType<typeof prepareRunVault>>, options: RunOptions): Promise<RunResult> {
  const fsync = options.fsync ?? DEFAULTS.fsync
  // Not queued behind this process's other calls like a stepping call: a run holds the vault for long, so a second one is refused.
  const lock = await lockVault(prepared.vault)
  const telemetry = await runTelemetry(prepared.vault)
  let failure: unknown
  try {
    // A pending proposal is decided (or waited for) before the plan is even read: a revision rewrites its notes.
    const gate = await proposalGate(prepared.vault, {
      query: options.query,
      fresh: options.fresh ?? DEFAULTS.fresh,
      llm: options.llm,
      fsync,
      signal: options.signal,
    })
    if (gate.kind === 'waiting') return proposalResult(gate.step, prepared.vault, options.onEvent)
    const sessionOptions: { fsync: boolean; tools?: string[] } = { fsync }
    // The built-in worker's ledger tools are known names too: `tools: [record_fact]` is no unknown tool.
    if (options.tools) sessionOptions.tools = [...options.tools.map((tool) => tool.name), ...LEDGER_TOOL_NAMES]
    const session = await VaultSession.open(prepared.vault, sessionOptions)
    let tree: PlanTree | undefined
    let completed = false
    try {
      const work = worker(() => tree!.top, options)
      const driver: DriverOptions = {
        query: gate.query,
        llm: options.llm,
        predicates: options.predicates,
        maxSteps: stepBudget(options.maxSteps),
        fsync,
        fresh: options.fresh ?? DEFAULTS.fresh,
        signal: options.signal,
        onEvent: (event) => {
          telemetry.onEvent(event)
          options.onEvent?.(event)
        },
        degraded: typeof plan === 'string' ? undefined : plan.degraded,
        source: prepared.source,
        beforeClaim: (node) => checkModels(node, options),
      }
      tree = await PlanTree.open(prepared.vault, session, { lock, session: sessionOptions, driver, work })
      tree.top.begin()
      const step = await tree.next()
      if (step.kind === 'work') throw new Error('A run tree with a worker returned a visit to work')
      const result = await tree.resultOf(step)
      completed = result.status === 'completed'
      return result
    } finally {
      await tree?.close()
      await session.close()
      // What a finished run no longer needs (journals, locks of runners gone) is removed under the lock, its sessions closed.
      if (completed) await tidyFinishedRun(prepared.vault)
    }
  } catch (error) {
    failure = error
    throw error
  } finally {
    telemetry.end(failure)
    await lock.release()
  }
}

/**
 * The worker of a run: works one claimed visit (at the top or inside a
 * subplan, `plan` its folder from the top vault) and returns its output.
 */
function worker(top: () => RunDriver, options: RunOptions): NonNullable<TreeSettings['work']> {
  let llm = options.llm
  return async (step, driver, plan) => {
    // The worker's model calls count for the hop's record, like the judge's.
    const model = countedModel(
      () => (llm ??= createLLM()),
      (usage) => driver.noteUsage(usage),
    )
    const run = options.work ?? createWorker(model, options.tools ? { tools: options.tools } : {})
    // The ledger is the top vault's: a run's facts are one record, subplans included.
    return workVisit(step, run, { vault: top().vault, plan, signal: options.signal })
  }
}

/** Before a visit is claimed: a model the visit will need must be configured, so nothing is written for a run that cannot go on. */
function checkModels(node: PlanNode, options: RunOptions): void {
  if (options.llm) return
  if (isGenerate(node.plan)) resolveModelConfig('planning')
  if (!options.work) resolveModelConfig(node.role ?? 'action')
  if (!waitsForPerson(node) && conditionsOf(node, options.predicates).some((label) => label !== 'next')) resolveModelConfig(node.role ?? 'transition')
}
