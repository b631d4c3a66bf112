import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseFrontmatter } from '../src/vault/frontmatter.js'

describe('the fast reader of simple frontmatter', () => {
  it('reads plain key: value lines exactly as the YAML parser does, positions included', () => {
    const text = '---\ntype: start\nmax_visits: 3\ntools: [fetch_url, send_email]\nrole: review\ntags: []\n---\n# Title\n'
    const fast = parseFrontmatter(text)
    expect(fast).toEqual(parseFrontmatter(text, false))
    expect(fast.data).toEqual({ type: 'start', max_visits: 3, tools: ['fetch_url', 'send_email'], role: 'review', tags: [] })
  })

  it('agrees with the YAML parser on any frontmatter built from keys, words, numbers, lists and YAML syntax', () => {
    const key = fc.constantFrom('type', 'status', 'tools', 'max_visits', 'role', 'tags', '__proto__', 'a-b', '1x', 'x y')
    const value = fc.constantFrom(
      'start',
      'pending',
      '3',
      '007',
      '0x1f',
      '1.5',
      'true',
      'False',
      'null',
      '~',
      '',
      '[a, b]',
      '[]',
      '[a,]',
      '[1, two]',
      '"q"',
      "'q'",
      'a # c',
      'a: b',
      '&x a',
      '*x',
      '{a: 1}',
      'yes',
      'Draft 2',
      '- a',
      '2024-01-01',
      'a/b.c',
      '"Step 1"',
      "'x y'",
      '"a\\"b"',
      '"#x"',
      '["Step 12"]',
      '["a, b"]',
      "'it''s'",
      '""',
      '2024-1-1',
      '20261202-163325-52e645',
      'dcae57ffb0cbe34a',
      '3e45',
      '3e-45',
      '3e45a',
      '0x1f0',
      '0o17',
      '0o19',
      '1234567890123456',
      '12-',
      '1-e5',
      '0b101',
      '1e',
    )
    const line = fc.tuple(key, fc.constantFrom(':', ': ', ':  ', ' :'), value, fc.constantFrom('', ' ', '\r')).map(([k, sep, v, end]) => `${k}${sep}${v}${end}`)
    fc.assert(
      fc.property(fc.array(line, { minLength: 1, maxLength: 5 }), (lines) => {
        const text = `---\n${lines.join('\n')}\n---\nbody\n`
        expect(parseFrontmatter(text)).toEqual(parseFrontmatter(text, false))
      }),
      { numRuns: 1000 },
    )
  })
})
