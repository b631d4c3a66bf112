import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { normalizeLink, readEdges } from '../src/vault/next-section.js'

/** Both readers of a `## Next` section, with the diagnostics each reports. */
function both(section: string) {
  const read = (fast: boolean) => {
    const issues: unknown[] = []
    const edges = readEdges(section, 'plans/', 10, (code, message, line, column) => issues.push({ code, message, line, column }), fast)
    return { edges, issues }
  }
  return { fast: read(true), parser: read(false) }
}

describe('the line reader of `## Next` sections', () => {
  it('reads plain items exactly as the markdown parser does', () => {
    const section =
      '\n- approved -> [[send|Send it]]\n* [ ] needs revision → [[../draft#top]]\n+ [x] next -> [[review@L12]]\n1. [[done]]\n2) two [[a]] [[b]]\n\n'
    const { fast, parser } = both(section)
    expect(fast).toEqual(parser)
    expect(fast.edges.map((edge) => [edge.label, edge.link, edge.conditional, edge.checked])).toEqual([
      ['approved', 'send', true, undefined],
      ['needs revision', 'draft', true, false],
      ['next', 'review', false, true],
      ['', 'done', false, undefined],
    ])
  })

  it('agrees with the parser on any section built from list items, markup and links', () => {
    const piece = fc.constantFrom(
      'approved',
      ' ',
      '->',
      '→',
      '[[send]]',
      '[[a|b]]',
      '[[x#y]]',
      '![[img]]',
      '`code`',
      '**bold**',
      '_it_',
      '\\[x]',
      '<b>',
      '&amp;',
      '[link](u)',
      '[ ]',
      '[x]',
      'next',
      '~',
      '|',
      '#',
    )
    const line = fc
      .tuple(fc.constantFrom('- ', '* ', '+ ', '1. ', '2) ', '  - ', '', '### ', '> '), fc.array(piece, { maxLength: 6 }))
      .map(([marker, parts]) => marker + parts.join(''))
    fc.assert(
      fc.property(fc.array(line, { maxLength: 6 }), (lines) => {
        const { fast, parser } = both(`\n${lines.join('\n')}\n`)
        expect(fast).toEqual(parser)
      }),
      { numRuns: 500 },
    )
  })
})

it('an item that opens a heading holds no edge, by either reader (found by the property above, seed 719820439)', () => {
  const { fast, parser } = both('\n- # [[send]]\n')
  expect(fast).toEqual(parser)
  expect(parser).toEqual(expect.objectContaining({ edges: [] }))
})

describe('normalizeLink', () => {
  it('gives a plain path as the full normalisation does, on any link', () => {
    const part = fc.constantFrom(
      'a',
      'B',
      'n00212',
      'area-02',
      '_x',
      '/',
      '//',
      '.',
      '..',
      './',
      '../',
      '|',
      '|alias',
      '#',
      '#top',
      '^b',
      '@L12',
      '@3',
      '.md',
      '.MD',
      ' ',
      '\\',
      'é',
      'e\u0301',
    )
    fc.assert(
      fc.property(fc.array(part, { maxLength: 8 }), fc.constantFrom('', 'plans/', 'a/b/'), (parts, folder) => {
        const raw = parts.join('')
        expect(normalizeLink(raw, folder)).toEqual(normalizeLink(raw, folder, false))
      }),
      { numRuns: 3000 },
    )
  })

  it('takes plain paths as they are', () => {
    expect(normalizeLink('area-02/n00212|skip ahead', 'x/')).toEqual({ link: 'area-02/n00212', outside: false })
    expect(normalizeLink('../draft#top', 'plans/')).toEqual({ link: 'draft', outside: false })
  })
})
