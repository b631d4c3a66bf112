import { accessSync, constants } from 'node:fs'
import { isCi } from './queue-notice.js'

/**
 * The board's browser tests (test/board-browser*.test.ts) drive Chromium from
 * Debian's packages through playwright-core; no browser is ever downloaded.
 * Without it they are not collected (vitest.config.ts), and this says so at
 * the end of the run, as the queue tests do without PostgreSQL.
 */

/** Where the tests look for Chromium: `VAULTPLAN_CHROMIUM`, else Debian's `/usr/bin/chromium`. */
export function chromiumPath(env: Record<string, string | undefined> = process.env): string {
  return env.VAULTPLAN_CHROMIUM || '/usr/bin/chromium'
}

/** Whether the Chromium the tests use is there to run. */
export function hasChromium(env: Record<string, string | undefined> = process.env): boolean {
  try {
    accessSync(chromiumPath(env), constants.X_OK)
    return true
  } catch {
    return false
  }
}

/** What a run without Chromium says after its summary; `undefined` when the browser tests ran. */
export function browserNotice(env: Record<string, string | undefined> = process.env, found = hasChromium(env)): string | undefined {
  if (found) return undefined
  return `NOTE: the board's browser tests (test/board-browser*.test.ts) did not run: no Chromium at ${chromiumPath(env)}. Install it (Debian: apt-get install chromium; .ci/run does this) or point VAULTPLAN_CHROMIUM at one.`
}

/** Throws under CI when the browser tests cannot run. */
export function requireBrowserUnderCi(env: Record<string, string | undefined> = process.env, found = hasChromium(env)): void {
  const notice = browserNotice(env, found)
  if (notice && isCi(env))
    throw new Error(`CI=true, and the browser tests cannot run: CI must test the board in a browser (.ci/run installs Chromium). ${notice}`)
}
