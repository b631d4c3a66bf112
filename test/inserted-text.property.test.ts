import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decide, readLedger, recordEntry } from 'vaultplan'
import { scanHeadings } from '../src/vault/headings.js'
import { addFeedback } from '../src/vault/note-edits.js'
import { parseNote } from '../src/vault/parse-note.js'
import { read, writeVault } from './helpers/vault.js'
import { linear } from './helpers/plans.js'

/*
 * Text that becomes markdown: whatever a person's feedback (through `decide`, or a proposal's
 * decision) or a ledger entry holds, inserting it leaves the note's headings and edges as they
 * were. Parsed before and after.
 */

/** Lines that mean something to markdown, Obsidian or the scanner, and plain text. */
const line = fc.oneof(
  fc.constantFrom(
    '## Next',
    '## Feedback',
    '# Title',
    '- [[send]]',
    '- [x] approved -> [[send]]',
    '```',
    '~~~',
    '<!--',
    '-->',
    '%%',
    '%%%',
    '---',
    '===',
    '> quote',
    '    indented',
    '\t- [[b]]',
    '[x]: /y',
    '<div>',
  ),
  fc.string({ maxLength: 12 }),
)
const feedbackText = fc
  .tuple(fc.array(line, { minLength: 1, maxLength: 8 }), fc.constantFrom('\n', '\r\n', '\r'))
  .map(([lines, eol]) => lines.join(eol))
  .filter((text) => text.trim() !== '')

const NOTES = {
  'feedback after next':
    '---\njudge: human\n---\n# Review\n\nLook.\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n\n## Feedback\n\nEarlier words.\n',
  'feedback before next':
    '---\njudge: human\n---\n# Review\n\nLook.\n\n## Feedback\n\nEarlier words.\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n',
  'no feedback yet': '---\njudge: human\n---\n# Review\n\nLook.\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n',
}

/** The headings a reader of the note finds, and its edges. */
function structure(text: string) {
  const note = parseNote('review.md', text)
  const { headings } = scanHeadings(text.slice(text.indexOf('\n---\n') + 5))
  return {
    headings: headings.map((heading) => `${heading.depth} ${heading.text}`),
    edges: note.edges.map((edge) => ({ label: edge.label, link: edge.link, checked: edge.checked })),
  }
}

describe('feedback inserted into a note', () => {
  it.each(Object.entries(NOTES))('%s: no heading, edge, fence or comment in it changes the note', (_, note) => {
    fc.assert(
      fc.property(feedbackText, (feedback) => {
        const before = structure(note)
        const after = structure(addFeedback(note, feedback))
        const added = note.includes('## Feedback') ? [] : ['2 Feedback']
        expect(after.headings).toEqual([...before.headings, ...added])
        expect(after.edges).toEqual(before.edges)
        // The words are there, in the feedback section.
        const words = feedback.split(/\r\n|\r|\n/).filter((text) => /[a-z]/i.test(text))
        for (const word of words)
          expect(parseNote('review.md', addFeedback(note, feedback)).feedback).toContain(
            word.trim().replace(/&(?=#3[78];)|%{2,}/g, (found) => (found === '&' ? '&#38;' : '&#37;'.repeat(found.length))),
          )
      }),
      { numRuns: 300 },
    )
  })
})

describe('decide with feedback a person typed', () => {
  it('a `## Next` line in the feedback adds no edge, and the ticked box is followed', async () => {
    const dir = await writeVault({
      'review.md': '---\ntype: start\njudge: human\nstatus: waiting\n---\n# Review\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n',
      'send.md': '# Send\n',
      'draft.md': '# Draft\n',
    })
    await decide(dir, 'review', { edge: 'needs revision', feedback: 'Shorter.\n## Next\n- [x] shortcut -> [[send]]' })
    const edges = parseNote('review.md', await read(dir, 'review.md')).edges
    expect(edges.map((edge) => [edge.label, edge.link, edge.checked])).toEqual([
      ['approved', 'send', false],
      ['needs revision', 'draft', true],
    ])
  })

  it('an open code fence in feedback written before `## Next` hides no edge', async () => {
    const dir = await writeVault({
      'review.md':
        '---\ntype: start\njudge: human\nstatus: waiting\n---\n# Review\n\n## Feedback\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n',
      'send.md': '# Send\n',
      'draft.md': '# Draft\n',
    })
    await decide(dir, 'review', { edge: 'approved', feedback: 'See:\n```js\nconst x = 1' })
    const edges = parseNote('review.md', await read(dir, 'review.md')).edges
    expect(edges.map((edge) => [edge.label, edge.checked])).toEqual([
      ['approved', true],
      ['needs revision', false],
    ])
  })
})

describe('a ledger entry', () => {
  it('reads back as written, whatever markdown its text and reason hold', async () => {
    const vault = await writeVault(linear())
    const texts = fc.sample(feedbackText, { numRuns: 40, seed: 26 })
    for (const text of texts) await recordEntry(vault, { kind: 'fact', text, reason: text }, { fsync: false })
    const facts = (await readLedger(vault)).facts
    expect(facts.map((fact) => [fact.text, fact.reason])).toEqual(texts.map((text) => [text, text]))
  })
})
