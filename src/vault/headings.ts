/** A top-level ATX heading of a note's content. */
export interface HeadingLine {
  depth: number
  text: string
  /** Offset of the heading line and of the line after it. */
  start: number
  bodyStart: number
  /** 1-based line of the heading within the content. */
  line: number
}

const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})/
/** An HTML block that is a comment opens on a line starting so (CommonMark's HTML block type 2). */
const HTML_COMMENT_OPEN = /^ {0,3}<!--/

/**
 * Finds the top-level ATX headings of a note, the way remark and Obsidian
 * see them: none inside fenced code, inside an HTML comment block
 * (`<!--` opening a line, up to the line holding `-->`), or inside
 * Obsidian's `%% comments %%` (inline or across lines, to the end of the
 * note when unclosed). A line scan, so that loading a large vault costs
 * about as much as reading it: the markdown parser only sees `## Next`
 * sections. `view` is `content` with the `%%` comments (markers included)
 * turned into spaces, offsets and lines unchanged: what the `## Next`
 * readers are given, so they agree with Obsidian too.
 */
export function scanHeadings(content: string): { headings: HeadingLine[]; view: string } {
  const headings: HeadingLine[] = []
  const hasObsidianComments = content.includes('%%')
  const viewLines: string[] = []
  let fence: string | undefined
  let inHtml = false
  let inObsidian = false
  let line = 0
  for (let start = 0; start <= content.length;) {
    let end = content.indexOf('\n', start)
    if (end === -1) end = content.length
    line++
    // A line is cut out of the note only when it could matter: a fence, an HTML comment or a heading opens
    // with one of `` ` ~ < # `` after at most three spaces, and so does a closing fence (with its own).
    const lead = leadOf(content, start, end)
    let text = hasObsidianComments ? content.slice(start, end) : undefined
    if (inObsidian) {
      ;[text, inObsidian] = blankObsidianComments(text!, true)
    } else if (fence !== undefined) {
      if (lead === fence.charCodeAt(0)) {
        text ??= content.slice(start, end)
        const close = FENCE_OPEN.exec(text)
        if (close && close[1]![0] === fence[0] && close[1]!.length >= fence.length && text.trim() === close[1]) fence = undefined
      }
    } else if (inHtml) {
      text ??= content.slice(start, end)
      if (text.includes('-->')) inHtml = false
    } else if (hasObsidianComments || lead === HASH || lead === BACKTICK || lead === TILDE || lead === LESS_THAN) {
      text ??= content.slice(start, end)
      const open = FENCE_OPEN.exec(text)
      if (open && !(open[1]![0] === '`' && text.slice(open[0].length).includes('`'))) fence = open[1]
      else if (HTML_COMMENT_OPEN.test(text)) inHtml = !text.slice(text.indexOf('<!--') + 4).includes('-->')
      else {
        if (hasObsidianComments) [text, inObsidian] = blankObsidianComments(text, false)
        const atx = readAtx(text)
        if (atx) headings.push({ depth: atx.depth, text: atx.text, start, bodyStart: Math.min(end + 1, content.length), line })
      }
    }
    if (hasObsidianComments) viewLines.push(text!)
    if (end === content.length) break
    start = end + 1
  }
  return { headings, view: hasObsidianComments ? viewLines.join('\n') : content }
}

const HASH = 0x23
const BACKTICK = 0x60
const TILDE = 0x7e
const LESS_THAN = 0x3c

/** The code of the first character of the line `start`-`end` after at most three spaces; -1 when there is none. */
function leadOf(content: string, start: number, end: number): number {
  let at = start
  while (at < end && at - start < 3 && content.charCodeAt(at) === 0x20) at++
  return at < end ? content.charCodeAt(at) : -1
}

/** One line with its `%%` comments blanked, starting inside one or not; and whether a comment is still open at its end. */
function blankObsidianComments(text: string, inside: boolean): [string, boolean] {
  if (!inside && !text.includes('%%')) return [text, false]
  let out = ''
  let from = 0
  for (let marker = text.indexOf('%%'); marker !== -1; marker = text.indexOf('%%', from)) {
    out += inside ? ' '.repeat(marker + 2 - from) : `${text.slice(from, marker)}  `
    from = marker + 2
    inside = !inside
  }
  out += inside ? ' '.repeat(text.length - from) : text.slice(from)
  return [out, inside]
}

/**
 * Reads an ATX heading line: up to three spaces, one to six `#`, then white
 * space and the text, an optional closing run of `#` after white space. The
 * text is what `/^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\r?$/`
 * captures, found without backtracking (that pattern is quadratic in a long
 * run of white space). `undefined` when the line is no heading.
 */
export function readAtx(line: string): { depth: number; text: string } | undefined {
  const body = line.endsWith('\r') ? line.slice(0, -1) : line
  let at = 0
  while (at < 3 && body[at] === ' ') at++
  let depth = 0
  while (body[at + depth] === '#') depth++
  if (depth < 1 || depth > 6) return undefined
  at += depth
  let end = body.length
  while (end > at && isBlank(body[end - 1]!)) end--
  if (end === at) return { depth, text: '' }
  if (!isBlank(body[at]!)) return undefined
  while (isBlank(body[at]!)) at++
  // A closing run of `#` after white space is not part of the text.
  let close = end
  while (close > at && body[close - 1] === '#') close--
  if (close < end && close > at && isBlank(body[close - 1]!)) {
    end = close
    while (isBlank(body[end - 1]!)) end--
  }
  const text = body.slice(at, end)
  // `.` in the pattern stops at these line breaks: such a line is no heading.
  return /[\r\u2028\u2029]/.test(text) ? undefined : { depth, text }
}

function isBlank(char: string): boolean {
  return char === ' ' || char === '\t'
}
