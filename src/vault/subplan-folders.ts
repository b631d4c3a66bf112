import { posix } from 'node:path'
import type { ParsedNote } from './parse-note.js'
import type { PlanIssue } from '../core/types.js'
import { closestNames, didYouMean } from '../core/closest-names.js'

/*
 * Which notes of a vault belong to a subplan: a note with
 * `plan: <folder>` is worked by running that folder as a plan of its own, so
 * the notes in that folder are no nodes of the parent. One rule, used by the
 * loader, the session's rescans and the copy of a template.
 */

/** The knob value that asks the planner to write the subplan (`plan: generate`). */
export const GENERATE = 'generate'

/**
 * How deep subplans nest: the top vault's subplans are 1 deep, theirs 2, and
 * so on. A folder nested deeper is `invalid-subplan`; a `plan: generate`
 * note of a subplan this deep is worked as a plain step, not decomposed.
 */
export const MAX_SUBPLAN_DEPTH = 8

/** Whether a note's `plan:` asks for decomposition (`plan: generate`) rather than naming folders. */
export function isGenerate(plan: readonly string[] | undefined): boolean {
  return plan?.length === 1 && plan[0] === GENERATE
}

/** Whether a note of a vault nested `depth` deep runs subplans when worked: a `plan: generate` note as deep as subplans nest is worked as a plain step. */
export function runsSubplans(note: { plan?: readonly string[] | undefined }, depth: number): boolean {
  return note.plan !== undefined && !(depth >= MAX_SUBPLAN_DEPTH && isGenerate(note.plan))
}

/** Why the `plan: generate` notes of a vault nested `depth` deep are worked as plain steps; `undefined` when none is. */
export function tooDeepToDecompose(notes: Iterable<{ id: string; plan?: readonly string[] | undefined }>, depth: number): string | undefined {
  const ids = [...notes].filter((note) => note.plan !== undefined && !runsSubplans(note, depth)).map((note) => `\`${note.id}\``)
  if (ids.length === 0) return undefined
  return `subplans nest at most ${MAX_SUBPLAN_DEPTH} deep: ${ids.join(', ')} ${ids.length === 1 ? 'is' : 'are'} worked as a plain step, not decomposed`
}

/** One folder a note's `plan:` names: as written, and as a path relative to the vault (`''` when it leaves the vault). */
export interface SubplanFolder {
  written: string
  /** `research` or `steps/research`, `/` between folders, no trailing `/`. */
  folder: string
  /** Set when the folder leads outside the vault. */
  outside: boolean
}

/**
 * The folders a note's `plan:` names, relative to the vault: each relative to
 * the note's folder (`research.md` with `plan: research` -> `research`), and
 * for `plan: generate` the folder named like the note.
 */
export function subplanFoldersOf(note: { file?: string | undefined; id: string; plan?: readonly string[] | undefined }): SubplanFolder[] {
  if (!note.plan) return []
  const file = note.file ?? `${note.id}.md`
  const here = posix.dirname(file.replace(/\\/g, '/'))
  if (isGenerate(note.plan)) return [{ written: GENERATE, folder: file.replace(/\\/g, '/').replace(/\.md$/i, ''), outside: false }]
  return note.plan.map((written) => {
    const path = written.replace(/\\/g, '/')
    const folder = posix.normalize(posix.join(here, path)).replace(/\/+$/, '')
    const outside = posix.isAbsolute(path) || folder === '..' || folder.startsWith('../')
    return { written, folder: outside ? '' : folder === '.' ? '' : folder, outside }
  })
}

/** Whether `file` (a vault-relative path) lies inside `folder`. */
export function isInFolder(file: string, folder: string): boolean {
  return folder === '' || file.startsWith(`${folder}/`)
}

/** The notes of a vault split into the plan's own and those of its subplan folders, with what is wrong with a `plan:`. */
export interface SplitNotes {
  /** The parent's notes. */
  own: ParsedNote[]
  /** Per subplan folder (vault-relative), the notes inside it. */
  inner: Map<string, ParsedNote[]>
  /** `invalid-subplan` errors. */
  issues: PlanIssue[]
}

/**
 * Splits a vault's notes: the notes inside a folder some note's `plan:`
 * names are the subplan's, not the parent's. A folder that leads outside the
 * vault, holds the note itself, has no notes, is claimed twice, or would nest
 * deeper than {@link MAX_SUBPLAN_DEPTH} is `invalid-subplan`. Shallow notes
 * claim first, so a subplan's own `plan:` knobs are its business, not the
 * parent's.
 *
 * @param nesting - how deep the vault of `notes` is nested in the top vault (0: it is the top vault)
 */
export function splitSubplans(notes: readonly ParsedNote[], nesting = 0): SplitNotes {
  const claimers = notes.filter((note) => note.plan !== undefined).sort((a, b) => depth(a.file) - depth(b.file))
  const folders = new Map<string, ParsedNote>()
  const issues: PlanIssue[] = []
  const report = (note: ParsedNote, message: string) => {
    const at = note.origin.keys.get('plan')
    issues.push({ code: 'invalid-subplan', severity: 'error', message, node: note.id, file: note.file, ...(at && { line: at.line, column: at.column }) })
  }
  const claimed = new Set(claimers.flatMap((note) => subplanFoldersOf(note).map(({ folder }) => folder)))
  for (const note of claimers) {
    if ([...folders.keys()].some((folder) => isInFolder(note.file, folder))) continue
    for (const { written, folder, outside } of subplanFoldersOf(note)) {
      const named = `\`plan: ${written}\``
      if (outside) report(note, `${named} leads outside the vault; a subplan is a folder inside it, beside the note`)
      else if (folder === '' || isInFolder(note.file, folder))
        report(note, `${named} is a folder that holds this note itself: a plan cannot be nested in a subplan of itself; name a folder beside the note`)
      else if (folders.has(folder)) report(note, `${named} is already the subplan of \`${folders.get(folder)!.file}\`; a folder is the subplan of one note`)
      else if ([...folders.keys()].some((other) => isInFolder(other, folder) || isInFolder(folder, other)))
        report(note, `${named} overlaps another note's subplan folder; give each subplan a folder of its own`)
      else {
        folders.set(folder, note)
        const generate = isGenerate(note.plan)
        const filled = notes.some((other) => isInFolder(other.file, folder))
        // A `plan: generate` this deep with no notes yet is worked as a plain step: nothing nests deeper.
        if (nesting >= MAX_SUBPLAN_DEPTH && (filled || !generate))
          report(
            note,
            `${named} would nest a subplan ${nesting + 1} deep; subplans nest at most ${MAX_SUBPLAN_DEPTH} deep: move its notes up a level or work this note as a plain step`,
          )
        else if (!generate && !filled) {
          // A typo (`plan: reserch` beside `research/`): that folder is the subplan meant, so its notes are not the parent's (its start no second start).
          const meant = closestNames(posix.basename(folder), foldersBeside(notes, folder)).filter(
            (name) => !claimed.has(posix.join(posix.dirname(folder), name)),
          )
          const guess = meant.length === 1 ? posix.join(posix.dirname(folder), meant[0]!) : undefined
          if (guess !== undefined && ![...folders.keys()].some((other) => isInFolder(other, guess) || isInFolder(guess, other))) folders.set(guess, note)
          const fix = meant.length > 0 ? `${didYouMean(meant)} Else create` : 'create'
          report(note, `${named}: the folder \`${folder}/\` is missing or holds no notes; ${fix} it with the subplan's notes (or write \`plan: generate\`)`)
        }
      }
    }
  }
  const own: ParsedNote[] = []
  const inner = new Map<string, ParsedNote[]>([...folders.keys()].map((folder) => [folder, []]))
  if (folders.size === 0) return { own: [...notes], inner, issues }
  for (const note of notes) {
    const folder = [...folders.keys()].find((each) => isInFolder(note.file, each))
    if (folder === undefined) own.push(note)
    else inner.get(folder)!.push(note)
  }
  return { own, inner, issues }
}

/** The names of the folders beside `folder` (in its parent folder) that hold notes. */
function foldersBeside(notes: readonly ParsedNote[], folder: string): Set<string> {
  const parent = posix.dirname(folder) === '.' ? '' : `${posix.dirname(folder)}/`
  const names = new Set<string>()
  for (const note of notes) {
    if (!note.file.startsWith(parent)) continue
    const rest = note.file.slice(parent.length)
    if (rest.includes('/')) names.add(rest.slice(0, rest.indexOf('/')))
  }
  return names
}

/** A note of a subplan folder as the subplan reads it: its id and file relative to the folder. */
export function rerooted(note: ParsedNote, folder: string): ParsedNote {
  const cut = (path: string) => (path.startsWith(`${folder}/`) ? path.slice(folder.length + 1) : path)
  return {
    ...note,
    id: cut(note.id),
    file: cut(note.file),
    issues: note.issues.map((issue) => ({
      ...issue,
      ...(issue.file !== undefined && { file: cut(issue.file) }),
      ...(issue.node !== undefined && { node: cut(issue.node) }),
    })),
  }
}

/** An issue of a subplan, told with paths relative to the vault that holds the subplan's folder. */
export function issueFromSubplan(issue: PlanIssue, folder: string): PlanIssue {
  const found: PlanIssue = { ...issue }
  if (issue.file !== undefined) found.file = `${folder}/${issue.file}`
  if (issue.node !== undefined) found.node = `${folder}/${issue.node}`
  if (issue.file === undefined) found.message = `in the subplan \`${folder}/\`: ${issue.message}`
  return found
}

function depth(file: string): number {
  return file.split('/').length
}
