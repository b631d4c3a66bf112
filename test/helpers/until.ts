/**
 * Waits until `check` holds, polling every 20 ms; fails naming `what` after `timeoutMs` (a bound for a
 * stuck test on a loaded machine, not a timing under test: a test waits for a condition, never a time).
 */
export async function until(check: () => boolean | Promise<boolean>, what: string, timeoutMs = 10_000): Promise<void> {
  const give = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > give) throw new Error(`timed out waiting for ${what}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}
