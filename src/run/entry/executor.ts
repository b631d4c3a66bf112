import { abortable } from '../../core/abort.js'
import { waitsForPerson } from '../../core/knobs.js'
import { createLLM, resolveModelConfig } from '../../models/llm-client.js'
import { lockVault } from '../../vault/lock.js'
import type { PlanGraph } from '../../plan/plan-graph.js'
import type { RunDriver } from '../drive/run-driver.js'
import { PlanTree } from '../drive/plan-tree.js'
import type { TreeSettings } from '../drive/tree-vaults.js'
import { countedModel } from '../drive/run-models.js'
import { tell } from '../drive/events.js'
import { isGenerate } from '../../vault/subplan-folders.js'
import { namingVault } from '../../core/errors.js'
import { busyError, heldByOther } from '../core/claims.js'
import { checkOptions, DEFAULTS, resolveBudget, type DriverOptions, type RunOptions, type RunResult } from '../core/run-options.js'
import { prepareRunVault } from '../drive/run-vault.js'
import { proposalGate, proposalResult } from '../proposals/proposal-gate.js'
import { runTelemetry } from '../drive/telemetry.js'
import { conditionsOf } from '../../models/transitions.js'
import type { PlanNode } from '../../core/types.js'
import { VaultSession } from '../../store/vault-session.js'
import { tidyFinishedRun } from '../../store/tidy-finished-run.js'
import { createWorker } from '../../models/worker.js'
import { workWithRetries } from '../drive/work-visit.js'
import { LEDGER_TOOL_NAMES } from '../../memory/ledger-tools.js'

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
 * @throws {@link PlanValidationError} when the plan (or an edit made mid-run) is invalid
 * @throws {@link StepError} when the worker fails; the vault stays resumable
 * @throws {@link RunStateError} when the vault's state needs a person (two `active` notes, a lock held by another run, another query than the recorded one, ...)
 * @throws {@link ModelConfigError} before anything is written, when the run needs a model and none is configured
 * @throws {@link RunAbortedError} when `signal` aborts the run; the vault stays resumable
 * @throws `TypeError` on bad options, or a new run without `query`
 */
export async function runPlan(plan: string | PlanGraph, options: RunOptions = {}): Promise<RunResult> {
  checkOptions(plan, options)
  const fsync = options.fsync ?? DEFAULTS.fsync
  // The runner's tools are known when the built-in worker works (with `tools`, or none): a note naming another is warned about.
  // Its ledger tools are known names too: `tools: [record_fact]` is no unknown tool. A caller's `work` has tools of its own.
  const tools = options.tools || !options.work ? [...(options.tools ?? []).map((tool) => tool.name), ...LEDGER_TOOL_NAMES] : undefined
  const prepared = await prepareRunVault(plan, { query: options.query, fsync, runVault: options.runVault, tools, checks: Object.keys(options.checks ?? {}) })
  return abortable(options.signal, prepared.vault, () => runPrepared(plan, prepared, options, tools))
}

async function runPrepared(
  plan: string | PlanGraph,
  prepared: Awaited<ReturnType<typeof prepareRunVault>>,
  options: RunOptions,
  tools: string[] | undefined,
): Promise<RunResult> {
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
    const sessionOptions: { fsync: boolean; tools?: string[]; checks: string[] } = { fsync, checks: Object.keys(options.checks ?? {}) }
    if (tools) sessionOptions.tools = tools
    const session = await VaultSession.open(prepared.vault, sessionOptions)
    let tree: PlanTree | undefined
    let completed = false
    try {
      const warnings = session.validate()
      if (warnings.length > 0) tell(options.onEvent, { type: 'warnings', issues: warnings })
      const work = worker(() => tree!.top, options)
      const driver: DriverOptions = {
        query: gate.query,
        llm: options.llm,
        predicates: options.predicates,
        checks: options.checks,
        maxSteps: resolveBudget(options.maxSteps),
        budget: { told: options.maxSteps },
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
        // Visits agents hold are theirs: the run works the rest of the frontier.
        gate: ({ claimed, record }) => (claimed && heldByOther(record, undefined, Date.now()) ? 'skip' : 'take'),
      }
      tree = await PlanTree.open(prepared.vault, session, { lock, session: sessionOptions, driver, work })
      tree.top.begin()
      const step = await tree.next()
      if (step.kind === 'work') throw new Error('A run tree with a worker returned a visit to work')
      if (step.kind === 'busy') throw busyError(step.claims)
      const result = await tree.resultOf(step)
      completed = result.status === 'completed'
      return result
    } finally {
      await tree?.close()
      await session.close()
      // What a finished run no longer needs (journals, locks of runners gone) is removed under the lock, its sessions closed.
      if (completed) await tidyFinishedRun(prepared.vault, { fsync })
    }
  } catch (error) {
    // The diagnostics of a run vault name it: `runs/announce/review.md`, not a `review.md` the template also has.
    failure = namingVault(error, options.runVault ?? (typeof plan === 'string' ? plan : prepared.vault))
    throw failure
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
    return workWithRetries(step, run, { vault: top().vault, plan, signal: options.signal })
  }
}

/** Before a visit is claimed: a model the visit will need must be configured, so nothing is written for a run that cannot go on. */
function checkModels(node: PlanNode, options: RunOptions): void {
  if (options.llm) return
  if (isGenerate(node.plan)) resolveModelConfig('planning')
  if (!options.work) resolveModelConfig(node.role ?? 'action')
  if (!waitsForPerson(node) && conditionsOf(node, options.predicates).some((label) => label !== 'next')) resolveModelConfig(node.role ?? 'transition')
}
