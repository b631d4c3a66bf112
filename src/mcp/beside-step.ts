import { observeRun } from '../run/read/observe-run.js'
import type { WorkItem } from '../run/core/claims.js'
import type { Step } from '../run/entry/stepping.js'

/*
 * What a step result says beside the step: the other items ready now, and
 * for a `busy` step when to call again and whose claim is the client's own.
 */

/**
 * A `busy` step's word for a claim an earlier session of the same client
 * holds (`<client>-<session id>`, the agent a session works as unless told):
 * the `agent` that takes it back now. Empty when no claim is one.
 */
export function earlierSession(claims: readonly WorkItem[], agent: string | undefined): string {
  const client = (name: string) => /^(.+)-[0-9a-f]{6}$/.exec(name)?.[1]
  const own = agent === undefined ? undefined : client(agent)
  const earlier = claims.find((item) => item.claim && item.claim.agent !== agent && own !== undefined && client(item.claim.agent) === own)
  if (!earlier?.claim) return ''
  return ` \`${earlier.claim.agent}\` holding \`${earlier.node}\` looks like an earlier session of this client: if it was yours, call plan_next with \`agent: "${earlier.claim.agent}"\` to take it back now.`
}

/**
 * The other items ready beside a claimed step, by their paths from the top
 * vault: the frontier (`observeRun`) without the step itself and without
 * what other agents hold live, so an agent sees the frontier in the call
 * that gives it its step.
 */
export async function readyBeside(path: string, step: Step, agent: string | undefined): Promise<string[]> {
  if (step.kind !== 'work') return []
  const own = step.plan === undefined ? step.node.id : `${step.plan}/${step.node.id}`
  const now = Date.now()
  const { frontier } = await observeRun(path, { hops: 0 })
  return frontier
    .filter((item) => item.kind === 'work' && item.node !== own && !(item.claim && item.claim.agent !== agent && Date.parse(item.claim.until) > now))
    .map((item) => item.node)
}

/** Whole seconds from `now` until the earliest lease of `claims` ends (at least 1); none when no claim has a lease. */
export function retryAfterOf(claims: readonly WorkItem[], now: number): number | undefined {
  const ends = claims.flatMap((item) => (item.claim?.until ? [Date.parse(item.claim.until)] : [])).filter((end) => Number.isFinite(end))
  if (ends.length === 0) return undefined
  return Math.max(1, Math.ceil((Math.min(...ends) - now) / 1000))
}
