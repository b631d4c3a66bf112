/**
 * Puts an empty task box on the list items whose markers sit at the given
 * 1-based lines of a note: a ticked box is emptied (`- [x]` -> `- [ ]`), an
 * item without a box gains one (`- approved` -> `- [ ] approved`), any other
 * box (Obsidian's `[-]`, `[/]` ...) is left as the person wrote it. No other
 * byte changes.
 */
export function emptyTaskBoxes(text: string, lines: number[]): string {
  const wanted = new Set(lines)
  let line = 1
  let start = 0
  let result = ''
  while (start <= text.length) {
    let end = text.indexOf('\n', start)
    if (end === -1) end = text.length
    let content = text.slice(start, end)
    if (wanted.has(line)) {
      const item = /^(\s*(?:[-*+]|\d+[.)])[ \t]+)(\[([^\]\n])\](?=[ \t]))?/.exec(content)
      if (item && item[2] === undefined) content = `${item[1]}[ ] ${content.slice(item[0].length)}`
      else if (item && /[xX]/.test(item[3]!)) content = `${item[1]}[ ]${content.slice(item[0].length)}`
    }
    result += content + (end < text.length ? '\n' : '')
    if (end >= text.length) break
    start = end + 1
    line++
  }
  return result
}
