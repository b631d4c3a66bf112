/**
 * Repetition and summary helpers. Contenders that are compared are measured
 * in rounds (A, B, C, A, B, C, ...) and divided round by round, so load from
 * other processes on the machine hits both sides of a ratio alike.
 */

/** Median, min and max of a list of numbers. */
export function summarize(values) {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  const median = sorted.length % 2 === 1 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
  return { median, min: sorted[0], max: sorted.at(-1), runs: sorted.length, values }
}

/** Groups of contenders measured in the same rounds (see {@link measureInTurns}). */
let groups = 0

/**
 * Measures several contenders in rounds: `warmup` rounds that are thrown
 * away, then `reps` rounds, each contender once a round, one right after
 * the other (A B C, then C B A with `alternate`, so no contender always
 * runs first or last). Each contender is `{ name, run }`, where `run(warm)`
 * resolves to the figure of one repetition: a number, a list of numbers
 * when one repetition yields several samples, or `{ value, cpu }` with the
 * CPU time that went with it; `warm` is true in a warm-up round, which may
 * be shorter.
 *
 * Every summary keeps `rounds` (its figure in each round: the median of a
 * repetition's samples) and `group` (the same for every contender of this
 * call), so {@link ratioInRounds} can divide two contenders round by round.
 *
 * @returns `{ [name]: summary }`, each with a `cpu` summary when the runs gave one
 */
export async function measureInTurns(contenders, { warmup, reps, log, alternate = false }) {
  const group = ++groups
  const figures = Object.fromEntries(contenders.map((contender) => [contender.name, []]))
  const rounds = Object.fromEntries(contenders.map((contender) => [contender.name, []]))
  const cpu = Object.fromEntries(contenders.map((contender) => [contender.name, []]))
  for (let round = 0; round < warmup + reps; round++) {
    const order = alternate && round % 2 === 1 ? [...contenders].reverse() : contenders
    for (const contender of order) {
      const figure = await contender.run(round < warmup)
      if (round < warmup) continue
      if (typeof figure === 'object' && !Array.isArray(figure)) {
        figures[contender.name].push(figure.value)
        rounds[contender.name].push({ value: figure.value, cpu: figure.cpu })
        cpu[contender.name].push(figure.cpu)
      } else {
        figures[contender.name].push(...[figure].flat())
        rounds[contender.name].push({ value: summarize([figure].flat()).median })
      }
    }
    log?.(`  round ${round + 1}/${warmup + reps}${round < warmup ? ' (warm-up)' : ''}`)
  }
  return Object.fromEntries(
    Object.entries(figures).map(([name, values]) => {
      const summary = cpu[name].length > 0 ? { ...summarize(values), cpu: summarize(cpu[name]) } : summarize(values)
      return [name, { ...summary, group, rounds: rounds[name] }]
    }),
  )
}

/**
 * The ratio `a / b` of two figures: measured in the same rounds (one
 * {@link measureInTurns} call), the median of the per-round ratios, with
 * their range and count, so a machine that slows down for a few seconds
 * moves both sides of a round alike; otherwise the ratio of the medians.
 *
 * @returns `{ value, min, max, rounds, cpu }` (`rounds`: 0 for a ratio of medians; `cpu`: the same for CPU time, when both have it)
 */
export function ratioInRounds(a, b) {
  if (a?.group !== undefined && a.group === b?.group && a.rounds.length === b.rounds.length && a.rounds.length > 0) {
    const each = a.rounds.map((round, index) => round.value / b.rounds[index].value)
    const cpus = a.rounds.every((round, index) => round.cpu !== undefined && b.rounds[index].cpu !== undefined)
      ? summarize(a.rounds.map((round, index) => round.cpu / b.rounds[index].cpu)).median
      : undefined
    const { median, min, max } = summarize(each)
    return { value: median, min, max, rounds: each.length, cpu: cpus }
  }
  return { value: a?.median / b?.median, min: undefined, max: undefined, rounds: 0, cpu: a?.cpu?.median / b?.cpu?.median }
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
