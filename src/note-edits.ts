/**
 * Empties the task boxes (`- [x]` -> `- [ ]`) on the given 1-based lines of
 * a note, changing no other byte.
 */
export function clearTaskBoxes(text: string, lines: number[]): string {
  const wanted = new Set(lines)
  let line = 1
  let start = 0
  let result = ''
  while (start <= text.length) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    let content = text.slice(start, end)
    if (wanted.has(line)) content = content.replace(/^(\s*(?:[-*+]|\d+[.)])\s+\[)[xX](\])/, '$1 $2')
    result += content + (end < text.length ? '\n' : '')
    if (end >= text.length) break
    start = end + 1
    line++
  }
  return result
}
