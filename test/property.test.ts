import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseFrontmatter, setFrontmatterStatus, splitFrontmatter } from '../src/frontmatter.js'
import { parseNote } from '../src/parse-note.js'

/** Pieces of the markdown and YAML that notes are made of, so random notes hit the interesting paths. */
const piece = fc.constantFrom(
  '\n', '\r\n', '\uFEFF', ' ', '  ', '\t', 'a', 'Next', 'next', 'é', '\u0000', '\uD800',
  '---\n', '---js\n', '----', '# ', '## ', '### ', '## Next\n', '## Feedback\n', '```\n', '~~~', '    ', '> ', '> [!note]\n',
  '- ', '* ', '1. ', '[ ] ', '[x] ', '[[', ']]', '[', ']', '|', '#', '^', '@L12', '.md', '../', '/', '->', '→', '![[', '`', '*', '_', '<', '&amp;',
  'type: start\n', 'status: ', 'pending', 'done', 'Draft', 'tools: [', 'max_visits: ', '3', 'role:', 'aliases:', '&a ', '*a', '"', "'", ': ', '{', '}', '%YAML 1.2\n',
)
const noteText = fc.oneof(fc.string({ unit: 'binary', maxLength: 400 }), fc.array(piece, { maxLength: 80 }).map((pieces) => pieces.join('')))

function lineCount(text: string): number {
  return text.split('\n').length
}

describe('parseNote, any text', () => {
  it('never throws, and every position points at a line of the file', () => {
    fc.assert(
      fc.property(noteText, (text) => {
        const note = parseNote('folder/note.md', text)
        expect(note.id).toBe('folder/note')
        const lines = lineCount(text)
        for (const issue of note.issues) {
          expect(issue.severity).toBe('error')
          expect(issue.code).toMatch(/^[a-z]+(-[a-z]+)*$/)
          if (issue.line !== undefined) expect(issue.line).toBeGreaterThanOrEqual(1)
          if (issue.line !== undefined) expect(issue.line).toBeLessThanOrEqual(lines)
        }
        for (const edge of note.edges) {
          expect(edge.line).toBeGreaterThanOrEqual(1)
          expect(edge.line).toBeLessThanOrEqual(lines)
          expect(edge.conditional).toBe(edge.label !== '' && edge.label.toLowerCase() !== 'next')
        }
      }),
      { numRuns: 2000 },
    )
  })
})

/** A frontmatter line as people write them: comments, quotes, lists, empty values, odd spacing. */
const key = fc.constantFrom('type', 'status', 'tools', 'role', 'max_visits', 'judge', 'tags', 'aliases', 'created', 'note', 'Status', 'status ')
const scalar = fc.constantFrom('pending', 'done', 'Draft', 'start', 'step', '3', '2024-03-02', 'yes', 'null', '~', '', 'a b', 'x # not a comment?')
const frontmatterLine = fc.oneof(
  fc.tuple(key, scalar).map(([k, v]) => `${k}: ${v}`),
  fc.tuple(key, scalar).map(([k, v]) => `${k}: "${v}"`),
  fc.tuple(key, scalar).map(([k, v]) => `${k}: '${v}'`),
  fc.tuple(key, scalar).map(([k, v]) => `${k}:   ${v}   # comment`),
  key.map((k) => `${k}:`),
  key.map((k) => `${k}: # only a comment`),
  fc.tuple(key, scalar).map(([k, v]) => `${k}:\n  - ${v}\n  - other`),
  fc.tuple(key, scalar).map(([k, v]) => `${k}: |\n  ${v}`),
  fc.tuple(key, scalar).map(([k, v]) => `${k}: >-\n  ${v}\n  more`),
  fc.tuple(key, scalar).map(([k, v]) => `${k}: [${v}, b]`),
  fc.tuple(key, scalar).map(([k, v]) => `${k}: !!str ${v}`),
  fc.tuple(key, scalar).map(([k, v]) => `${k}: &anchor ${v}`),
  key.map((k) => `${k}: *anchor`),
  fc.constant('# a comment line'),
  fc.constant(''),
  fc.constant('...'),
)
const note = fc
  .record({
    bom: fc.boolean(),
    crlf: fc.boolean(),
    frontmatter: fc.option(fc.array(frontmatterLine, { maxLength: 8 }), { nil: undefined }),
    body: fc.oneof(fc.constant('# Step\n\nDo it.\n\n## Next\n- [[a]]\n'), fc.constant(''), fc.string({ maxLength: 60 })),
  })
  .map(({ bom, crlf, frontmatter, body }) => {
    const text = frontmatter === undefined ? body : `---\n${frontmatter.map((line) => `${line}\n`).join('')}---\n${body}`
    return `${bom ? '\uFEFF' : ''}${crlf ? text.replace(/\r?\n/g, '\r\n') : text}`
  })

describe('setFrontmatterStatus, any note that parses', () => {
  it('changes only the status value, or throws a clear Error and changes nothing', () => {
    fc.assert(
      fc.property(note, fc.constantFrom('pending', 'active', 'done', 'waiting'), (text, status) => {
        const before = parseFrontmatter(text)
        fc.pre(before.problems.length === 0)
        let after: string
        try {
          after = setFrontmatterStatus(text, status)
        } catch (error) {
          expect(error).toBeInstanceOf(Error)
          expect((error as Error).message).toMatch(/^cannot set `status`: /)
          return
        }
        const parsed = parseFrontmatter(after)
        expect(parsed.problems).toEqual([])
        expect(parsed.data).toEqual({ ...before.data, status })
        // Everything after the frontmatter, and a BOM before it, are the same bytes.
        expect(after.slice(splitFrontmatter(after).contentStart)).toBe(text.slice(before.split.contentStart))
        expect(after.startsWith('\uFEFF')).toBe(text.startsWith('\uFEFF'))
        // The note's line ending is kept.
        if (text.includes('\r\n')) expect(after.replace(/\r\n/g, '')).not.toContain('\n')
        // Setting the same status again changes nothing.
        expect(setFrontmatterStatus(after, status)).toBe(after)
      }),
      { numRuns: 1500 },
    )
  })
})
