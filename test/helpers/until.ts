/**
 * Waits until `check` holds, polling every 20 ms; fails naming `what` after `timeoutMs` (a bound for a
 * stuck test on a loaded machine, not a timing under test: a test waits for a condition, never a time).
 * `what` may be a function, asked once the wait has failed, to say what was seen last.
 */
export async function until(check: () => boolean | Promise<boolean>, what: string | (() => string), timeoutMs = 10_000): Promise<void> {
  const give = Date.now() + timeoutMs
  while (!(await check())) {
    if (Date.now() > give) throw new Error(`timed out waiting for ${typeof what === 'string' ? what : what()}`)
    await new Promise((resolve) => setTimeout(resolve, 20))
  }
}

/**
 * Waits until the clock is past `moment` (an ISO time): a deadline or a lease
 * that the behaviour under test lets pass. The code under test reads the same
 * clock, so once this returns the moment has passed for it too.
 */
export async function clockPast(moment: string): Promise<void> {
  const at = Date.parse(moment)
  if (Number.isNaN(at)) throw new TypeError(`Expected \`moment\` to be an ISO time, got \`${moment}\``)
  await until(() => Date.now() > at, `the clock to pass ${moment}`, Math.max(0, at - Date.now()) + 10_000)
}
