import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseFrontmatter, setFrontmatterValue, splitFrontmatter } from '../src/vault/frontmatter.js'
import { parseNote } from '../src/vault/parse-note.js'

describe('finding the frontmatter', () => {
  it('is a `---` block on the very first line, closed by a `---` line', () => {
    const text = '---\ntype: start\n---\n# Title\n'
    const split = splitFrontmatter(text)
    expect([split.yaml, text.slice(split.contentStart)]).toEqual(['type: start\n', '# Title\n'])
  })

  it('allows a byte order mark and CRLF line endings', () => {
    const text = '\uFEFF---\r\ntype: start\r\n---\r\n# Title\r\n'
    const split = splitFrontmatter(text)
    expect([split.yaml, split.eol, text.slice(split.contentStart)]).toEqual(['type: start\r\n', '\r\n', '# Title\r\n'])
  })

  it('is not there when the fence is not closed, or not on the first line', () => {
    expect(splitFrontmatter('---\ntype: start\n# Title\n').yaml).toBeUndefined()
    expect(splitFrontmatter('\n---\ntype: start\n---\n').yaml).toBeUndefined()
  })

  it('is not there when the note opens with a longer rule such as `----`', () => {
    const note = parseNote('rule.md', '----\nA note that opens with a rule.\n\n---\n\nAnd has another one later.\n')
    expect(note.issues).toEqual([])
    expect(note.body).toBe('----\nA note that opens with a rule.\n\n---\n\nAnd has another one later.')
  })

  it('reports a `---js` block without evaluating it', () => {
    const result = parseFrontmatter('---js\n{ type: "start" }\n---\n# Title\n')
    expect(result.data).toEqual({})
    expect(result.problems).toEqual([{ message: 'frontmatter in `js` is not supported (only YAML); the block was not evaluated', line: 1, column: 1 }])
  })
})

describe('reading the frontmatter', () => {
  it('keeps the user keys as YAML 1.2 reads them: dates and leading-zero numbers are not reinterpreted', () => {
    const result = parseFrontmatter('---\ncreated: 2024-03-02\nversion: 1.10\nzip: 01234\non: yes\n---\n')
    expect(result.data).toEqual({ created: '2024-03-02', version: 1.1, zip: 1234, on: 'yes' })
    expect(result.problems).toEqual([])
  })

  it('gives each key the position of its value in the file', () => {
    const result = parseFrontmatter('---\n# comment\ntype:   start\ntools:\n  - a\n---\n')
    expect(Object.fromEntries(result.positions)).toEqual({ type: { line: 3, column: 9 }, tools: { line: 5, column: 3 } })
  })

  it('reports broken YAML at its line in the file, counting the fence', () => {
    const result = parseFrontmatter('---\ntype: start\ntools: [a, b\nrole: x\n---\n')
    expect(result.data).toEqual({})
    expect(result.problems.length).toBeGreaterThan(0)
    expect(result.problems[0]!.message).toMatch(/^invalid YAML: /)
    expect(result.problems[0]!.line).toBeGreaterThanOrEqual(3)
  })

  it('reports a duplicated key instead of silently keeping one of them', () => {
    expect(parseFrontmatter('---\nstatus: done\nstatus: pending\n---\n').problems).toEqual([
      { message: 'invalid YAML: Map keys must be unique', line: 3, column: 1 },
    ])
  })

  it('reports frontmatter that is a list or a scalar', () => {
    expect(parseFrontmatter('---\n- a\n- b\n---\n').problems).toEqual([{ message: 'frontmatter must be a mapping of keys to values', line: 2, column: 1 }])
    expect(parseFrontmatter('---\njust text\n---\n').problems).toEqual([{ message: 'frontmatter must be a mapping of keys to values', line: 2, column: 1 }])
  })

  it('treats an empty or comment-only block as no keys', () => {
    expect(parseFrontmatter('---\n---\n# T\n')).toMatchObject({ data: {}, problems: [] })
    expect(parseFrontmatter('---\n# only a comment\n---\n# T\n')).toMatchObject({ data: {}, problems: [] })
  })
})

describe('knobs of a note', () => {
  it.each([
    ['type: begin', '`type` must be `step` or `start`, got `"begin"`'],
    ['status: Draft', '`status` must be one of `pending`, `active`, `done`, `waiting`, got `"Draft"`'],
    ['tools: fetch_url', '`tools` must be a list of tool names, got `"fetch_url"`'],
    ['tools: [fetch_url, 3]', '`tools` must be a list of tool names, got `["fetch_url",3]`'],
    ['tools: [fetch_url, ""]', '`tools` must be a list of tool names, got `["fetch_url",""]`'],
    ['role: [a, b]', '`role` must be a role name such as `review`, got `["a","b"]`'],
    ['role: ""', '`role` must be a role name such as `review`, got `""`'],
    ['max_visits: .inf', '`max_visits` must be an integer from 1 up, got `null`'],
    ['max_visits: 0', '`max_visits` must be an integer from 1 up, got `0`'],
    ['max_visits: 2.5', '`max_visits` must be an integer from 1 up, got `2.5`'],
    ['max_visits: "3"', '`max_visits` must be an integer from 1 up, got `"3"`'],
    ['judge: robot', '`judge` must be `llm` or `human`, got `"robot"`'],
  ])('`%s` is invalid-frontmatter at the value', (line, message) => {
    const note = parseNote('step.md', `---\n# a comment line first\n${line}\n---\n# Step\n`)
    const column = line.indexOf(':') + 3
    expect(note.issues).toEqual([{ code: 'invalid-frontmatter', severity: 'error', message, node: 'step', file: 'step.md', line: 3, column }])
  })

  it('falls back to the defaults for a bad value, and keeps what the user wrote', () => {
    const note = parseNote('step.md', '---\nstatus: Draft\nmax_visits: lots\n---\n')
    expect([note.status, note.maxVisits, note.frontmatter]).toEqual(['pending', 3, { status: 'Draft', max_visits: 'lots' }])
  })

  it('treats an empty knob as not set', () => {
    const note = parseNote('step.md', '---\ntype:\nstatus:\nrole:\n---\n')
    expect(note.issues).toEqual([])
    expect([note.type, note.status, note.role]).toEqual(['step', 'pending', undefined])
  })

  it('reads every knob', () => {
    const note = parseNote(
      'review.md',
      '---\ntype: start\nstatus: waiting\ntools: [fetch_url]\nrole: review\nmax_visits: 5\njudge: human\naliases: [Check]\n---\n',
    )
    expect(note).toMatchObject({
      type: 'start',
      status: 'waiting',
      tools: ['fetch_url'],
      role: 'review',
      maxVisits: 5,
      judge: 'human',
      aliases: ['Check'],
      issues: [],
    })
  })
})

describe('splitFrontmatter, the closing fence', () => {
  /** The closing fence found by looking at every line, as the splitter did before it jumped between lines opening with `---`. */
  function closingByEveryLine(text: string, yamlStart: number): number | undefined {
    for (let lineStart = yamlStart; lineStart < text.length;) {
      let lineEnd = text.indexOf('\n', lineStart)
      if (lineEnd === -1) lineEnd = text.length
      if (/^---[ \t]*$/.test(text.slice(lineStart, lineEnd).replace(/\r$/, ''))) return lineStart
      lineStart = lineEnd + 1
    }
    return undefined
  }

  it('is the first line of only `---` (and blanks) after the opening one, on any text', () => {
    const line = fc.constantFrom('---', '--- ', '---\t', '----', '--', ' ---', '---x', 'a: b', '', '\r', '---\r', '---\r\r', 'x---')
    fc.assert(
      fc.property(fc.array(line, { maxLength: 12 }), fc.boolean(), (lines, crlf) => {
        const text = `---${crlf ? '\r\n' : '\n'}${lines.join(crlf ? '\r\n' : '\n')}`
        const split = splitFrontmatter(text)
        const closing = closingByEveryLine(text, crlf ? 5 : 4)
        expect(split.yaml === undefined ? undefined : split.yamlStart + split.yaml.length).toBe(closing)
      }),
      { numRuns: 3000 },
    )
  })
})

describe('setFrontmatterValue', () => {
  it("sets one key's value as written, every other byte as it was", () => {
    const text = '---\n# mine\ntags: [keep-me]\nrole:   draft   # by hand\ntools:\n  - search\n  - fetch\n---\n# T\n'
    expect(setFrontmatterValue(text, 'role', 'review')).toBe(text.replace('role:   draft', 'role:   review'))
    expect(setFrontmatterValue(text, 'tools', '[search]')).toBe('---\n# mine\ntags: [keep-me]\nrole:   draft   # by hand\ntools: [search]\n---\n# T\n')
    expect(setFrontmatterValue(text, 'max_visits', '2')).toBe(text.replace('---\n# T', 'max_visits: 2\n---\n# T'))
    expect(setFrontmatterValue('# T\r\n', 'role', '"a: b"')).toBe('---\r\nrole: "a: b"\r\n---\r\n# T\r\n')
  })

  it('refuses a value that is no line of YAML, and a frontmatter it cannot patch in place', () => {
    expect(() => setFrontmatterValue('# T\n', 'role', 'a\nb: c')).toThrow(TypeError)
    expect(() => setFrontmatterValue('# T\n', 'two words', 'x')).toThrow(TypeError)
    expect(() => setFrontmatterValue('---\nrole: &r draft\nother: *r\n---\n', 'role', 'review')).toThrow(/^cannot set `role`: /)
  })
})
