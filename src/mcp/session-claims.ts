import type { Step } from '../run/entry/stepping.js'
import { releaseClaims } from '../run/entry/release-claims.js'
import { writingIn } from './own-writes.js'

/**
 * Which session was handed each claimed step last, by vault and key: over
 * HTTP every session has its own server, and sessions that share one agent
 * name (`--agent`) hand each other the same claim. A session that ends lets
 * go only of the claims no later session was handed.
 */
const lastHanded = new Map<string, SessionClaims>()

/**
 * The claims one MCP session was handed (a `work` step of plan_next,
 * plan_finish, plan_defer, plan_block), by vault and agent, so that the
 * session's end (the client closes, stdin ends, SIGTERM) releases them and
 * the next session takes the step at once. A session killed outright
 * releases nothing: its claims wait for their lease.
 */
export class SessionClaims {
  private readonly held = new Map<string, { path: string; agent: string; keys: Set<string> }>()

  /** Notes that `step` was handed to `agent` in the vault at `path` (a real path), when it is a claimed work step. */
  took(path: string, agent: string | undefined, step: Step): void {
    if (step.kind !== 'work' || agent === undefined) return
    const at = `${path}\n${agent}`
    const entry = this.held.get(at) ?? { path, agent, keys: new Set<string>() }
    entry.keys.add(step.key)
    this.held.set(at, entry)
    lastHanded.set(`${path}\n${step.key}`, this)
  }

  /**
   * Releases every claim this session was handed last that is still live
   * (`releaseClaims`); one that cannot be released now (a runner in another
   * process holds the vault, the vault is gone) waits for its lease.
   */
  async release(): Promise<void> {
    const entries = [...this.held.values()]
    this.held.clear()
    for (const { path, agent, keys } of entries) {
      const mine = [...keys].filter((key) => lastHanded.get(`${path}\n${key}`) === this)
      for (const key of mine) lastHanded.delete(`${path}\n${key}`)
      if (mine.length === 0) continue
      // The server's own write: a subscriber is told so.
      await writingIn(path, () => releaseClaims(path, agent, { keys: new Set(mine) })).catch(() => undefined)
    }
  }
}
