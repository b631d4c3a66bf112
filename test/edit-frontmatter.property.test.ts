import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { replacedNoteText } from '../src/run/edits/replaced-note.js'
import { parseFrontmatter, splitFrontmatter } from '../src/vault/frontmatter.js'
import { parseNote } from '../src/vault/parse-note.js'

/*
 * `editPlan` replaces a note by a plan document's section: whatever the
 * person wrote in the frontmatter that the section does not name stays
 * byte for byte (keys, comments, flow and block style, quotes, anchors,
 * blank lines), only the keys it names change, and a section of the
 * person's own stays too.
 */

/** The knobs a section may set; the person's note may hold any of them too. */
const KNOBS = ['role', 'max_visits', 'retries'] as const
type Knob = (typeof KNOBS)[number]
const knobValue: Record<Knob, fc.Arbitrary<string>> = {
  role: fc.constantFrom('review', 'draft', 'writer', '"editor"', "'critic'"),
  max_visits: fc.constantFrom('1', '2', '5'),
  retries: fc.constantFrom('0', '1', '3'),
}

/** A key of the person's own, written as people write them. */
const personKey = fc.constantFrom('tags', 'aliases', 'owner', 'created', 'topic', 'links', 'cssclasses', 'due')
const word = fc.constantFrom('keep-me', 'x', 'ann', '2024-03-02', 'a b', 'yes', '3')
const personEntry = (key: string): fc.Arbitrary<string> =>
  fc.oneof(
    word.map((value) => `${key}: ${value}`),
    fc.array(word, { minLength: 0, maxLength: 3 }).map((values) => `${key}: [${values.join(', ')}]`),
    fc.array(word, { minLength: 1, maxLength: 3 }).map((values) => `${key}:\n${values.map((value) => `  - ${value}`).join('\n')}`),
    word.map((value) => `${key}: "${value}"`),
    word.map((value) => `${key}: '${value}'`),
    word.map((value) => `${key}:    ${value}   # ${key}, by hand`),
    word.map((value) => `${key}: |\n  ${value}\n  and more`),
    word.map((value) => `${key}:\n  nested: ${value}\n  other: [1, 2]`),
    word.map((value) => `${key}: &${key} ${value}`),
    fc.constant(`${key}:`),
  )
/** A section of the person's own, which no plan document names. */
const JOURNAL = '## Journal\n\nTried twice. %% a note to self %%\n'
/** A line between entries that holds no key. */
const filler = fc.constantFrom('', '# a comment of the person', '   # indented comment')
/** How the note holds a knob the section may set, or does not. */
const knobEntry = (knob: Knob): fc.Arbitrary<string | undefined> =>
  fc.option(
    fc.oneof(
      knobValue[knob].map((value) => `${knob}: ${value}`),
      knobValue[knob].map((value) => `${knob}:   ${value}   # set by ann`),
    ),
    { nil: undefined },
  )

const personFrontmatter = fc
  .record({
    own: fc.uniqueArray(personKey, { maxLength: 5 }).chain((keys) => fc.tuple(...keys.map((key) => fc.tuple(personEntry(key), filler)))),
    knobs: fc.tuple(...KNOBS.map(knobEntry)),
    status: fc.option(fc.constantFrom('status: done', 'status: "waiting"', 'status: pending # by the run'), { nil: undefined }),
    order: fc.array(fc.nat(), { minLength: 10, maxLength: 10 }),
    crlf: fc.boolean(),
    bom: fc.boolean(),
    journal: fc.constantFrom('', 'before', 'after'),
  })
  .map(({ own, knobs, status, order, crlf, bom, journal }) => {
    const entries = [...own.flat(), ...knobs.filter((entry) => entry !== undefined), ...(status === undefined ? [] : [status])]
    // The person's order: any.
    const shuffled = entries.map((entry, at) => ({ entry, rank: order[at % order.length]! + at / 100 })).sort((a, b) => a.rank - b.rank)
    const body = journal === 'before' ? `${JOURNAL}\n## Next\n- [[c]]\n` : journal === 'after' ? `## Next\n- [[c]]\n\n${JOURNAL}` : '## Next\n- [[c]]\n'
    const text = `---\n${shuffled.map(({ entry }) => `${entry}\n`).join('')}---\n# Old title\n\nOld body.\n\n${body}`
    return `${bom ? '\uFEFF' : ''}${crlf ? text.replace(/\n/g, '\r\n') : text}`
  })

/** A section setting some knobs (and a status, which a replaced note never takes). */
const sectionOf = fc
  .record({
    knobs: fc.tuple(...KNOBS.map((knob) => fc.option(knobValue[knob], { nil: undefined }))),
    status: fc.boolean(),
  })
  .map(({ knobs, status }) => {
    const lines = KNOBS.flatMap((knob, at) => (knobs[at] === undefined ? [] : [`${knob}: ${knobs[at]}`]))
    if (status) lines.push('status: pending')
    return `${lines.length > 0 ? `---\n${lines.join('\n')}\n---\n` : ''}# New title\nNew body.\n\n## Next\n- [[c]]\n`
  })

/** The frontmatter's lines without those of the named keys (a named key's line is one line, in the note and in the section). */
function linesBut(text: string, keys: readonly string[]): string[] {
  const { yaml } = splitFrontmatter(text)
  return (yaml ?? '').split('\n').filter((line) => !keys.some((key) => line.startsWith(`${key}:`)))
}

describe("editPlan's replaced note, any frontmatter a person wrote", () => {
  it('keeps every byte the section does not name, and takes the values it does', () => {
    fc.assert(
      fc.property(personFrontmatter, sectionOf, (before, section) => {
        const note = parseNote('b.md', before)
        fc.pre(note.issues.length === 0)
        const named = Object.keys(parseFrontmatter(section).data).filter((key) => key !== 'status')
        const { text, problem } = replacedNoteText(before, note, section)
        expect(problem).toBeUndefined()
        // What the section does not name, byte for byte, in its order: keys, comments, blank lines, the status.
        expect(linesBut(text, named)).toEqual(linesBut(before, named))
        expect(text.startsWith('\uFEFF')).toBe(before.startsWith('\uFEFF'))
        if (before.includes('\r\n')) expect(text.replace(/\r\n/g, '')).not.toContain('\n')
        // What it names, as the section says; the status as the note had it.
        const after = parseFrontmatter(text).data
        const wanted = parseFrontmatter(section).data
        for (const key of named) expect(after[key]).toEqual(wanted[key])
        expect(after.status).toEqual(note.frontmatter.status)
        expect(after).toEqual({ ...note.frontmatter, ...Object.fromEntries(named.map((key) => [key, wanted[key]])) })
        // The person's own section, as it was.
        const journal = before.includes('\r\n') ? JOURNAL.replace(/\n/g, '\r\n') : JOURNAL
        expect(text.includes(journal)).toBe(before.includes(journal))
        // The text is the section's; the same section again changes nothing.
        const replaced = parseNote('b.md', text)
        expect([replaced.title, replaced.body.split('\n')[0]]).toEqual(['New title', 'New body.'])
        expect(replacedNoteText(text, parseNote('b.md', text), section).text).toBe(text)
      }),
      { numRuns: 200 },
    )
  })
})
