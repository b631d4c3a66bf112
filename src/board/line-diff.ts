/** One line of a difference: kept, added by the later text, or removed from the earlier one. */
export interface DiffLine {
  kind: 'same' | 'added' | 'removed'
  text: string
}

/**
 * The most lines compared line by line (earlier times later, after the
 * common start and end are set aside): a note is tens of lines, and past
 * this the difference is shown as all of one removed and all of the other
 * added rather than holding the page up.
 */
const MAX_CELLS = 4_000_000

/**
 * The difference between two texts, line by line: a longest common
 * subsequence of their lines is kept, the rest of `before` is removed and
 * the rest of `after` added, each removal before the addition that takes
 * its place.
 */
export function lineDiff(before: string, after: string): DiffLine[] {
  const a = linesOf(before)
  const b = linesOf(after)
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let endA = a.length
  let endB = b.length
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--
    endB--
  }
  const head = a.slice(0, start).map((text): DiffLine => ({ kind: 'same', text }))
  const tail = a.slice(endA).map((text): DiffLine => ({ kind: 'same', text }))
  return [...head, ...middle(a.slice(start, endA), b.slice(start, endB)), ...tail]
}

/** The differing middle of two texts, from a table of longest common subsequence lengths. */
function middle(a: string[], b: string[]): DiffLine[] {
  const removed = (text: string): DiffLine => ({ kind: 'removed', text })
  const added = (text: string): DiffLine => ({ kind: 'added', text })
  if (a.length === 0 || b.length === 0 || a.length * b.length > MAX_CELLS) return [...a.map(removed), ...b.map(added)]
  const width = b.length + 1
  // lengths[i * width + j]: the longest common subsequence of a[i..] and b[j..].
  const lengths = new Uint32Array((a.length + 1) * width)
  for (let i = a.length - 1; i >= 0; i--) {
    for (let j = b.length - 1; j >= 0; j--) {
      lengths[i * width + j] = a[i] === b[j] ? lengths[(i + 1) * width + j + 1]! + 1 : Math.max(lengths[(i + 1) * width + j]!, lengths[i * width + j + 1]!)
    }
  }
  const lines: DiffLine[] = []
  let i = 0
  let j = 0
  while (i < a.length && j < b.length) {
    if (a[i] === b[j]) {
      lines.push({ kind: 'same', text: a[i]! })
      i++
      j++
    } else if (lengths[(i + 1) * width + j]! >= lengths[i * width + j + 1]!) lines.push(removed(a[i++]!))
    else lines.push(added(b[j++]!))
  }
  return [...lines, ...a.slice(i).map(removed), ...b.slice(j).map(added)]
}

/** A text's lines, without the empty one after a final line break. */
function linesOf(text: string): string[] {
  if (text === '') return []
  const lines = text.split(/\r?\n/)
  if (lines.at(-1) === '') lines.pop()
  return lines
}
