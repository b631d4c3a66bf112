import { join, resolve } from 'node:path'
import { subplanTree } from '../../plan/subplan-tree.js'
import { TraceAppender } from '../../store/trace.js'
import { assertFolder } from '../../vault/fs-atomic.js'
import { withVaultLock } from '../../vault/lock.js'
import { liveClaimsOf, releasedClaim } from '../core/claims.js'
import { visitKey } from '../core/run-core.js'
import { readRecords } from '../read/observe-run.js'

/** Options of {@link releaseClaims}. */
export interface ReleaseClaimsOptions {
  /** Only the claims of these keys (the steps one session was handed); every live claim of the agent when left out. */
  keys?: ReadonlySet<string>
}

/**
 * Lets go of the live claims `agent` holds in the run of `vault`, its
 * subplans included (an MCP session that ended): each is recorded as the
 * same claim with its lease ending now, so the next agent that asks takes
 * the visit at once, with the same key, and no visit is counted again. A
 * claim whose lease ended already, or whose visit was worked, is left
 * alone. Holds the vault's lock while it writes; like every claim, a
 * release is not flushed (lost to a power cut, the claim waits for its lease).
 *
 * @returns the keys of the claims released
 * @throws {@link RunStateError} `vault-locked` while a runner in another process holds the vault
 */
export async function releaseClaims(vault: string, agent: string, options: ReleaseClaimsOptions = {}): Promise<string[]> {
  if (typeof agent !== 'string' || agent.trim() === '') throw new TypeError(`Expected \`agent\` to be a name, got \`${String(agent)}\``)
  const dir = resolve(vault)
  await assertFolder(dir)
  return withVaultLock(dir, async () => {
    const records = await readRecords(dir)
    const now = Date.now()
    const released: string[] = []
    for (const { folder, vault: plan } of subplanTree(records)) {
      const trace = plan.trace
      if (!trace) continue
      const claims = liveClaimsOf(trace, agent, now).filter((claim) => !options.keys || options.keys.has(visitKey(trace.header.run, claim.node, claim.visit)))
      if (claims.length === 0) continue
      const appender = await TraceAppender.open(folder === '' ? dir : join(dir, folder), {})
      try {
        for (const claim of claims) appender.appendClaim(releasedClaim(claim, now))
      } finally {
        await appender.close()
      }
      released.push(...claims.map((claim) => visitKey(trace.header.run, claim.node, claim.visit)))
    }
    return released
  })
}
