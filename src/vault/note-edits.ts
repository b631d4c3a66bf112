import { parseNote } from './parse-note.js'

/**
 * Puts an empty task box on the `## Next` items of a note (`file` names it
 * for the parse): a ticked box is emptied (`- [x]` -> `- [ ]`), an
 * item without a box gains one (`- approved` -> `- [ ] approved`), any other
 * box (Obsidian's `[-]`, `[/]` ...) is left as the person wrote it. No other
 * byte changes.
 */
export function emptyTaskBoxes(file: string, text: string): string {
  const wanted = new Set(
    parseNote(file, text)
      .edges.filter((edge) => edge.checked !== false)
      .map((edge) => edge.itemLine),
  )
  if (wanted.size === 0) return text
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

/** Ticks the box of the list item at a 1-based line (gives it one when it has none). */
export function tickBox(text: string, line: number): string {
  let start = 0
  for (let at = 1; at < line; at++) start = text.indexOf('\n', start) + 1
  const end = text.indexOf('\n', start) === -1 ? text.length : text.indexOf('\n', start)
  const content = text.slice(start, end)
  const item = /^(\s*(?:[-*+]|\d+[.)])[ \t]+)(\[[^\]\n]\](?=[ \t]))?/.exec(content)
  if (!item) return text
  const ticked = item[2] === undefined ? `${item[1]}[x] ${content.slice(item[0].length)}` : `${item[1]}[x]${content.slice(item[0].length)}`
  return text.slice(0, start) + ticked + text.slice(end)
}

/** Empties the ticked box (`[x]`, `[X]`) of the list item at a 1-based line; any other line is left as it is. */
export function untickBox(text: string, line: number): string {
  let start = 0
  for (let at = 1; at < line; at++) start = text.indexOf('\n', start) + 1
  const end = text.indexOf('\n', start) === -1 ? text.length : text.indexOf('\n', start)
  const content = text.slice(start, end)
  const item = /^(\s*(?:[-*+]|\d+[.)])[ \t]+)\[[xX]\](?=[ \t])/.exec(content)
  if (!item) return text
  return `${text.slice(0, start)}${item[1]}[ ]${content.slice(item[0].length)}${text.slice(end)}`
}

/**
 * Adds text at the end of the last `## Feedback` section, or appends the section. The text is
 * written as a block quote, so no heading, list item, fence or HTML comment in it can change
 * the note's sections or edges; a run of `%` (which would open an Obsidian comment reaching
 * past the quote) is written as character references (`&#37;`), and an `&` that would read
 * as one of those as `&#38;`, so {@link feedbackAsTyped} gives back exactly what was typed.
 */
export function addFeedback(text: string, feedback: string): string {
  const end = parseNote('note.md', text).feedbackEnd
  const eol = text.includes('\r\n') ? '\r\n' : '\n'
  const block = quoted(feedback.trim(), eol)
  if (end === undefined) return `${text}${text.endsWith('\n') || text === '' ? '' : eol}${eol}## Feedback${eol}${eol}${block}${eol}`
  const head = text.slice(0, end)
  const tail = text.slice(end)
  const gap = head.endsWith(`${eol}${eol}`) ? '' : head.endsWith(eol) ? eol : `${eol}${eol}`
  return `${head}${gap}${block}${eol}${tail === '' ? '' : eol}${tail}`
}

/**
 * Feedback as the person typed it: each paragraph of `feedback` that is a
 * block quote throughout (every line starts with `>`), as {@link addFeedback}
 * writes what `decide` is given, loses one level of quote and its character
 * references; every other line stays as it was written. What a person
 * typed on the board is handed on to the next worker this way.
 */
export function feedbackAsTyped(feedback: string): string {
  const lines = feedback.split(/(\r\n|\r|\n)/)
  let paragraph: number[] = []
  const unquote = () => {
    if (paragraph.length > 0 && paragraph.every((at) => QUOTE_LINE.test(lines[at]!)))
      for (const at of paragraph) lines[at] = lines[at]!.replace(QUOTE_LINE, '').replace(/&#3([78]);/g, (_, digit: string) => (digit === '7' ? '%' : '&'))
    paragraph = []
  }
  // Even places hold the lines, odd ones the line ends between them.
  for (let at = 0; at < lines.length; at += 2) {
    if (lines[at]!.trim() === '') unquote()
    else paragraph.push(at)
  }
  unquote()
  return lines.join('')
}

/** A block quote's line: up to three spaces, `>` and the one space after it, which are the quote's, not the text's. */
const QUOTE_LINE = /^ {0,3}> ?/

/** `text` as a block quote, one `>` line per line (a lone carriage return ends a line too, as markdown reads it). */
function quoted(text: string, eol: string): string {
  return text
    .split(/\r\n|\r|\n/)
    .map((line) => {
      const safe = line.replace(/&(?=#3[78];)|%{2,}/g, (found) => (found === '&' ? '&#38;' : '&#37;'.repeat(found.length)))
      return safe === '' ? '>' : `> ${safe}`
    })
    .join(eol)
}

/** The line appended after feedback handed on to a worker, so a person sees which feedback is new. */
export function handedOnLine(step: number): string {
  return `(handed on at step ${step})`
}

const HANDED_ON_LINE = /^\(handed on at step \d+\)[ \t]*\r?$/gm

/**
 * What of a `## Feedback` text was not handed on yet: the text after its
 * last `(handed on at step N)` line, trimmed; `undefined` when no line is
 * marked (feedback written before marks, or never handed on).
 */
export function feedbackAfterMarks(feedback: string): string | undefined {
  let end: number | undefined
  for (const match of feedback.matchAll(HANDED_ON_LINE)) end = match.index + match[0].length
  return end === undefined ? undefined : feedback.slice(end).trim()
}

/**
 * Marks feedback handed on at `step`: one line, `(handed on at step N)`,
 * after a blank line, below the line where the last occurrence of `handed` (as the note holds
 * it) in the note's last `## Feedback` section ends. No other byte changes; the text is
 * returned as it is when `handed` is not there any more (the person edited
 * it) or is marked already (an edit done again).
 */
export function markHandedOn(file: string, text: string, handed: string, step: number): string {
  const end = parseNote(file, text).feedbackEnd
  if (end === undefined || handed === '') return text
  const at = text.lastIndexOf(handed, end - handed.length)
  if (at === -1) return text
  // At the end of the line the feedback ends on: what the person wrote on that line (trailing spaces too) stays on it.
  const newline = text.indexOf('\n', at + handed.length)
  const after = newline === -1 ? text.length : text[newline - 1] === '\r' ? newline - 1 : newline
  const eol = text.includes('\r\n') ? '\r\n' : '\n'
  // Marked already (before this release the mark came on the next line, without the blank one).
  if (/^(?:\r?\n){1,2}\(handed on at step \d+\)/.test(text.slice(after))) return text
  // A paragraph of its own: on the next line it would continue the person's quote, list item or paragraph.
  return `${text.slice(0, after)}${eol}${eol}${handedOnLine(step)}${text.slice(after)}`
}
