import type { PlanNode } from '../../core/types.js'
import { isGenerate } from '../../vault/subplan-folders.js'
import { waitingReason } from './messages.js'
import type { ClaimPass } from './claims.js'
import type { Step } from './run-options.js'

/*
 * The rules of a run over a tree of vaults (pure): which visits a stepping
 * call takes, in which passes; whether a note's work ends the whole run;
 * which note a subplan terminal's choice decides; and what a note running
 * subplans answers once its branches went as far as they go (the join).
 * The tree driver (drive/plan-tree.ts) walks the vaults and asks these.
 */

/** A note running subplans that the walk is inside, outermost first: its note, its folder from the top vault, whether it runs one folder. */
export interface Within {
  node: PlanNode
  plan: string
  lone: boolean
}

/**
 * The passes of a stepping call, in order, until one hands out a visit: an
 * agent's own claim first, then a visit nobody else holds (deferred ones
 * passed by), then deferred ones too. Without an agent no visit is anyone
 * else's, so there is no own pass.
 */
export function claimPasses(agent: string | undefined): Exclude<ClaimPass['kind'], 'complete' | 'within'>[] {
  return agent === undefined ? ['fresh', 'any'] : ['own', 'fresh', 'any']
}

/**
 * The passes when a completion ends on `busy` in the branch it was in: a
 * visit nobody else holds, then deferred ones (the caller's own claim was
 * the one it completed).
 */
export function passesAfterCompletion(): Exclude<ClaimPass['kind'], 'complete' | 'own' | 'within'>[] {
  return ['fresh', 'any']
}

/** Whether working `node` (of the innermost subplan walked) ends the whole run: a last note of lone subplans whose notes are last notes too, up to the top. */
export function endsRun(node: PlanNode, within: readonly Within[]): boolean {
  return node.edges.length === 0 && within.every((each) => each.lone && each.node.edges.length === 0)
}

/**
 * The note whose choices a terminal of the innermost subplan walked offers:
 * the note that runs it, or, while that note is itself the terminal of a
 * lone subplan, the note above.
 */
export function offeringNote(within: readonly Within[]): Within | undefined {
  let level = within.length - 1
  if (level < 0) return undefined
  while (within[level]!.lone && within[level]!.node.edges.length === 0 && level > 0 && within[level - 1]!.lone) level--
  return within[level]
}

/**
 * A branch's answer once it went as far as it goes: its step (none when its
 * run could not begin), the works it did, the highest step number it
 * recorded, and `refused`, the stop at its first visit when the budget kept
 * it from beginning.
 */
export interface BranchAnswer {
  step: Step | undefined
  works: number
  last: number
  refused?: Step
}

/** What a note running subplans answers once its branches went as far as they go. */
export type Join =
  /** A branch's step is the caller's (a visit to work, busy, stopped, waiting, a refusal's stop). */
  | { kind: 'step'; step: Step; from?: BranchAnswer }
  /** A branch whose run could not begin and nothing else to say: the planner call or first visit was refused. */
  | { kind: 'none' }
  /** Every branch completed: the note's output is theirs joined, with the works they did and their last step number. */
  | { kind: 'joined'; output: string; works: number; last: number }

/**
 * The join of a note's branches (in the listed order), as the tree answers
 * it: the first visit to work; else `busy` when other agents hold what is
 * ready in some branch (another pass looks further); else the first stop;
 * else every wait, all at once; else a branch the budget kept from beginning
 * stops the run at its first visit; else, when every branch completed, the
 * outputs joined: a lone branch's as it is, several under a heading naming
 * each folder.
 */
export function joinBranches(branches: readonly BranchAnswer[], folders: readonly { written: string }[], runId: string): Join {
  const work = branches.find((each) => each.step?.kind === 'work')
  if (work) return { kind: 'step', step: work.step!, from: work }
  const busy = branches.flatMap((each) => (each.step?.kind === 'busy' ? each.step.claims : []))
  if (branches.some((each) => each.step?.kind === 'busy')) return { kind: 'step', step: { kind: 'busy', runId, claims: busy } }
  const stopped = branches.find((each) => each.step?.kind === 'stopped')
  if (stopped) return { kind: 'step', step: stopped.step!, from: stopped }
  const waiting = branches.flatMap((each) => (each.step?.kind === 'waiting' ? each.step.waiting : []))
  if (waiting.length > 0) return { kind: 'step', step: { kind: 'waiting', runId, waiting, reason: waitingReason(waiting) } }
  const refused = branches.find((each) => each.refused)?.refused
  if (refused) return { kind: 'step', step: refused }
  if (branches.some((each) => each.step === undefined)) return { kind: 'none' }
  const outputs = branches.map((each) => (each.step?.kind === 'completed' ? each.step.output : ''))
  const output = folders.length === 1 ? outputs[0]! : folders.map(({ written }, index) => `## ${written}\n\n${outputs[index]!.trim()}\n`).join('\n')
  return { kind: 'joined', output, works: branches.reduce((sum, each) => sum + each.works, 0), last: Math.max(...branches.map((each) => each.last)) }
}

/**
 * Whether a visit of a branch offers the choices of the note running it
 * (then a choice given with the visit decides that note): the terminal of a
 * lone subplan, or a visit a deeper lone subplan relayed so (`relayed`).
 */
export function offersParentChoices(lone: boolean, relayed: boolean | undefined, node: PlanNode): boolean {
  return lone && (relayed ?? node.edges.length === 0)
}

/**
 * Whether a note's planner call is due (`plan: generate`): its folder holds
 * no notes yet (`written`: a decomposition wrote it earlier, or a person
 * did), so the planning role writes its subplan. A written folder is used
 * as it is, with no planner call.
 */
export function plannerCallDue(node: Pick<PlanNode, 'plan'>, written: boolean): boolean {
  return isGenerate(node.plan) && !written
}
