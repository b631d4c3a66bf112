import { lstat, readdir, readFile, rename, rm, rmdir } from 'node:fs/promises'
import { dirname, join, posix } from 'node:path'
import { RunStateError } from '../../core/errors.js'
import type { PlanIssue } from '../../core/types.js'
import { makeFolder, writeFileAtomic } from '../../vault/fs-atomic.js'
import type { VaultLock } from '../../vault/lock.js'
import type { ParsedNote } from '../../vault/parse-note.js'
import { pathInVault } from '../../vault/path-gate.js'
import { runFilePath } from '../../vault/run-file-path.js'
import { TRACE_FOLDER } from '../../vault/run-folder.js'
import { unwritable, type Unwritable } from '../../vault/writable-path.js'

/** A note an edit writes: its file, its text now (none for a new note) and after. */
export interface NoteWrite {
  id: string
  file: string
  before: string | undefined
  after: string
  note: ParsedNote
}

/** The vault's folder of deleted notes, as Obsidian keeps it. */
export const TRASH_FOLDER = '.trash'
/** Where a replaced note is copied first: `00_plan-trace/edits/<n>/`. */
const EDITS_FOLDER = `${TRACE_FOLDER}/edits`

/** What a person does about each reason a note cannot be written. */
const REMEDY: Record<Unwritable['kind'], string> = {
  'name-too-long': 'give it a shorter id',
  'path-too-long': 'give it a shorter id',
  'reserved-name': 'give it another id',
  'folder-in-the-way': 'give it another id, or move the folder',
  'file-in-the-way': 'give it another id, or move the file',
  'not-writable': 'let this process write there, or edit another vault',
}

/**
 * The notes of an edit that cannot be written where they go (see
 * `unwritable`), as diagnostics: a note to write, the copy of a note to
 * replace, the place in `.trash/` of a note to remove. Looked at before the
 * first write, so that an edit that would fail part way is refused whole.
 */
export async function unwritableIssues(dir: string, changed: readonly NoteWrite[], removing: readonly ParsedNote[]): Promise<PlanIssue[]> {
  const copies = `${EDITS_FOLDER}/${(await lastCopies(dir)) + 1}`
  const places = [
    ...changed.map((write) => ({ id: write.id, file: write.file, at: write.file, as: 'written to' })),
    ...changed.filter((write) => write.before !== undefined).map((write) => ({ id: write.id, file: write.file, at: `${copies}/${write.file}`, as: 'kept as' })),
  ]
  for (const note of removing) places.push({ id: note.id, file: note.file, at: await trashFile(dir, note.file), as: 'moved to' })
  const issues: PlanIssue[] = []
  for (const { id, file, at, as } of places) {
    const why = await unwritable(dir, at)
    if (why === undefined || issues.some((issue) => issue.node === id)) continue
    const message = `the note \`${id}\` would be ${as} \`${at}\`, ${why.message}; ${REMEDY[why.kind]}`
    issues.push({ code: 'unwritable-note', severity: 'error', message, node: id, file })
  }
  return issues
}

/** One thing an edit did, as it is undone. */
type Done = { kind: 'write'; path: string; write: NoteWrite; made: string | undefined } | { kind: 'move'; from: string; to: string }

/**
 * Writes an edit checked already: the notes to replace copied first, then
 * the notes, then the removals. A call cut short (a kill) is completed by
 * its repeat; a write that fails is undone: the notes written get their
 * text back (a note a person changed since is left as the person left it),
 * the notes moved to `.trash/` come back, the copies made are removed.
 *
 * @returns the number of the copies' folder under `00_plan-trace/edits/`, `undefined` when no note is replaced
 * @throws the error of the write that failed, once the edit is undone; {@link RunStateError} `vault-lock-lost` as it is (a repeat completes the edit)
 */
export async function writeEdit(dir: string, changed: readonly NoteWrite[], removing: readonly ParsedNote[], lock: VaultLock): Promise<number | undefined> {
  const done: Done[] = []
  let copies: { number: number; made: boolean } | undefined
  try {
    copies = await copyReplaced(dir, changed)
    for (const write of changed) {
      lock.check()
      const path = await pathInVault(dir, write.file)
      const made = await makeFolder(dirname(path))
      await writeFileAtomic(path, write.after)
      done.push({ kind: 'write', path, write, made })
    }
    for (const note of removing) {
      lock.check()
      const from = await pathInVault(dir, note.file)
      const to = runFilePath(dir, await trashFile(dir, note.file))
      await rename(from, to)
      done.push({ kind: 'move', from, to })
    }
  } catch (error) {
    if (error instanceof RunStateError && error.code === 'vault-lock-lost') throw error
    await undo(dir, done.reverse(), copies?.made ? copies.number : undefined, error)
    throw error
  }
  return copies?.number
}

/** Undoes what an edit did, last first; the copies' folder goes last, once every note is back. */
async function undo(dir: string, done: readonly Done[], copies: number | undefined, cause: unknown): Promise<void> {
  try {
    let changedSince = false
    for (const step of done) {
      if (step.kind === 'move') {
        await rename(step.to, step.from)
        continue
      }
      const now = await readFile(step.path, 'utf8').catch(() => undefined)
      // Changed since it was written: a person's text, which stays, and so do the copies of the notes as they were.
      if (now !== step.write.after) {
        changedSince = true
        continue
      }
      if (step.write.before !== undefined) await writeFileAtomic(step.path, step.write.before)
      else {
        await rm(step.path, { force: true })
        if (step.made !== undefined) await removeEmptyFolders(dirname(step.path), step.made)
      }
    }
    if (copies !== undefined && !changedSince) await rm(join(dir, EDITS_FOLDER, String(copies)), { recursive: true, force: true })
  } catch (error) {
    const kept = copies === undefined ? '' : ` (the notes as they were are in \`${EDITS_FOLDER}/${copies}/\`)`
    throw new Error(
      `The edit of \`${dir}\` failed part way (${(cause as Error).message}) and could not be undone (${(error as Error).message})${kept}; call editPlan again with the same edit to complete it`,
      { cause },
    )
  }
}

/** Removes the folders a write made, from `folder` up to `made`, each only when empty. */
async function removeEmptyFolders(folder: string, made: string): Promise<void> {
  for (let at = folder; at.length >= made.length; at = dirname(at)) {
    if (
      !(await rmdir(at).then(
        () => true,
        () => false,
      ))
    )
      return
  }
}

/** The highest number among the folders of `00_plan-trace/edits/`, 0 for none. */
async function lastCopies(dir: string): Promise<number> {
  const numbers = (await readdir(join(dir, EDITS_FOLDER)).catch(() => [] as string[])).filter((name) => /^[1-9]\d*$/.test(name)).map(Number)
  return numbers.length > 0 ? Math.max(...numbers) : 0
}

/**
 * Copies the notes about to be replaced into `00_plan-trace/edits/<n>/`, `n`
 * the next free number; none when the last such folder holds them as they
 * are (a repeated call after a kill).
 *
 * @returns `n` and whether this call made the folder, or `undefined` when no note is replaced
 */
async function copyReplaced(dir: string, changed: readonly NoteWrite[]): Promise<{ number: number; made: boolean } | undefined> {
  const replaced = changed.filter((write): write is NoteWrite & { before: string } => write.before !== undefined)
  if (replaced.length === 0) return undefined
  const last = await lastCopies(dir)
  if (last > 0) {
    const kept = await Promise.all(
      replaced.map((write) =>
        readFile(join(dir, EDITS_FOLDER, String(last), write.file), 'utf8').then(
          (text) => text === write.before,
          () => false,
        ),
      ),
    )
    if (kept.every(Boolean)) return { number: last, made: false }
  }
  const copies = { number: last + 1, made: true }
  try {
    for (const write of replaced) await writeFileAtomic(runFilePath(dir, `${EDITS_FOLDER}/${copies.number}/${write.file}`), write.before)
  } catch (error) {
    await rm(join(dir, EDITS_FOLDER, String(copies.number)), { recursive: true, force: true })
    throw error
  }
  return copies
}

/** Where a removed note goes, relative to the vault: `.trash/<file>`, or `.trash/<name> <k>.md` when that is taken. */
async function trashFile(dir: string, file: string): Promise<string> {
  const { dir: folder, name } = posix.parse(file)
  const within = folder === '' ? TRASH_FOLDER : `${TRASH_FOLDER}/${folder}`
  for (let k = 0; ; k++) {
    const path = `${within}/${name}${k === 0 ? '' : ` ${k}`}.md`
    if (
      !(await lstat(join(dir, path)).then(
        () => true,
        () => false,
      ))
    )
      return path
  }
}
