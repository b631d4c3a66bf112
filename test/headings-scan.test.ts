import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { readAtx, scanHeadings, type HeadingLine } from '../src/vault/headings.js'

/*
 * The scan looks only at lines that open with `#`, a fence character or `<`
 * (after up to three spaces). The reference below looks at every line, as the
 * scan did before it skipped any, and without Obsidian's comments (a note with
 * `%%` is scanned line by line either way).
 */
const FENCE_OPEN = /^ {0,3}(`{3,}|~{3,})/
const HTML_COMMENT_OPEN = /^ {0,3}<!--/

function everyLine(content: string): HeadingLine[] {
  const headings: HeadingLine[] = []
  let fence: string | undefined
  let inHtml = false
  let line = 0
  for (let start = 0; start <= content.length;) {
    let end = content.indexOf('\n', start)
    if (end === -1) end = content.length
    const text = content.slice(start, end)
    line++
    if (fence !== undefined) {
      const close = FENCE_OPEN.exec(text)
      if (close && close[1]![0] === fence[0] && close[1]!.length >= fence.length && text.trim() === close[1]) fence = undefined
    } else if (inHtml) {
      if (text.includes('-->')) inHtml = false
    } else {
      const open = FENCE_OPEN.exec(text)
      if (open && !(open[1]![0] === '`' && text.slice(open[0].length).includes('`'))) fence = open[1]
      else if (HTML_COMMENT_OPEN.test(text)) inHtml = !text.slice(text.indexOf('<!--') + 4).includes('-->')
      else {
        const atx = readAtx(text)
        if (atx) headings.push({ ...atx, start, bodyStart: Math.min(end + 1, content.length), line })
      }
    }
    if (end === content.length) break
    start = end + 1
  }
  return headings
}

const indent = fc.constantFrom('', ' ', '  ', '   ', '    ', '\t')
const opening = fc.constantFrom('', '# ', '## Next', '###', '#', '```', '````', '~~~', '`', '~', '<!--', '-->', '<b>', '<', 'a', '- ')
const rest = fc.constantFrom('', ' ', 'text', ' #', '`', '-->', '\r', ' x <!-- y')
const line = fc.tuple(indent, opening, rest).map((parts) => parts.join(''))

describe('scanHeadings', () => {
  it('finds the headings a scan of every line finds, on any note without `%%` comments', () => {
    fc.assert(
      fc.property(
        fc.array(line, { maxLength: 30 }).map((lines) => lines.join('\n')),
        (content) => {
          const { headings, view } = scanHeadings(content)
          expect(headings).toEqual(everyLine(content))
          expect(view).toBe(content)
        },
      ),
      { numRuns: 3000 },
    )
  })

  it('skips neither a heading, nor a fence or comment indented by three spaces', () => {
    const content = '   # Title\n   ```\n## not a heading\n   ```\n   <!--\n## hidden\n-->\n   ## Next\n    # code, not a heading\n'
    expect(scanHeadings(content).headings.map((heading) => [heading.depth, heading.text, heading.line])).toEqual([
      [1, 'Title', 1],
      [2, 'Next', 8],
    ])
  })
})
