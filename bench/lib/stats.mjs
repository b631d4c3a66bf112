/**
 * Repetition and summary helpers. Contenders that are compared are measured
 * in turns (A, B, A, B, ...), so load from other processes on the machine
 * hits both alike.
 */

/** Median, min and max of a list of numbers. */
export function summarize(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  const median = sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  return { median, min: sorted[0], max: sorted.at(-1), runs: sorted.length, values }
}

/**
 * Measures several contenders in turns: `warmup` rounds that are thrown
 * away, then `reps` rounds. Each contender is `{ name, run }`, where
 * `run(warm)` resolves to the figure of one repetition: a number, a list
 * of numbers when one repetition yields several samples, or `{ value, cpu }`
 * with the CPU time that went with it; `warm` is true in a warm-up round,
 * which may be shorter.
 *
 * @returns `{ [name]: summary }`, each with a `cpu` summary when the runs gave one
 */
export async function measureInTurns(contenders, { warmup, reps, log }) {
  const figures = Object.fromEntries(contenders.map((contender) => [contender.name, []]))
  const cpu = Object.fromEntries(contenders.map((contender) => [contender.name, []]))
  for (let round = 0; round < warmup + reps; round++) {
    for (const contender of contenders) {
      const figure = await contender.run(round < warmup)
      if (round < warmup) continue
      if (typeof figure === 'object' && !Array.isArray(figure)) {
        figures[contender.name].push(figure.value)
        cpu[contender.name].push(figure.cpu)
      } else figures[contender.name].push(...[figure].flat())
    }
    log?.(`  round ${round + 1}/${warmup + reps}${round < warmup ? ' (warm-up)' : ''}`)
  }
  return Object.fromEntries(
    Object.entries(figures).map(([name, values]) => [name, cpu[name].length > 0 ? { ...summarize(values), cpu: summarize(cpu[name]) } : summarize(values)]),
  )
}

/** CPU time of the whole process (every thread: user + system) in milliseconds. */
export function cpuNow() {
  const { user, system } = process.cpuUsage()
  return (user + system) / 1000
}

/** Milliseconds since an arbitrary origin, sub-millisecond resolution. */
export function now() {
  return performance.now()
}
