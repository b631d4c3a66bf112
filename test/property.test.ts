import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseFrontmatter, setFrontmatterStatus, splitFrontmatter } from '../src/vault/frontmatter.js'
import { fastPathCounts } from '../src/vault/fast-paths.js'
import { parseNote } from '../src/vault/parse-note.js'

/** Pieces of the markdown and YAML that notes are made of, so random notes hit the interesting paths. */
const piece = fc.constantFrom(
  '\n',
  '\r\n',
  '\uFEFF',
  ' ',
  '  ',
  '\t',
  'a',
  'Next',
  'next',
  'é',
  '\u0000',
  '\uD800',
  '---\n',
  '---js\n',
  '----',
  '# ',
  '## ',
  '### ',
  '## Next\n',
  '## Feedback\n',
  '```\n',
  '~~~',
  '    ',
  '> ',
  '> [!note]\n',
  '- ',
  '* ',
  '1. ',
  '[ ] ',
  '[x] ',
  '[[',
  ']]',
  '[',
  ']',
  '|',
  '#',
  '^',
  '@L12',
  '.md',
  '../',
  '/',
  '->',
  '→',
  '![[',
  '`',
  '*',
  '_',
  '<',
  '&amp;',
  'type: start\n',
  'status: ',
  'pending',
  'done',
  'Draft',
  'tools: [',
  'max_visits: ',
  '3',
  'role:',
  'aliases:',
  '&a ',
  '*a',
  '"',
  "'",
  ': ',
  '{',
  '}',
  '%YAML 1.2\n',
)
const noteText = fc.oneof(
  fc.string({ unit: 'binary', maxLength: 400 }),
  fc.array(piece, { maxLength: 80 }).map((pieces) => pieces.join('')),
)

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

/** What a patched note must be: only the status changed, every other byte and the line ending kept, and patching again a no-op. */
function expectOnlyStatusChanged(text: string, after: string, status: string): void {
  const before = parseFrontmatter(text)
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
}

const statusValue = fc.constantFrom('pending', 'active', 'done', 'waiting')

describe('setFrontmatterStatus, any note that parses', () => {
  it('changes only the status value, or throws a clear Error and changes nothing', () => {
    fc.assert(
      fc.property(note, statusValue, (text, status) => {
        fc.pre(parseFrontmatter(text).problems.length === 0)
        let after: string
        try {
          after = setFrontmatterStatus(text, status)
        } catch (error) {
          expect(error).toBeInstanceOf(Error)
          expect((error as Error).message).toMatch(/^cannot set `status`: /)
          return
        }
        expectOnlyStatusChanged(text, after, status)
      }),
      { numRuns: 1500 },
    )
  })

  it('patches every note whose frontmatter is a plain block mapping: a refusal there is a failure', () => {
    // Lines an in-place patch must handle: no `...` end marker, anchors, aliases or tags.
    const plainLine = fc.oneof(
      fc.tuple(key, scalar).map(([k, v]) => `${k}: ${v}`),
      fc.tuple(key, scalar).map(([k, v]) => `${k}: "${v}"`),
      fc.tuple(key, scalar).map(([k, v]) => `${k}: '${v}'`),
      fc.tuple(key, scalar).map(([k, v]) => `${k}:   ${v}   # comment`),
      key.map((k) => `${k}:`),
      key.map((k) => `${k}: # only a comment`),
      fc.tuple(key, scalar).map(([k, v]) => `${k}:\n  - ${v}\n  - other`),
      fc.tuple(key, scalar).map(([k, v]) => `${k}: |\n  ${v}`),
      fc.tuple(key, scalar).map(([k, v]) => `${k}: [${v}, b]`),
      fc.constant('# a comment line'),
      fc.constant(''),
    )
    const plainNote = fc
      .record({
        bom: fc.boolean(),
        crlf: fc.boolean(),
        frontmatter: fc.option(fc.array(plainLine, { maxLength: 8 }), { nil: undefined }),
        body: fc.constantFrom('# Step\n\nDo it.\n', '', 'text'),
      })
      .map(({ bom, crlf, frontmatter, body }) => {
        const text = frontmatter === undefined ? body : `---\n${frontmatter.map((line) => `${line}\n`).join('')}---\n${body}`
        return `${bom ? '\uFEFF' : ''}${crlf ? text.replace(/\r?\n/g, '\r\n') : text}`
      })
    fc.assert(
      fc.property(plainNote, statusValue, (text, status) => {
        // Duplicate keys are a problem of the note, reported elsewhere; everything else must patch.
        fc.pre(parseFrontmatter(text).problems.length === 0)
        expectOnlyStatusChanged(text, setFrontmatterStatus(text, status), status)
      }),
      { numRuns: 1500 },
    )
  })
})

describe('the fast readers', () => {
  it('are the ones that read plain notes, and the parsers read the rest', () => {
    const read = (text: string) => {
      const before = { ...fastPathCounts }
      const parsed = parseNote('n.md', text)
      return { fast: { frontmatter: fastPathCounts.frontmatter - before.frontmatter, next: fastPathCounts.next - before.next }, parsed }
    }
    const plain = read('---\ntype: start\nmax_visits: 2 # two\ntools: [fetch_url]\n---\n# Plan\n\nDo it.\n\n## Next\n- approved -> [[send]]\n- [ ] [[draft]]\n')
    expect(plain.fast).toEqual({ frontmatter: 1, next: 1 })
    expect(plain.parsed.edges.map((edge) => edge.link)).toEqual(['send', 'draft'])
    const marked = read('---\ntype: start\nlist:\n  - a\n---\n## Next\n- **approved** -> [[send]]\n')
    expect(marked.fast).toEqual({ frontmatter: 0, next: 0 })
    expect(marked.parsed.edges.map((edge) => edge.label)).toEqual(['approved'])
  })
})
