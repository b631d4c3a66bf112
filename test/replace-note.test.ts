import { readdir, readFile, stat, writeFile } from 'node:fs/promises'
import * as fs from 'node:fs'
import { basename, join } from 'node:path'
import { describe, expect, it, vi } from 'vitest'
import { decide, proposePlan, runPlan } from 'vaultplan'
import { replacedFilesFreed, stampOf } from '../src/vault/fs-atomic.js'
import { editNote } from '../src/vault/edit-note.js'
import { OLD_VERSION_PREFIX, oldVersionPath, recoverOldVersions, replaceNote, replaceNoteSync } from '../src/vault/replace-note.js'
import { noJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { until } from './helpers/until.js'
import { tempDir, writeVault } from './helpers/vault.js'

/**
 * A person's editor saving in place at the worst moment: right before the
 * run's rename, after every comparison the run can make. `renameSync` of
 * node:fs is wrapped so that a test can slip the save in exactly there.
 */
const between = vi.hoisted(() => ({ path: '', save: undefined as (() => void) | undefined }))
vi.mock('node:fs', async (importOriginal) => {
  const real = await importOriginal<typeof import('node:fs')>()
  const renameSync: typeof real.renameSync = (from, to) => {
    const save = String(to) === between.path ? between.save : undefined
    if (save) between.save = undefined
    save?.()
    return real.renameSync(from, to)
  }
  return { ...real, default: { ...real, renameSync }, renameSync }
})

/**
 * The next wait of the code under test once `watch.armed` is set: the one
 * `replaceNote` makes while it watches the old version after its rename.
 * The library's one `sleep` is wrapped so that a test can do a person's
 * writes there, all of them before the watch looks again, however loaded
 * the machine.
 */
const watch = vi.hoisted(() => ({ armed: undefined as (() => Promise<void>) | undefined }))
vi.mock('../src/core/abort.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/core/abort.js')>()
  const sleep: typeof real.sleep = async (ms, signal) => {
    const during = watch.armed
    watch.armed = undefined
    await during?.()
    return real.sleep(ms, signal)
  }
  return { ...real, sleep }
})

/** What an editor's save in place does: truncate the file by its name, then write it. */
function saveInPlace(path: string, text: string): void {
  const fd = fs.openSync(path, 'w')
  fs.writeSync(fd, text)
  fs.closeSync(fd)
}

/** Dates the file at `path` a second before the one at `than`, as a write made a moment before it (the clock may not tick between two writes of a test). */
function olderThan(path: string, than: string): void {
  const before = new Date(fs.statSync(than).mtimeMs - 1000)
  fs.utimesSync(path, before, before)
}

const NOTE = '---\nstatus: pending\n---\n# Draft\n\nThe words a person wrote.\n'
const SAVED = '---\nstatus: pending\n---\n# Draft\n\nThe words a person wrote.\nAnd a line they typed while the run wrote the status.\n'
const withStatus = (text: string, status: string) => text.replace('status: pending', `status: ${status}`)

describe('replacing a note while a person saves it in place', () => {
  it('a save landing between the last comparison and the rename is put back as the note at once, and the edit is redone on it', async () => {
    const dir = await writeVault({ 'draft.md': NOTE })
    const path = join(dir, 'draft.md')
    const expected = await stampOf(path)
    between.path = path
    between.save = () => saveInPlace(path, SAVED)
    // The person's save, the very file their editor wrote into, is the note again: read it again.
    expect(await replaceNote(path, expected, withStatus(NOTE, 'active'), (saved) => withStatus(saved, 'active'), { fsync: false })).toBe('changed')
    expect(await readFile(path, 'utf8')).toBe(SAVED)
    expect((await stat(path)).ino).toBe(expected.ino)
    expect(await readdir(dir)).toEqual(['draft.md'])
    // editNote reads it again and writes the status into the person's save.
    between.save = () => saveInPlace(path, `${SAVED}Another line.\n`)
    const edited = await editNote('draft.md', path, (text) => withStatus(text, 'active'), { fsync: false })
    expect(edited).toMatchObject({ text: withStatus(`${SAVED}Another line.\n`, 'active'), written: true })
    expect(await readFile(path, 'utf8')).toBe(withStatus(`${SAVED}Another line.\n`, 'active'))
    expect(await readdir(dir)).toEqual(['draft.md'])
  })

  it('without a save meanwhile, the note is replaced and no second name is left', async () => {
    const dir = await writeVault({ 'draft.md': NOTE })
    const path = join(dir, 'draft.md')
    const expected = await stampOf(path)
    const replaced = replaceNoteSync(path, expected, withStatus(NOTE, 'done'), { fsync: false })
    expect(replaced).toMatchObject({ kind: 'replaced' })
    expect('caught' in replaced && replaced.caught).toBeFalsy()
    // Looked at at once: the old version is not freed by the rename or on the event loop (on ext4 that waits for
    // its pending writes); its second name is removed in the thread pool right after.
    expect(fs.readdirSync(dir).sort()).toEqual([basename(oldVersionPath(path, expected)!), 'draft.md'])
    expect(fs.statSync(oldVersionPath(path, expected)!).ino).toBe(expected.ino)
    await replacedFilesFreed()
    expect(await readFile(path, 'utf8')).toBe(withStatus(NOTE, 'done'))
    expect(await readdir(dir)).toEqual(['draft.md'])
  })

  it("a second name a killed run left behind (the same version's) is taken over: the note is replaced, no second name stays", async () => {
    const dir = await writeVault({ 'draft.md': NOTE })
    const path = join(dir, 'draft.md')
    const expected = await stampOf(path)
    fs.linkSync(path, oldVersionPath(path, expected)!)
    expect(replaceNoteSync(path, expected, withStatus(NOTE, 'done'), { fsync: false })).toMatchObject({ kind: 'replaced' })
    await replacedFilesFreed()
    expect(await readFile(path, 'utf8')).toBe(withStatus(NOTE, 'done'))
    expect(await readdir(dir)).toEqual(['draft.md'])
  })

  it("with a park folder, the old version leaves the note's folder at once and is unlinked from the park", async () => {
    const dir = await writeVault({ 'draft.md': NOTE, '00_plan-trace/trace.md': '' })
    const path = join(dir, 'draft.md')
    const expected = await stampOf(path)
    replaceNoteSync(path, expected, withStatus(NOTE, 'done'), { fsync: false, park: join(dir, '00_plan-trace') })
    // Looked at at once: nothing beside the note; the old version (still not freed) waits in the park under a temporary name.
    expect(fs.readdirSync(dir).sort()).toEqual(['00_plan-trace', 'draft.md'])
    const parked = fs.readdirSync(join(dir, '00_plan-trace')).filter((name) => name !== 'trace.md')
    expect(parked).toHaveLength(1)
    expect(parked[0]).toMatch(/^\.vaultplan-tmp-/)
    expect(fs.statSync(join(dir, '00_plan-trace', parked[0]!)).ino).toBe(expected.ino)
    await replacedFilesFreed()
    expect(await readdir(join(dir, '00_plan-trace'))).toEqual(['trace.md'])
    expect(await readFile(path, 'utf8')).toBe(withStatus(NOTE, 'done'))
  })

  it('a note saved since the version the run read is not written (`changed`)', async () => {
    const dir = await writeVault({ 'draft.md': NOTE })
    const path = join(dir, 'draft.md')
    const expected = await stampOf(path)
    saveInPlace(path, SAVED)
    expect(replaceNoteSync(path, expected, withStatus(NOTE, 'done'), { fsync: false })).toEqual({ kind: 'changed' })
    expect(await readFile(path, 'utf8')).toBe(SAVED)
    expect(await readdir(dir)).toEqual(['draft.md'])
  })

  it("a run killed before it put a caught save back: the next open puts the person's bytes back, with the note's status", async () => {
    const dir = await writeVault({ 'draft.md': NOTE })
    const path = join(dir, 'draft.md')
    const expected = await stampOf(path)
    // What a kill right after the rename leaves: the old version under its second name, the person's save in it.
    const old = oldVersionPath(path, expected)!
    fs.linkSync(path, old)
    fs.writeFileSync(join(dir, 'new.tmp'), withStatus(NOTE, 'active'))
    fs.renameSync(join(dir, 'new.tmp'), path)
    saveInPlace(old, SAVED)
    // The run's version was written a moment before the person's save.
    olderThan(path, old)
    await recoverOldVersions(dir)
    expect(await readFile(path, 'utf8')).toBe(withStatus(SAVED, 'active'))
    expect((await readdir(dir)).filter((name) => name.startsWith(OLD_VERSION_PREFIX))).toEqual([])
  })

  it('a run killed before its rename, while a person keeps typing into the note: the second name goes at the next open, their bytes stay', async () => {
    const dir = await writeVault({ 'draft.md': NOTE })
    const path = join(dir, 'draft.md')
    // What a kill before the rename leaves: a second name of the note's own file, which the person's saves change with it.
    fs.linkSync(path, oldVersionPath(path, await stampOf(path))!)
    // Their editor writes a line every 100 ms, for longer than a save is waited for to settle (3 s).
    const type = () => fs.appendFileSync(path, 'A line they typed.\n')
    type()
    const typing = setInterval(type, 100)
    try {
      await recoverOldVersions(dir)
    } finally {
      clearInterval(typing)
    }
    expect((await readdir(dir)).filter((name) => name.startsWith(OLD_VERSION_PREFIX))).toEqual([])
    expect(await readFile(path, 'utf8')).toMatch(/^---\nstatus: pending\n---\n# Draft\n\nThe words a person wrote.\n(A line they typed.\n)+$/)
  })

  it('an old version nobody saved into is only removed; a note saved after it by a person stays as it is', async () => {
    const dir = await writeVault({ 'draft.md': NOTE, 'review.md': NOTE })
    const untouched = oldVersionPath(join(dir, 'draft.md'), await stampOf(join(dir, 'draft.md')))!
    fs.linkSync(join(dir, 'draft.md'), untouched)
    const review = join(dir, 'review.md')
    const superseded = oldVersionPath(review, await stampOf(review))!
    fs.renameSync(review, superseded)
    saveInPlace(superseded, SAVED)
    await writeFile(review, withStatus(SAVED, 'done') + 'And a later save of theirs.\n')
    olderThan(superseded, review)
    await recoverOldVersions(dir)
    expect(await readFile(join(dir, 'draft.md'), 'utf8')).toBe(NOTE)
    expect(await readFile(review, 'utf8')).toBe(withStatus(SAVED, 'done') + 'And a later save of theirs.\n')
    expect((await readdir(dir)).sort()).toEqual(['draft.md', 'review.md'])
  })

  it("a run's status rewrite that catches a save under way keeps the person's line, and the run goes on", async () => {
    const dir = await writeVault({
      'a.md': '---\ntype: start\n---\n# A\n\nThe first note.\n\n## Next\n- [[b]]\n',
      'b.md': '# B\n\nThe last note, which a person is editing.\n',
    })
    const path = join(dir, 'b.md')
    let armed = true
    const work = scriptedWorker((input) => {
      // While `a` is worked, arm the save to land in the middle of the next note rewrite of `b`.
      if (input.node.id === 'a' && armed) {
        armed = false
        between.path = path
        between.save = () => {
          const now = fs.readFileSync(path, 'utf8')
          saveInPlace(path, now.replace('editing.\n', 'editing.\nTheir line, saved as the run wrote the status.\n'))
        }
      }
      return `output of ${input.node.id}`
    })
    const result = await runPlan(dir, { query: 'Walk', fsync: false, work, llm: noJudge() })
    expect(result).toMatchObject({ status: 'completed', lastNode: 'b' })
    const text = await readFile(path, 'utf8')
    expect(text).toContain('Their line, saved as the run wrote the status.\n')
    expect(text).toMatch(/^---\nstatus: done\n---\n/)
    expect((await readdir(dir)).filter((name) => name.startsWith('.'))).toEqual([])
    expect((await stat(path)).isFile()).toBe(true)
  })
})

const JOURNAL = `## Journal\n\n${'What the person wrote about the plan, while they decided. '.repeat(20)}\nTHE END OF THE JOURNAL\n`

/**
 * A decision on a proposal while the person's editor saves it in place and
 * is descheduled right after a line break, for longer than a read waits
 * (100 ms): `decide` reads the first part as the whole note, decides on it
 * and renames its version over the note. While the rewrite watches the old
 * version, the editor writes the rest of its save there; then, having
 * reloaded the note it shows (the decision's version), it saves that again
 * in place, unchanged, a clock tick later; `again`: and once more as the
 * person's save is put back.
 */
async function decideWhileSaved(again: boolean): Promise<{ vault: string; text: string }> {
  const llm = scriptedJudge(() => '## research\ntype: start\nFind three sources.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft.\n')
  const vault = await proposePlan('Write a post about tide pools', { into: join(await tempDir(), 'post'), llm, fsync: false })
  const path = join(vault, '00_plan-trace', 'proposal.md')
  const saved = `${await readFile(path, 'utf8')}\n${JOURNAL}`
  await writeFile(path, saved)
  const cut = saved.indexOf('## Journal')
  const editor = fs.openSync(path, 'w')
  fs.writeSync(editor, saved.slice(0, cut))
  between.path = path
  between.save = () => {
    watch.armed = async () => {
      fs.writeSync(editor, saved.slice(cut))
      fs.closeSync(editor)
      const shown = fs.readFileSync(path, 'utf8')
      await until(() => Date.now() - fs.statSync(path).mtimeMs > 20, "the clock to move past the decision's write")
      saveInPlace(path, shown)
      if (again) between.save = () => saveInPlace(path, fs.readFileSync(path, 'utf8'))
    }
  }
  await decide(vault, 'proposal', { edge: 'approve', feedback: 'Looks right.' })
  expect([watch.armed, between.save]).toEqual([undefined, undefined])
  return { vault, text: await readFile(path, 'utf8') }
}

describe('a save paused past the settle window, finished while the rewrite watches the old version', () => {
  it("a decision on a proposal read mid-save, then saved again by the person's editor as it showed it, loses nothing of theirs", async () => {
    const { vault, text } = await decideWhileSaved(false)
    expect(text).toContain(JOURNAL)
    expect(text).toMatch(/- \[x\] approve/)
    expect(text.split('Looks right.').length - 1).toBe(1)
    expect((await readdir(join(vault, '00_plan-trace'))).filter((name) => name.startsWith(OLD_VERSION_PREFIX))).toEqual([])
  })

  it('and saved again as it showed it just as the save is put back: the save is put back over that one too', async () => {
    const { vault, text } = await decideWhileSaved(true)
    expect(text).toContain(JOURNAL)
    expect(text).toMatch(/- \[x\] approve/)
    expect(text.split('Looks right.').length - 1).toBe(1)
    expect((await readdir(join(vault, '00_plan-trace'))).filter((name) => name.startsWith(OLD_VERSION_PREFIX))).toEqual([])
  })
})
