import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { decide, runPlan } from 'vaultplan'
import { safeHtml } from '../src/board/safe-html.js'
import { feedbackToHandOn } from '../src/run/core/run-core.js'
import { addFeedback, feedbackAsTyped, markHandedOn } from '../src/vault/note-edits.js'
import { parseNote } from '../src/vault/parse-note.js'
import { humanReview } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { read, traceEntries, writeVault } from './helpers/vault.js'

/*
 * Feedback a person types (on the board, through `decide`) is written into the note as a block
 * quote, so nothing in it can change the note's sections. The next worker gets it as it was
 * typed, not quoted (the trace showed `> > Ship it`), and the `(handed on at step N)` line is a
 * paragraph of its own, never inside the person's quote.
 */

const options = { query: 'Announce the release', fsync: false, llm: noJudge() } as const

describe('feedback typed for a decision', () => {
  it('is handed to the next worker and shown in the trace as typed, the mark outside the quote', async () => {
    const vault = await writeVault(humanReview())
    await runPlan(vault, { ...options, work: scriptedWorker() })
    const typed = 'Ship it, but:\n\n> quote the changelog\n- keep it under 100% of the old length %% no comment'
    await decide(vault, 'review', { edge: 'needs revision', feedback: typed })
    const work = scriptedWorker()
    await runPlan(vault, { ...options, work })
    expect(work.calls[0]!.outputs.at(-1)).toEqual({ node: 'review', visit: 1, output: typed, feedback: true })
    expect((await traceEntries(vault)).find((entry) => entry.decidedBy === 'human')?.rationale).toBe(`Feedback:\n${typed}`)
    const note = await read(vault, 'review.md')
    expect(note.slice(note.indexOf('## Feedback'))).toBe(
      '## Feedback\n\n> Ship it, but:\n>\n> > quote the changelog\n> - keep it under 100% of the old length &#37;&#37; no comment\n\n(handed on at step 2)\n',
    )
    // Rendered (by Obsidian, or the board), the mark is its own paragraph after the quote.
    expect(safeHtml(note.slice(note.indexOf('## Feedback')))).toMatch(/<\/blockquote>\n<p>\(handed on at step 2\)<\/p>$/)
  })

  it('what a person writes under `## Feedback` in their notes app is handed on as they wrote it, a quote of theirs included', async () => {
    const written = 'As the style guide says:\n> no exclamation marks\nPlease fix.'
    expect(feedbackAsTyped(written)).toBe(written)
    expect(feedbackAsTyped('Fine.\n\n(handed on at step 2)\n\nAlso: 100&#37;.')).toBe('Fine.\n\n(handed on at step 2)\n\nAlso: 100&#37;.')
  })

  it('any text typed, decided once or again after a first was handed on, comes back exactly (line ends as the note has them)', () => {
    const line = fc.oneof(
      fc.constantFrom(
        '> quote',
        '>',
        '>> two',
        '%%',
        '%%%',
        '&#37;',
        '&#38;',
        '&#38;#37;',
        '\\%\\%',
        '  indented',
        '\t- [x] tab',
        '## Next',
        '- [[send]]',
        ' ',
        '   ',
      ),
      fc.string({ maxLength: 10 }),
    )
    const typed = fc
      .array(line, { minLength: 1, maxLength: 6 })
      .map((lines) => lines.join('\n').trim())
      .filter((text) => text !== '')
    const note = '---\njudge: human\nstatus: waiting\n---\n# Review\n\n## Next\n- [ ] approved -> [[send]]\n'
    fc.assert(
      fc.property(typed, typed, (first, second) => {
        const once = addFeedback(note, first)
        const handed = feedbackToHandOn(undefined, parseNote('review.md', once).feedback)
        expect(feedbackAsTyped(handed)).toBe(first)
        const marked = markHandedOn('review.md', once, handed, 2)
        const twice = addFeedback(marked, second)
        const then = feedbackToHandOn(parseNote('review.md', marked).feedback, parseNote('review.md', twice).feedback)
        expect(feedbackAsTyped(then)).toBe(second)
      }),
      { numRuns: 300 },
    )
  })
})
