/*
 * The durations vaultplan takes (a `wait:`, a lease, a timeout), each
 * bounded where it is given, so that no date or timer reckoned from one
 * fails or fires at once at run time.
 */

/** Milliseconds per unit of a `wait:` duration. */
const DURATION_UNITS = { s: 1000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const

/**
 * The longest duration vaultplan takes: a `wait:` (of a note or a
 * proposal), a claim's lease. 365 days: a deadline further away is as good
 * as none, and every date reckoned from one (a deadline, a lease's end)
 * stays far inside what a `Date` holds.
 */
export const MAX_DURATION_MS = 365 * DURATION_UNITS.d

/**
 * The milliseconds a `wait:` duration (`45s`, `30m`, `4h`, `2d`) stands
 * for, or `undefined` when it is not one: none is 0 or longer than
 * {@link MAX_DURATION_MS}.
 */
export function durationMs(text: string): number | undefined {
  const match = /^\s*(\d{1,9})\s*([smhd])\s*$/.exec(text)
  if (!match) return undefined
  const ms = Number(match[1]) * DURATION_UNITS[match[2] as keyof typeof DURATION_UNITS]
  return ms > 0 && ms <= MAX_DURATION_MS ? ms : undefined
}

/** The longest delay a timer waits (Node's `setTimeout`: 2^31 - 1 ms, about 24.8 days); a longer one would fire at once. */
export const MAX_TIMER_MS = 2 ** 31 - 1

/**
 * Throws at once, naming the option, unless `value` is whole milliseconds
 * from 1 up to {@link MAX_TIMER_MS}: a timeout a timer can wait.
 *
 * @throws `TypeError` for any other value
 */
export function checkTimeoutMs(name: string, value: unknown): void {
  if (!(Number.isSafeInteger(value) && (value as number) >= 1 && (value as number) <= MAX_TIMER_MS))
    throw new TypeError(
      `Expected \`${name}\` to be milliseconds from 1 up to ${MAX_TIMER_MS} (about 24.8 days, the longest a timer waits), got \`${String(value)}\``,
    )
}
