import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { parseFrontmatter, setFrontmatterStatus } from '../src/vault/frontmatter.js'
import { extractJson, parseGridReply } from '../src/models/judge-reply.js'
import { LinkResolver } from '../src/vault/links.js'
import { readAtx } from '../src/vault/headings.js'
import { parseNote } from '../src/vault/parse-note.js'
import { parsePlanDocument, sectionHeading } from '../src/plan/plan-document.js'

/*
 * Hostile input for every parser, at sizes where a quadratic path takes
 * minutes: each property checks the result against the same input without
 * the padding (or a plain definition). Times are in bench/parse-scaling.mjs.
 */
const RUNS = 12
const blanks = fc
  .integer({ min: 1_000, max: 20_000 })
  .chain((length) => fc.constantFrom(' ', '\t', ' \t').map((unit) => unit.repeat(Math.ceil(length / unit.length))))

describe('parsers on large hostile input', () => {
  it('a judge reply reads the same with long white-space runs, blank lines and an unclosed fence around its rows', () => {
    const row = fc.tuple(fc.integer({ min: 1, max: 4 }), fc.constantFrom('YES', 'NO', 'yes', 'No'), fc.constantFrom('', ' - because', ': approved'))
    fc.assert(
      fc.property(fc.array(row, { minLength: 1, maxLength: 4 }), blanks, fc.boolean(), (rows, pad, fenced) => {
        const clean = rows.map(([n, answer, tail]) => `${n}: ${answer}${tail}`).join('\n')
        const noisy = `${fenced ? `\`\`\`\n${'\n'.repeat(pad.length)}` : ''}${rows.map(([n, answer, tail]) => `${n}:${pad}${answer}${tail}${pad}`).join(`\n${pad}\n`)}\n1${pad}x`
        expect(parseGridReply(noisy, 4)).toEqual(parseGridReply(clean, 4))
      }),
      { numRuns: RUNS },
    )
  })

  it('a reply with many fences that never close still yields its JSON', () => {
    fc.assert(
      fc.property(fc.integer({ min: 1_000, max: 50_000 }), blanks, (fences, pad) => {
        // Each opens a block (alone on its line) that no later line closes.
        const reply = `${'a ```json\n'.repeat(fences)}${pad}{"1": "YES", "2": "NO"}${pad}`
        expect(extractJson(reply)).toEqual({ 1: 'YES', 2: 'NO' })
        expect(parseGridReply(reply, 2)).toEqual([true, false])
      }),
      { numRuns: RUNS },
    )
  })

  it('a note reads the same edges, title and frontmatter with huge comments, white space and emphasis around them', () => {
    const noise = fc.constantFrom(
      (pad: string) => `text${pad}more\n`,
      (pad: string) => `${'*a_ '.repeat(pad.length / 4)}\n`,
      (pad: string) => `<!--\n${pad}\n-->\n`,
      (pad: string) => `%%${pad}%%\n`,
      (pad: string) => `\`\`\`\n${pad}\n\`\`\`\n`,
    )
    fc.assert(
      fc.property(blanks, fc.array(noise, { minLength: 1, maxLength: 4 }), fc.integer({ min: 100, max: 4_000 }), (pad, pieces, comments) => {
        const clean = '---\ntype: start\nmax_visits: 2\n---\n# The title\n\nDo it.\n\n## Next\n- approved -> [[send]]\n- [[draft]]\n'
        const frontmatter = `---\ntype: start${pad}\n${'# a comment\n'.repeat(comments)}max_visits: 2 # two\n---\n`
        // A line of `## Next` is at most 1,000 characters long.
        const short = pad.slice(0, 400)
        const noisy = `${frontmatter}# The title${pad}\n\nDo it.\n\n${pieces.map((piece) => piece(pad)).join('\n')}\n## Next${pad}\n- approved${short}-> [[send]]${short}\n- [[draft]]\n`
        const [a, b] = [parseNote('n.md', clean), parseNote('n.md', noisy)]
        expect(b.issues).toEqual([])
        expect({ title: b.title, data: b.frontmatter, edges: b.edges.map(({ label, link }) => [label, link]) }).toEqual({
          title: a.title,
          data: a.frontmatter,
          edges: a.edges.map(({ label, link }) => [label, link]),
        })
      }),
      { numRuns: RUNS },
    )
  })

  it('a note with thousands of `## Next` sections reads every one of their edges', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2_000, max: 30_000 }), (sections) => {
        const note = parseNote('n.md', `# T\n${'## Next\n- [[a]]\n### detail\n'.repeat(sections)}`)
        expect(note.edges).toHaveLength(sections)
        expect(note.body).toBe('')
      }),
      { numRuns: RUNS },
    )
  })

  it('long frontmatter with comments reads as the YAML parser reads it, and its status patches', () => {
    const line = fc.constantFrom('# a comment', '', 'note: text # trailing', 'k: [a, b]', 'n: 12')
    fc.assert(
      fc.property(fc.array(line, { minLength: 2_000, maxLength: 8_000 }), (lines) => {
        const text = `---\n${lines.map((entry, index) => entry.replace(/^(note|k|n):/, `$1${index}:`)).join('\n')}\nstatus: pending # set by vaultplan\n---\nbody\n`
        const fast = parseFrontmatter(text)
        expect(fast).toEqual(parseFrontmatter(text, false))
        const patched = setFrontmatterStatus(text, 'active')
        expect(patched).toBe(text.replace('status: pending #', 'status: active #'))
      }),
      { numRuns: RUNS },
    )
  })

  it('a plan document with long white-space runs in its headings keeps its section names', () => {
    fc.assert(
      fc.property(blanks, (pad) => {
        const graph = parsePlanDocument(`##${pad}first${pad}##${pad}\ntype: start\nGo.\n###${pad}next${pad}\n- [[second]]\n\n## second${pad}\nDone.\n`)
        expect([...graph.nodes.keys()]).toEqual(['first', 'second'])
        expect(graph.node('first').edges.map((edge) => edge.target)).toEqual(['second'])
      }),
      { numRuns: RUNS },
    )
  })

  it('links to a name that thousands of notes share resolve as the plain definition says', () => {
    fc.assert(
      fc.property(fc.integer({ min: 2_000, max: 20_000 }), fc.integer({ min: 0, max: 3 }), (count, depth) => {
        const ids = Array.from({ length: count }, (_, index) => `${'deep/'.repeat(depth)}f${index}/index`)
        const resolver = new LinkResolver([...ids.map((id) => ({ id, aliases: [] })), { id: 'solo/only', aliases: [] }])
        expect(resolver.resolve('index')).toEqual({ id: undefined, candidates: [...ids].sort() })
        expect(resolver.resolve('f7/index')).toEqual(count > 7 ? { id: `${'deep/'.repeat(depth)}f7/index` } : { id: undefined, candidates: [] })
        expect(resolver.resolve('only')).toEqual({ id: 'solo/only' })
      }),
      { numRuns: RUNS },
    )
  })
})

describe('the linear scans read exactly what the patterns they replace read', () => {
  const lineOf = (...pieces: string[]) => fc.array(fc.constantFrom(...pieces), { maxLength: 14 }).map((parts) => parts.join(''))

  it('ATX headings', () => {
    const ATX = /^ {0,3}(#{1,6})(?:[ \t]+(.*?))?(?:[ \t]+#+)?[ \t]*\r?$/
    fc.assert(
      fc.property(lineOf(' ', '\t', '#', 'a', '\r', '\u2028', 'b'), (line) => {
        const match = ATX.exec(line)
        expect(readAtx(line)).toEqual(match ? { depth: match[1]!.length, text: match[2] ?? '' } : undefined)
      }),
      { numRuns: 20_000 },
    )
  })

  it('plan document section headings', () => {
    const SECTION = /^##\s+(.+?)\s*#*\s*$/
    fc.assert(
      fc.property(lineOf(' ', '\t', '#', 'a', '\r', '\u2028', '[[', ']]', '\u00a0', 'next'), (rest) => {
        const line = `##${rest}`
        expect(sectionHeading(line)).toEqual(SECTION.exec(line)?.[1])
      }),
      { numRuns: 20_000 },
    )
  })
})
