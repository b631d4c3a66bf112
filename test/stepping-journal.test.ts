import { appendFile, cp, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { blockStep, completeStep, nextStep } from 'vaultplan'
import { draftReview, work } from './helpers/plans.js'
import { read, statuses, tempDir, traceHeadings, writeVault } from './helpers/vault.js'

// A process that steps a vault again keeps what it knew of the run's journal (00_plan-trace/.journal) from its
// last call, and reads none of it while the journal is as that call left it. These tests change the journal
// between two calls, as another process would, and look at what the next call does.

const query = 'Announce the release'
const JOURNAL = '00_plan-trace/.journal'
const TRACE = '00_plan-trace/trace.md'

describe('a process stepping a vault again', () => {
  it.each([true, false])(
    'sees what another process journaled between its calls: a block killed before the note said so is taken up, once (fsync: %s)',
    async (fsync) => {
      const vault = await writeVault(draftReview())
      const options = { query, fsync }
      const draft = work(await nextStep(vault, options))
      const review = work(await completeStep(vault, draft.key, { output: 'the draft' }, options))
      expect(review).toMatchObject({ kind: 'work', node: { id: 'review' } })
      // What another process leaves that blocked `review` and was killed right after journaling it: its entries, not
      // marked applied, its note and the trace not written. Made on a copy of the vault as it is now.
      const copy = await tempDir()
      await cp(vault, copy, { recursive: true })
      const before = (await readFile(join(copy, JOURNAL))).length
      // With fsync, so that what it journaled stays in the journal once applied (without, the journal is emptied).
      expect(await blockStep(copy, review.key, { reason: 'needs the figures' }, { query, fsync: true })).toMatchObject({ kind: 'waiting' })
      const journaled = (await readFile(join(copy, JOURNAL)))
        .subarray(before)
        .toString('utf8')
        .replace(/(\{"k":"applied"\}\n)+$/, '')
      expect(journaled).toContain('"s":"waiting"')
      await appendFile(join(vault, JOURNAL), journaled)
      expect((await statuses(vault)).review).toBe('active')

      const next = await nextStep(vault, options)
      expect(next).toMatchObject({ kind: 'waiting', waiting: [{ node: 'review', kind: 'blocked' }] })
      expect((await statuses(vault)).review).toBe('waiting')
      expect(await read(vault, TRACE)).toBe(await read(copy, TRACE))
    },
  )

  it('brings back a trace rolled back between its calls (a sync tool restored an older copy) from the journal', async () => {
    const vault = await writeVault(draftReview())
    const options = { query, fsync: true }
    const draft = work(await nextStep(vault, options))
    const older = await readFile(join(vault, TRACE))
    const review = work(await completeStep(vault, draft.key, { output: 'the draft' }, options))
    const headings = await traceHeadings(vault)
    await writeFile(join(vault, TRACE), older)

    expect(await nextStep(vault, options)).toEqual(review)
    expect(await traceHeadings(vault)).toEqual(headings)
  })
})
