/**
 * The names a typo of `word` may have meant: those a few edits away
 * (inserting, deleting or changing a character, or swapping two neighbours;
 * case ignored), the closest first, in the order given among equals. One
 * edit for a word of up to five characters, two from six on, or at most
 * `options.edits`. Names differing only in digits (`2024-05-01`, `step-2`)
 * are other numbered names, not typos. Empty when `word` is one of the
 * names, or none is close.
 */
export function closestNames(word: string, names: Iterable<string>, options: { edits?: number } = {}): string[] {
  const wanted = word.toLowerCase()
  const limit = Math.min(options.edits ?? Infinity, wanted.length <= 5 ? 1 : 2)
  const found: { name: string; edits: number }[] = []
  for (const name of names) {
    if (name === word) return []
    if (Math.abs(name.length - wanted.length) > limit) continue
    // `2024-05-02` for `2024-05-01`, `step-3` for `step-2`: another numbered name, not a typo of it.
    const lower = name.toLowerCase()
    if (lower !== wanted && lower.replace(/\d/g, '') === wanted.replace(/\d/g, '')) continue
    const edits = editDistance(wanted, lower, limit)
    // A name that differs only in case is a typo too (`Type:`), one edit away.
    if (edits <= limit) found.push({ name, edits: Math.max(edits, 1) })
  }
  return found.sort((a, b) => a.edits - b.edits).map(({ name }) => name)
}

/** `` did you mean `publish`? `` (or `` `a` or `b` ``, up to three): the end of a message naming what a typo may have meant; `''` for none. */
export function didYouMean(names: readonly string[], quote: (name: string) => string = (name) => `\`${name}\``): string {
  if (names.length === 0) return ''
  const shown = names.slice(0, 3).map(quote)
  return `did you mean ${shown.length === 1 ? shown[0] : `${shown.slice(0, -1).join(', ')} or ${shown.at(-1)}`}?`
}

/**
 * The optimal string alignment distance of `a` and `b`, or `limit + 1` once
 * it is sure to pass `limit`. Only the cells within `limit` of the diagonal
 * are worked out, so two long names cost their length, not its square.
 */
function editDistance(a: string, b: string, limit: number): number {
  const far = limit + 1
  const row = () => new Array<number>(b.length + 1).fill(far)
  let before = row()
  let previous = row()
  let current = row()
  for (let j = 0; j <= Math.min(b.length, limit); j++) previous[j] = j
  for (let i = 1; i <= a.length; i++) {
    const from = Math.max(1, i - limit)
    const to = Math.min(b.length, i + limit)
    // The cell left of the band (the rows take turns in three arrays: it holds an older row's value).
    current[from - 1] = from === 1 && i <= limit ? i : far
    let best = from === 1 ? current[0]! : far
    for (let j = from; j <= to; j++) {
      const change = a[i - 1] === b[j - 1] ? 0 : 1
      let cost = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + change)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) cost = Math.min(cost, before[j - 2]! + 1)
      current[j] = Math.min(cost, far)
      if (cost < best) best = cost
    }
    if (best > limit) return far
    const spare = before
    before = previous
    previous = current
    current = spare
  }
  return previous[b.length]!
}
