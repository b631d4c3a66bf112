import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { expect, it, vi } from 'vitest'
import { runPlan } from 'vaultplan'
import { RunStateError } from '../src/core/errors.js'
import { VaultSession } from '../src/store/vault-session.js'
import { draftReview } from './helpers/plans.js'
import { reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, statuses, writeVault } from './helpers/vault.js'

// A status a hop journaled is written into its note off the hop's path; a note a person keeps saving is
// refused (`note-busy`) once it has not settled for 3 s. Here that refusal comes at once, when asked.
const busy = vi.hoisted(() => ({ next: false }))

vi.mock('../src/vault/settled-read.js', async (importOriginal) => {
  const actual = await importOriginal<typeof import('../src/vault/settled-read.js')>()
  const readSettledNote: typeof actual.readSettledNote = (file, path, changed) => {
    if (!busy.next) return actual.readSettledNote(file, path, changed)
    busy.next = false
    return Promise.reject(new RunStateError('note-busy', `\`${file}\` kept changing`, { files: [file] }))
  }
  return { ...actual, readSettledNote }
})

/**
 * A session of a run one hop in, with `review: active` journaled (not yet in the note), and the note then saved by a
 * person: its next write finds it busy once.
 */
async function journaledThenSaved(): Promise<{ dir: string; session: VaultSession }> {
  const dir = await writeVault(draftReview())
  await runPlan(dir, { query: 'Announce', work: scriptedWorker(), llm: reviewJudge(), fsync: false, maxSteps: 1 })
  const session = await VaultSession.open(dir, { fsync: false, watch: false })
  expect(session.deferStatus('review', 'active')).toBe(true)
  session.commit()
  await edit(dir, 'review.md', (text) => `${text}\nA line of the person's.\n`)
  busy.next = true
  return { dir, session }
}

it('a journaled status its note refused (a person kept saving it) is written by the next apply, not marked applied unwritten', async () => {
  const { dir, session } = await journaledThenSaved()
  try {
    await expect(session.apply()).rejects.toMatchObject({ code: 'note-busy' })
    expect((await statuses(dir)).review).toBe('pending')
    await session.apply()
  } finally {
    await session.close()
  }
  expect((await statuses(dir)).review).toBe('active')
  expect(await readFile(join(dir, 'review.md'), 'utf8')).toContain("A line of the person's.")
})

it("a status written at once that its note refuses leaves the status journaled before it to write (the claim's `active` a next call recovers from)", async () => {
  const { dir, session } = await journaledThenSaved()
  try {
    await expect(session.setStatus('review', 'done')).rejects.toMatchObject({ code: 'note-busy' })
    await session.apply()
  } finally {
    await session.close()
  }
  expect((await statuses(dir)).review).toBe('active')
})
