import { resolve } from 'node:path'
import { abortable } from '../../core/abort.js'
import { MAX_DURATION_MS } from '../../core/durations.js'
import { checkDefinitions } from '../core/checks.js'
import { assertFolder } from '../../vault/fs-atomic.js'
import { withVaultLock, type VaultLock } from '../../vault/lock.js'
import { PlanTree } from '../drive/plan-tree.js'
import { proposalGate } from '../proposals/proposal-gate.js'
import { DEFAULTS, LEASE_MS, resolveBudget, type Step, type StepOptions, type StopInfo, type WaitingNote } from '../core/run-options.js'
import { SessionCache } from '../../store/session-cache.js'
import { VaultSession } from '../../store/vault-session.js'
import { tidyFinishedRun } from '../../store/tidy-finished-run.js'

export type { Step, StepOptions, StopInfo, WaitingNote }

/**
 * What the plan asks now, one hop at a time, for an agent that owns its
 * loop. Validates the plan, finds where the run stands
 * (judging a saved output, following a ticked box on the way) and, for a
 * note to work, claims its visit (`status: active`, the trace header for a
 * new run) and returns `work`. Until that visit is completed, every call
 * returns the same step (same key, visit and step) and counts nothing again.
 * Holds the vault's lock for its own duration only.
 *
 * @throws {@link PlanValidationError} when the plan is invalid
 * @throws {@link RunStateError} `vault-locked` while a runner in another process holds the vault; `query-mismatch`; `two-active`
 * @throws {@link RunAbortedError} when `signal` aborts the call; the vault stays resumable
 * @throws `TypeError` for a vault with no run and no `query`
 */
export async function nextStep(vault: string, options: StepOptions = {}): Promise<Step> {
  checkStepOptions(vault, options)
  return withDriver(vault, options, (driver) => driver.next())
}

/**
 * Completes the pending step: `key` must be the key `nextStep` returned.
 * Saves the output (and the choice) together, marks the note `done`, judges
 * the transition (predicates first, then `choice`, `decidedBy: 'agent'`;
 * without a choice the LLM judge, the unconditional edge, rework) and
 * resolves to the following step, already claimed, so an agent needs one
 * call per hop. A `judge: human` note starts waiting; its choice is ignored.
 *
 * @param result.choice - one of the step's `conditions`
 * @throws {@link RunStateError} `stale-step` for any other key, `bad-choice` for a choice outside the conditions (nothing is written for either)
 * @throws {@link ModelConfigError} when conditions remain, no choice is given and no model is configured (nothing is written)
 * @throws {@link RunAbortedError} when `signal` aborts the call; the vault stays resumable
 */
export async function completeStep(vault: string, key: string, result: { output: string; choice?: string }, options: StepOptions = {}): Promise<Step> {
  checkStepOptions(vault, options)
  if (options.fresh !== undefined) throw new TypeError('Expected no `fresh` for `completeStep` (it completes the pending step); pass `fresh` to `nextStep`')
  if (typeof key !== 'string') throw new TypeError(`Expected \`key\` to be the step's key string, got \`${typeof key}\``)
  if (!result || typeof result.output !== 'string') throw new TypeError(`Expected \`result.output\` to be a string, got \`${typeof result?.output}\``)
  if (result.choice !== undefined && typeof result.choice !== 'string')
    throw new TypeError(`Expected \`result.choice\` to be a string, got \`${typeof result.choice}\``)
  return withDriver(vault, options, (driver) => driver.complete(key, result))
}

/**
 * Lets go of the pending step for now (9plan's defer): the claim is
 * released, the visit is not counted again, a `defer` record with the
 * reason goes into the trace, and the step comes after the other ready ones
 * (with nothing else ready, it comes back next). Resolves to the step that
 * follows, as `nextStep` would return it (for the same `agent`).
 *
 * @param key - the pending step's key
 * @throws {@link RunStateError} `stale-step` for a key that is not pending (nothing is written)
 */
export async function deferStep(vault: string, key: string, why: { reason: string }, options: StepOptions = {}): Promise<Step> {
  return release(vault, key, 'defer', why, options)
}

/**
 * Hands the pending step to a person (Wallah's block): the note becomes
 * `waiting`, listed in `waiting` with `kind: 'blocked'`, the reason, and the
 * one choice `unblock`; ticks in it are ignored. A person unblocks it with
 * `decide(vault, node, { edge: 'unblock', feedback? })`, by setting
 * `status: pending` in the note, or on the board; its next claim is the same
 * visit and key, with their feedback among its outputs (`feedback: true`).
 * Resolves to the step that follows, as `nextStep` would return it.
 *
 * @param key - the pending step's key
 * @throws {@link RunStateError} `stale-step` for a key that is not pending (nothing is written)
 */
export async function blockStep(vault: string, key: string, why: { reason: string }, options: StepOptions = {}): Promise<Step> {
  return release(vault, key, 'block', why, options)
}

async function release(vault: string, key: string, kind: 'defer' | 'block', why: { reason: string }, options: StepOptions): Promise<Step> {
  checkStepOptions(vault, options)
  if (typeof key !== 'string') throw new TypeError(`Expected \`key\` to be the step's key string, got \`${typeof key}\``)
  if (!why || typeof why.reason !== 'string' || why.reason.trim() === '')
    throw new TypeError(`Expected \`reason\` to be a sentence saying why, got \`${String(why?.reason)}\``)
  return withDriver(vault, options, (tree) => tree.release(key, kind, why.reason.trim()))
}

async function withDriver(vault: string, options: StepOptions, call: (tree: PlanTree) => Promise<Step>): Promise<Step> {
  const dir = resolve(vault)
  await assertFolder(dir)
  const fsync = options.fsync ?? DEFAULTS.fsync
  return abortable(options.signal, dir, () => stepLocked(dir, fsync, options, call))
}

function stepLocked(dir: string, fsync: boolean, options: StepOptions, call: (tree: PlanTree) => Promise<Step>): Promise<Step> {
  return withVaultLock(dir, (lock) => stepUnderLock(dir, lock, { ...options, fsync }, call))
}

/**
 * A stepping call on a vault whose lock the caller holds already (not
 * exported by the package): an edit that moves its agent's claim into the
 * subplan it wrote, under the lock it wrote with.
 */
export async function stepUnderLock(dir: string, lock: VaultLock, options: StepOptions, call: (tree: PlanTree) => Promise<Step>): Promise<Step> {
  const fsync = options.fsync ?? DEFAULTS.fsync
  const gate = await proposalGate(dir, { query: options.query, fresh: options.fresh ?? false, llm: options.llm, fsync, signal: options.signal })
  if (gate.kind === 'waiting') return gate.step
  // No watchers: the next call compares every note's stamp anyway (VaultSession.open with a cache).
  const checks = Object.keys(options.checks ?? {})
  const fallback = (options as StepCallOptions).fallbackMaxSteps
  const session = await VaultSession.open(dir, { fsync, watch: false, checks }, sessions)
  let tree: PlanTree | undefined
  let kept = false
  let completed = false
  try {
    const driver = {
      query: gate.query,
      llm: options.llm,
      predicates: options.predicates,
      checks: options.checks,
      maxSteps: resolveBudget(options.maxSteps, {}, fallback),
      budget: { told: options.maxSteps, fallback },
      fsync,
      fresh: options.fresh ?? false,
      signal: options.signal,
      agent: options.agent === undefined ? undefined : { name: options.agent, leaseMs: options.leaseMs ?? LEASE_MS },
    }
    tree = await PlanTree.open(dir, session, { lock, session: { fsync, checks }, driver })
    const step = await call(tree)
    kept = true
    completed = step.kind === 'completed'
    return step
  } finally {
    await tree?.close()
    await session.close()
    // Only after a call that went through: one that threw may have left the notes half known.
    if (kept) sessions.keep(session)
    // What a finished run no longer needs (journals, locks of runners gone) is removed under the lock, its sessions closed.
    if (completed) await tidyFinishedRun(dir, { fsync })
  }
}

/**
 * The options of a stepping call as this package's own surfaces make it (not
 * exported by the package): an MCP server or a queue worker with its own
 * default budget for a run that records none.
 */
export interface StepCallOptions extends StepOptions {
  /** The budget of a run that records none, instead of 50 (`vaultplan mcp --max-steps`). */
  fallbackMaxSteps?: number | undefined
}

/** The sessions of the vaults this process stepped lately: a call reads only what changed since the last one. */
const sessions = new SessionCache<VaultSession>()

function checkStepOptions(vault: string, options: StepOptions): void {
  if (typeof vault !== 'string' || vault === '') throw new TypeError(`Expected \`vault\` to be a folder path, got \`${String(vault)}\``)
  if (!options || typeof options !== 'object') throw new TypeError(`Expected \`options\` to be an object, got \`${String(options)}\``)
  const { maxSteps, query } = options
  if (maxSteps !== undefined && !(Number.isInteger(maxSteps) && maxSteps >= 1))
    throw new TypeError(`Expected \`maxSteps\` to be an integer from 1 up, got \`${maxSteps}\``)
  if (query !== undefined && typeof query !== 'string') throw new TypeError(`Expected \`query\` to be a string, got \`${typeof query}\``)
  checkDefinitions(options.checks)
  const { agent, leaseMs } = options
  if (agent !== undefined && (typeof agent !== 'string' || agent.trim() === ''))
    throw new TypeError(`Expected \`agent\` to be a name, got \`${String(agent)}\``)
  // A lease's end is a date: bounded as every duration is, so it is one a `Date` holds.
  if (leaseMs !== undefined && !(Number.isInteger(leaseMs) && leaseMs >= 1 && leaseMs <= MAX_DURATION_MS))
    throw new TypeError(`Expected \`leaseMs\` to be milliseconds from 1 up to ${MAX_DURATION_MS} (a year), got \`${leaseMs}\``)
}
