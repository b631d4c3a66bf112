import { createHash } from 'node:crypto'
import { readdir, readFile } from 'node:fs/promises'
import { join, posix, resolve } from 'node:path'
import { PlanValidationError, RunStateError } from '../../core/errors.js'
import type { PlanIssue } from '../../core/types.js'
import { graphFromNotes } from '../../plan/load-plan.js'
import type { PlanGraph } from '../../plan/plan-graph.js'
import { documentNotes } from '../../plan/plan-document.js'
import { reservedPathIssues } from '../../plan/save-plan.js'
import { readTrace, TraceAppender } from '../../store/trace.js'
import { assertFolder } from '../../vault/fs-atomic.js'
import { withVaultLock, type VaultLock } from '../../vault/lock.js'
import { parseNote, type ParsedNote } from '../../vault/parse-note.js'
import { pathInVault } from '../../vault/path-gate.js'
import { readNotes } from '../../vault/read-vault.js'
import { subplanTree } from '../../plan/subplan-tree.js'
import { replacedNoteText } from './replaced-note.js'
import { placedAfter } from './place-after.js'
import { decompositions, edgesAlone, knobsAlone, type Decomposed, type Replacing } from './decomposition.js'
import { TRASH_FOLDER, unwritableIssues, writeEdit, type NoteWrite } from './edit-writes.js'
import { observeRun } from '../read/observe-run.js'
import { visitsOfSnapshot } from '../core/run-snapshot.js'

/** What {@link editPlan} changes in a plan. */
export interface PlanEdit {
  /**
   * A plan document (`## <note>` sections, as `parsePlanDocument` reads
   * them): a section for a note the vault holds replaces its knobs, title,
   * body and `## Next`; any other section adds a note (`## web/search`: a
   * note of the subplan folder `web`).
   */
  document?: string
  /** Notes to delete, by id (the path from the vault without `.md`); each must have no visits in the run. */
  remove?: string[]
  /**
   * A note of the plan the document's notes go after, in a row: it leads to
   * the first, each to the next, the last to where it led; a note of the
   * plan among them moves there (the notes that led to it lead where it
   * led). Adding to a queue or reordering it restates no other note. The
   * note named must have one way on, or none; the document's sections name
   * no `### Next` of their own.
   */
  after?: string
}

/** Options of {@link editPlan}. */
export interface EditPlanOptions {
  /** Who edits (an agent's name, a person's): recorded in the trace. */
  agent?: string
}

/** What {@link editPlan} did, by note id: the notes of the document, as they now stand, and the notes removed. */
export interface PlanEditResult {
  written: string[]
  removed: string[]
}

/**
 * Edits a plan vault, as a person would in their notes app: adds notes,
 * replaces the knobs, title, body and `## Next` of existing ones, removes
 * notes never visited. A replaced note changes only there: its `status:`,
 * every frontmatter key the section does not set (comments, style and
 * blank lines too) and its other `## ` sections (`## Feedback`) stay as
 * they are, byte for byte.
 * Nothing a person wrote is lost: a replaced note is first copied to
 * `00_plan-trace/edits/<n>/`, a removed one moved to the vault's `.trash/`.
 * The plan as it would be after the edit is validated first, and every
 * file it would write looked at; a valid edit writes the notes (all of
 * them or none: a write that fails is undone) and, when the vault holds a
 * run, one `edit` record in the trace of the plan folder holding the notes
 * (a subplan's own trace for its notes). It holds the vault's lock meanwhile.
 * A step being worked may be decomposed by the agent holding it (`options.agent`):
 * its section gives it `plan: <folder>` and knob lines alone, and the document the
 * folder's notes (`## <folder>/<note>`); its title, body and edges stay, and the
 * next `nextStep` walks into the subplan. A call cut short (a kill)
 * is completed by calling it again with the same edit; a running plan
 * follows the edit from its next hop.
 *
 * @returns the notes of the document and the notes removed, by id; a repeated call resolves the same
 * @throws {@link PlanValidationError} when the plan after the edit would be invalid, or a note cannot be written where
 *   it goes (`unwritable-note`: a name too long, a folder in its place, ...); nothing is written
 * @throws the error of a write that failed anyway (a full disk), once what the edit wrote is undone
 * @throws {@link RunStateError} `visited-note` for a note to remove that has visits in the run, `note-in-use` for a
 *   note to replace or remove that is `active` (claimed) or `waiting` (but a step its agent decomposes), `node-missing` for a note to remove that the
 *   vault does not hold, `vault-locked` when a runner in another process holds the vault (nothing is written for any)
 * @throws `TypeError` for an edit that is not `{ document?: string, remove?: string[], after?: string }`, a note both in
 *   the document and removed, or `after` without a document
 * @throws {@link PlanValidationError} `unplaceable-note` when `after` cannot put the notes there (see `PlanEdit.after`)
 */
export async function editPlan(vault: string, edit: PlanEdit, options: EditPlanOptions = {}): Promise<PlanEditResult> {
  const { written, removed } = await editPlanThen(vault, edit, options, async (done) => done)
  return { written, removed }
}

/** What an edit did, as `editPlanThen` hands it on: `editPlan`'s result, and the steps it decomposed. */
export interface EditDone extends PlanEditResult {
  decomposed: Decomposed[]
}

/**
 * {@link editPlan}, then `then` with what it did, under the same lock (not
 * exported by the package): the MCP's plan_edit moves the claim of a step
 * it decomposed to the subplan's start before any other call can take it.
 *
 * @throws as {@link editPlan}
 */
export async function editPlanThen<T>(
  vault: string,
  edit: PlanEdit,
  options: EditPlanOptions,
  then: (done: EditDone, lock: VaultLock) => Promise<T>,
): Promise<T> {
  checkEdit(vault, edit, options)
  const dir = resolve(vault)
  await assertFolder(dir)
  const sections = edit.document === undefined ? [] : documentNotes(edit.document)
  const remove = [...new Set(edit.remove ?? [])]
  const both = sections.find((section) => remove.includes(section.id))
  if (both) throw new TypeError(`Expected a note either in \`document\` or in \`remove\`, got \`${both.id}\` in both`)
  if (edit.after !== undefined && sections.length === 0) throw new TypeError('Expected a `document` with the notes to put after `after`')
  const input = createHash('sha256')
    .update(JSON.stringify(edit.after === undefined ? [edit.document ?? '', remove] : [edit.document ?? '', remove, edit.after]))
    .digest('hex')
  return withVaultLock(dir, async (lock) => then(await edited(dir, { sections, remove, input, agent: options.agent, after: edit.after }, lock), lock))
}

/** An edit as `editPlan` works it: the document's sections read alone, the ids to remove, a hash of both. */
interface WorkedEdit {
  sections: ReturnType<typeof documentNotes>
  remove: string[]
  input: string
  agent: string | undefined
  after: string | undefined
}

async function edited(dir: string, asked: WorkedEdit, lock: VaultLock): Promise<EditDone> {
  const { notes, issues } = await readNotes(dir)
  const byId = new Map(notes.map((note) => [note.id, note]))
  const edit = asked.after === undefined ? asked : await placed(dir, asked, notes, issues)
  const writes: NoteWrite[] = []
  const replacing: Replacing[] = []
  const found: PlanIssue[] = reservedPathIssues(edit.sections.filter((section) => !byId.has(section.id)))
  for (const section of edit.sections) {
    const existing = byId.get(section.id)
    const file = existing?.file ?? `${section.id}.md`
    const before = existing && (await readFile(await pathInVault(dir, file), 'utf8'))
    const replaced = existing && before !== undefined ? replacedNoteText(before, existing, section.text) : { text: section.text }
    if (replaced.problem !== undefined) found.push({ code: 'invalid-frontmatter', severity: 'error', message: replaced.problem, node: section.id, file })
    const after = replaced.text
    const parsed = parseNote(file, after)
    writes.push({ id: section.id, file, before, after, note: { ...parsed, issues: [...section.issues, ...parsed.issues] } })
    if (existing) replacing.push({ id: section.id, note: existing, after: parsed, knobsOnly: knobsAlone(section.text), edgesOnly: edgesAlone(section.text) })
  }
  const seen = new Set<string>()
  for (const { id } of edit.sections) {
    if (seen.has(id)) found.push({ code: 'duplicate-id', severity: 'error', message: `the document has two sections \`## ${id}\`; keep one`, node: id })
    seen.add(id)
  }
  if (found.length > 0) throw new PlanValidationError(found)
  const removing: ParsedNote[] = []
  for (const id of edit.remove) {
    const note = byId.get(id)
    if (note) removing.push(note)
    else if (!(await inTrash(dir, `${id}.md`))) {
      throw new RunStateError('node-missing', `Cannot remove \`${id}\`: the vault \`${dir}\` has no such note (a note's id is its path without \`.md\`)`, {
        node: id,
      })
    }
  }
  const changed = writes.filter((write) => write.before !== write.after)
  // A step being worked that gains `plan:` from the agent holding it is decomposed, not replaced: its subplan takes over its claim.
  const decomposed = await decompositions(
    dir,
    replacing.filter(({ id }) => changed.some((write) => write.id === id)),
    edit.agent,
  )
  // A note being worked may take new edges (a note put after it): its work goes on, the run follows them from its judge.
  const rewired = new Set(replacing.filter(({ note, edgesOnly }) => note.status === 'active' && edgesOnly).map(({ id }) => id))
  const splitting = new Set([...decomposed.map(({ node }) => node), ...rewired])
  refuseInUse([...changed.filter((write) => write.before !== undefined && !splitting.has(write.id)).map((write) => byId.get(write.id)!), ...removing])
  if (removing.length > 0) await refuseVisited(dir, removing)
  // The plan as it would be after the edit, checked before anything is written.
  const written = new Map(writes.map((write) => [write.id, write.note]))
  const gone = new Set(removing.map((note) => note.id))
  const after = [...notes.filter((note) => !gone.has(note.id) && !written.has(note.id)), ...written.values()]
  const graph = graphFromNotes(after, issues)
  const checked = graph.check()
  // Every file it would write, looked at before the first is: an edit is written whole or not at all.
  const unwritable = await unwritableIssues(dir, changed, removing)
  if (checked.errors.length > 0 || unwritable.length > 0) throw new PlanValidationError([...(checked.errors.length > 0 ? checked.issues : []), ...unwritable])

  lock.check()
  const copies = await writeEdit(dir, changed, removing, lock)
  const result = { written: writes.map((write) => write.id), removed: edit.remove }
  await recordEdit(dir, graph, edit, result, copies, changed.length + removing.length > 0)
  return { ...result, decomposed }
}

/** An edit with `after`: its sections as `placedAfter` puts them in a row, on the plan as it is now. */
async function placed(dir: string, edit: WorkedEdit, notes: ParsedNote[], issues: PlanIssue[]): Promise<WorkedEdit> {
  const texts = new Map<string, string>()
  for (const note of notes) texts.set(note.id, note.text ?? (await readFile(await pathInVault(dir, note.file), 'utf8')))
  const row = placedAfter(edit.sections, edit.after!, graphFromNotes(notes, issues), texts)
  if (row.issues.length > 0) throw new PlanValidationError(row.issues)
  return { ...edit, sections: row.sections }
}

/** Records the edit in the trace of each plan folder whose notes it names (a subplan's own trace for a note inside it), by their ids there. */
async function recordEdit(dir: string, graph: PlanGraph, edit: WorkedEdit, result: PlanEditResult, copies: number | undefined, wrote: boolean): Promise<void> {
  const folders = [...subplanTree(graph)].map(({ folder }) => folder).sort((a, b) => b.length - a.length)
  const folderOf = (id: string) => folders.find((folder) => folder === '' || id.startsWith(`${folder}/`)) ?? ''
  const inside = (ids: string[], folder: string) => ids.filter((id) => folderOf(id) === folder).map((id) => id.slice(folder === '' ? 0 : folder.length + 1))
  for (const folder of new Set([...result.written, ...result.removed].map(folderOf))) {
    const notes = { written: inside(result.written, folder), removed: inside(result.removed, folder) }
    // The copies are in the top vault's run folder: only its record names them.
    await record(folder === '' ? dir : join(dir, folder), edit, notes, folder === '' ? copies : undefined, wrote)
  }
}

/** Refuses to replace or remove notes that are worked or wait for a person. */
function refuseInUse(notes: ParsedNote[]): void {
  const busy = notes.filter((note) => note.status === 'active' || note.status === 'waiting')
  if (busy.length === 0) return
  const named = busy.map((note) => `\`${note.id}\` (${note.status})`).join(', ')
  throw new RunStateError(
    'note-in-use',
    `Cannot edit ${named}: a note being worked or waiting for a person is neither replaced nor removed; edit it once its visit is done (or decided), or leave it out of the edit`,
    { nodes: busy.map((note) => note.id) },
  )
}

/** Refuses to remove notes the run has visited: its trace and outputs name them. */
async function refuseVisited(dir: string, notes: ParsedNote[]): Promise<void> {
  const visits = visitsOfSnapshot(await observeRun(dir, { hops: 0 }))
  const visited = notes.filter((note) => (visits[note.id] ?? 0) > 0)
  if (visited.length === 0) return
  throw new RunStateError(
    'visited-note',
    `Cannot remove ${visited.map((note) => `\`${note.id}\``).join(', ')}: the run has visited ${visited.length === 1 ? 'it' : 'them'}, and its trace and outputs name ${visited.length === 1 ? 'it' : 'them'}; unlink ${visited.length === 1 ? 'it' : 'them'} from the plan instead (replace the notes that lead there)`,
    { nodes: visited.map((note) => note.id) },
  )
}

/** Whether `.trash/` holds a note of this file: removed by an earlier call of the same edit. */
async function inTrash(dir: string, file: string): Promise<boolean> {
  const { dir: folder, name } = posix.parse(file)
  const names = await readdir(join(dir, TRASH_FOLDER, folder)).catch(() => [] as string[])
  return names.some((entry) => entry === `${name}.md` || (entry.startsWith(`${name} `) && /^ \d+\.md$/.test(entry.slice(name.length))))
}

/** Appends the edit's record to a plan folder's trace, once: none when the folder holds no run, none again when a repeat changed nothing. */
async function record(dir: string, edit: WorkedEdit, result: PlanEditResult, copies: number | undefined, wrote: boolean): Promise<void> {
  const trace = await readTrace(dir)
  if (!trace) return
  if (!wrote && trace.edits?.some((earlier) => earlier.input === edit.input)) return
  const appender = await TraceAppender.open(dir, {})
  try {
    appender.appendEdit({
      kind: 'edit',
      at: new Date().toISOString(),
      ...(edit.agent !== undefined && { agent: edit.agent }),
      ...result,
      ...(copies !== undefined && { copies }),
      input: edit.input,
    })
  } finally {
    await appender.close()
  }
}

function checkEdit(vault: string, edit: PlanEdit, options: EditPlanOptions): void {
  if (typeof vault !== 'string' || vault === '') throw new TypeError(`Expected \`vault\` to be a folder path, got \`${String(vault)}\``)
  if (!edit || typeof edit !== 'object') throw new TypeError(`Expected the edit to be \`{ document?: string, remove?: string[] }\`, got \`${String(edit)}\``)
  if (edit.document !== undefined && typeof edit.document !== 'string')
    throw new TypeError(`Expected \`document\` to be a plan document string, got \`${typeof edit.document}\``)
  if (edit.after !== undefined && (typeof edit.after !== 'string' || edit.after === ''))
    throw new TypeError(`Expected \`after\` to be a note id, got \`${String(edit.after)}\``)
  if (edit.remove !== undefined && !(Array.isArray(edit.remove) && edit.remove.every((id) => typeof id === 'string' && id !== '')))
    throw new TypeError(`Expected \`remove\` to be a list of note ids, got \`${JSON.stringify(edit.remove)}\``)
  if (!options || typeof options !== 'object') throw new TypeError(`Expected \`options\` to be an object, got \`${String(options)}\``)
  if (options.agent !== undefined && (typeof options.agent !== 'string' || options.agent === ''))
    throw new TypeError(`Expected \`agent\` to be a non-empty name, got \`${String(options.agent)}\``)
}
