import { RunStateError, type PendingStep } from '../../core/errors.js'
import type { AgentClaim, WorkItem } from '../../core/types.js'
export type { AgentClaim, WorkItem } from '../../core/types.js'
import type { ClaimRecord, TraceRecord } from '../../store/trace-records.js'
import type { PlanNode } from '../../core/types.js'
import { visitKey } from './run-core.js'

/*
 * Many hands on one plan (docs/stepping.md, several agents), decided purely: who holds a visit's
 * claim and until when, when an agent's lease is renewed, and which visits a
 * stepping call takes or passes by. The driver asks; nothing here writes.
 */

/**
 * Whether a stepping call takes a visit to work it met (`take`) or passes it
 * by (`skip`) for another branch: who holds it, and since when, decides.
 */
export type ClaimGate = (at: { plan: string; key: string; node: PlanNode; visit: number; claimed: boolean; record: ClaimRecord | undefined }) => 'take' | 'skip'

/** The agent's claim a visit's latest record holds, if an agent claimed it. */
export function claimOf(runId: string, record: ClaimRecord | undefined): AgentClaim | undefined {
  if (record?.kind !== 'claim' || record.agent === undefined || record.until === undefined) return undefined
  return { agent: record.agent, key: visitKey(runId, record.node, record.visit), until: record.until }
}

/** Whether another agent than `agent` holds a live claim on the visit at `now`. */
export function heldByOther(record: ClaimRecord | undefined, agent: string | undefined, now: number): boolean {
  if (record?.kind !== 'claim' || record.agent === undefined || record.agent === agent) return false
  return record.until === undefined || Date.parse(record.until) > now
}

/**
 * Whether an agent handed a visit must record its claim: a visit it does not
 * hold yet (new, released, another's expired one), or its own with less than
 * half its lease left.
 */
export function leaseDue(record: ClaimRecord | undefined, agent: { name: string; leaseMs: number }, now: number): boolean {
  if (record?.kind !== 'claim' || record.agent !== agent.name || record.until === undefined) return true
  return Date.parse(record.until) - now < agent.leaseMs / 2
}

/**
 * Which visits a pass of a stepping call takes:
 * - `own`: only a visit the agent holds (a call returns its pending claim first);
 * - `complete`: only the visit of `key` (a completion, whoever holds it);
 * - `fresh`: a visit nobody else holds live, deferred ones passed by;
 * - `any`: a visit nobody else holds live, deferred ones too;
 * - `within`: as `any`, only inside the subplan folder `plan` (a step just decomposed: its claim moves to the subplan's start).
 * Without an agent, no visit is anyone else's: a call takes the first claim, whoever holds it.
 */
export type ClaimPass = { kind: 'own' } | { kind: 'complete'; key: string } | { kind: 'fresh' } | { kind: 'any' } | { kind: 'within'; plan: string }

/** The gate of a pass (see `ClaimPass`), for `agent` at the clock `now()`. */
export function claimGate(pass: () => ClaimPass, agent: string | undefined, now: () => number): ClaimGate {
  return ({ plan, key, claimed, record }) => {
    const current = pass()
    switch (current.kind) {
      case 'within':
        if (plan !== current.plan && !plan.startsWith(`${current.plan}/`)) return 'skip'
        return claimed && agent !== undefined && heldByOther(record, agent, now()) ? 'skip' : 'take'
      case 'own':
        return claimed && record?.kind === 'claim' && record.agent === agent ? 'take' : 'skip'
      case 'complete':
        if (!claimed || key !== current.key) return 'skip'
        // Only its own agent moves a live claim: another's completion (or defer, or block) is refused before anything is written.
        checkOwnClaim(key, record, agent, now())
        return 'take'
      case 'fresh':
      case 'any':
        if (claimed && agent !== undefined && heldByOther(record, agent, now())) return 'skip'
        return current.kind === 'fresh' && !claimed && record?.kind === 'defer' ? 'skip' : 'take'
    }
  }
}

/**
 * Refuses to complete, defer or block a visit another agent's live claim
 * holds (only its own agent moves it); nothing is written.
 *
 * @throws {@link RunStateError} `claimed` naming the claim
 */
export function checkOwnClaim(key: string, record: ClaimRecord | undefined, agent: string | undefined, now: number): void {
  if (agent === undefined || !record || !heldByOther(record, agent, now)) return
  const claim = { agent: record.agent!, key, until: record.until ?? '' }
  throw new RunStateError(
    'claimed',
    `The step \`${record.node}\` (key \`${claim.key}\`) is claimed by the agent \`${claim.agent}\` until ${claim.until}; only that agent completes, defers or blocks it. Nothing was written.`,
    { claim },
  )
}

/** `busy` as an error (`runPlan`, which works what agents do not hold): the claims that keep every ready visit. */
export function busyError(claims: WorkItem[]): RunStateError<'busy'> {
  const held = claims.map((item) => `\`${item.node}\`${item.claim ? ` (${item.claim.agent}, until ${item.claim.until})` : ''}`).join(', ')
  return new RunStateError('busy', `Agents hold every note ready now: ${held}. Run again once they finished, or when a lease ends.`, { claims })
}

/** A claimed visit a stepping call passed by, with the agent holding it: the pending step a stale key's error names. */
export type PassedVisit = PendingStep & { agent: string | undefined }

/** The gate of a stepping call's passes (see `claimGate`), remembering in `passed` each claimed visit it passed by. */
export function passingGate(pass: () => ClaimPass, agent: string | undefined, passed: PassedVisit[]): ClaimGate {
  const gate = claimGate(pass, agent, Date.now)
  return (at) => {
    const verdict = gate(at)
    if (verdict === 'skip' && at.claimed)
      passed.push({ key: at.key, node: at.node.id, visit: at.visit, step: at.record?.step ?? 0, ...(at.plan && { plan: at.plan }), agent: at.record?.agent })
    return verdict
  }
}

/**
 * What a stepping call answers for a visit its gate passed by: `busy`,
 * naming the visit with its agent's claim when it is claimed (a completion
 * looks for its key among them), nothing for one not claimed yet.
 */
export function passedBy(
  runId: string,
  at: { node: string; visit: number; step: number; claimed: boolean },
  record: ClaimRecord | undefined,
): { kind: 'busy'; runId: string; claims: WorkItem[] } {
  if (!at.claimed) return { kind: 'busy', runId, claims: [] }
  const claim = claimOf(runId, record)
  return { kind: 'busy', runId, claims: [{ kind: 'work', node: at.node, visit: at.visit, step: record?.step ?? at.step, ...(claim && { claim }) }] }
}

/**
 * The claims of `agent` still live at `now` in one vault's trace, on visits
 * not worked yet (no hop or wait recorded for them): what a session that
 * ended lets go of. Each is the visit's latest claim record.
 */
export function liveClaimsOf(trace: { claims?: readonly ClaimRecord[]; records: readonly TraceRecord[] }, agent: string, now: number): ClaimRecord[] {
  const latest = new Map<string, ClaimRecord>()
  for (const claim of trace.claims ?? []) latest.set(`${claim.node}\n${claim.visit}`, claim)
  const worked = new Set(trace.records.filter((record) => record.kind !== 'stop').map((record) => `${record.node}\n${record.visit}`))
  return [...latest.entries()].flatMap(([visit, claim]) =>
    claim.kind === 'claim' && claim.agent === agent && claim.until !== undefined && Date.parse(claim.until) > now && !worked.has(visit) ? [claim] : [],
  )
}

/**
 * A claim's release as the trace records it: the same claim (agent, step,
 * budget) with its lease ending `now`, so any agent takes the visit at once,
 * with the same key, and nothing is counted again.
 */
export function releasedClaim(claim: ClaimRecord, now: number): ClaimRecord {
  const at = new Date(now).toISOString()
  return { ...claim, at, until: at }
}

/**
 * The claim record a visit's claim writes, if any (pure): a visit numbered
 * now (a new one, its step the run's next); an agent's claim anew, taken
 * over or renewed once half its lease is gone; or, with `rebudget`, the
 * budget the call gave (differing from the recorded one), kept by whoever
 * holds the claim. `undefined`: the claim on disk stands as it is.
 */
export function claimRecordOf(
  at: { node: string; visit: number; step: number },
  before: ClaimRecord | undefined,
  call: { numbered: boolean; agent: { name: string; leaseMs: number } | undefined; rebudget: boolean; maxSteps: number; now: number },
): ClaimRecord | undefined {
  const renewed = call.agent !== undefined && leaseDue(before, call.agent, call.now)
  if (!call.numbered && !renewed && !call.rebudget) return undefined
  const claim: ClaimRecord = { kind: 'claim', step: at.step, node: at.node, visit: at.visit, at: new Date(call.now).toISOString(), maxSteps: call.maxSteps }
  if (renewed) Object.assign(claim, { agent: call.agent!.name, until: new Date(call.now + call.agent!.leaseMs).toISOString() })
  else if (before?.kind === 'claim' && before.agent !== undefined) Object.assign(claim, { agent: before.agent, until: before.until })
  return claim
}
