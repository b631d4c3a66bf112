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
    if (name.toLowerCase().replace(/\d/g, '') === wanted.replace(/\d/g, '')) continue
    const edits = editDistance(wanted, name.toLowerCase(), limit)
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

/** The optimal string alignment distance of `a` and `b`, or `limit + 1` once it is sure to pass `limit`. */
function editDistance(a: string, b: string, limit: number): number {
  let before = new Array<number>(b.length + 1)
  let previous = Array.from({ length: b.length + 1 }, (_, j) => j)
  let current = new Array<number>(b.length + 1)
  for (let i = 1; i <= a.length; i++) {
    current[0] = i
    let best = i
    for (let j = 1; j <= b.length; j++) {
      const change = a[i - 1] === b[j - 1] ? 0 : 1
      let cost = Math.min(previous[j]! + 1, current[j - 1]! + 1, previous[j - 1]! + change)
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) cost = Math.min(cost, before[j - 2]! + 1)
      current[j] = cost
      if (cost < best) best = cost
    }
    if (best > limit) return limit + 1
    const spare = before
    before = previous
    previous = current
    current = spare
  }
  return previous[b.length]!
}
