import { realpathSync } from 'node:fs'
import { PlanValidationError, RunStateError } from '../core/errors.js'
import type { FolderWatcher } from '../vault/folder-watch.js'
import { setFrontmatterStatus } from '../vault/frontmatter.js'
import { replacedFilesFreed } from '../vault/fs-atomic.js'
import type { EditOptions } from '../vault/edit-note.js'
import { graphFromNotes } from '../plan/load-plan.js'
import { readNotes } from '../vault/read-vault.js'
import { hasTraceFolder } from '../vault/run-folder.js'
import { NoteJournal } from './note-journal.js'
import { JournaledWrites } from './journaled-writes.js'
import { busyOr } from '../vault/settled-read.js'
import { parseNote, type ParsedNote } from '../vault/parse-note.js'
import { RunFiles } from './run-files.js'
import { HeldVersions, StatusIndex } from './held-versions.js'
import { NoteMirror } from './note-mirror.js'
import { NoteRewriter } from './note-rewriter.js'
import { renderOutput, writeOutputNote, type OutputMeta } from './output-note.js'
import type { PlanGraph } from '../plan/plan-graph.js'
import { emptyTaskBoxes, markHandedOn } from '../vault/note-edits.js'
import { countLines } from '../core/text.js'
import type { NodeStatus, PlanIssue } from '../core/types.js'
import type { SessionCache } from './session-cache.js'
import type { SessionOptions } from './session-options.js'

/**
 * A plan vault kept in memory while a run walks it: its graph, and the
 * careful writes a run makes into people's notes (a status, emptied task
 * boxes, output notes). Edits people make in their notes app are picked up
 * from the next hop (the notes are kept in step with the disk by
 * `NoteMirror`), so a hop where nothing changed costs no work proportional
 * to the vault's size.
 */
export class VaultSession {
  graph: PlanGraph
  readonly held = new HeldVersions()
  /** The notes as last read, kept in step with the disk. */
  private readonly files: NoteMirror
  /** The careful rewrites of people's notes, to where each note's writes go. */
  private readonly notes: NoteRewriter
  private readonly watchers: FolderWatcher[] = []
  private readonly statuses = new StatusIndex()
  /** What the hops journaled and is not written yet, and the journal. */
  private readonly writes: JournaledWrites
  /** A person's save an apply read made the plan invalid: the next refresh validates it. */
  private unvalidated = false

  private constructor(
    /** The vault's real path. */
    readonly root: string,
    private readonly options: SessionOptions,
    notes: ParsedNote[],
    issues: PlanIssue[],
    /** The run's write-ahead journal (see NoteJournal), when the vault has a run folder. */
    journal: NoteJournal | undefined,
    /** The run's trace and output notes, as last parsed. */
    readonly runFiles: RunFiles,
    graph?: PlanGraph,
  ) {
    this.writes = new JournaledWrites(root, options.fsync, journal)
    this.notes = new NoteRewriter(root, this.held, (file) => this.files.wrote(file))
    this.files = new NoteMirror(root, this.held, notes, issues, (file) => this.notes.forget(file))
    this.graph = graph ?? graphFromNotes(notes, issues)
  }

  /**
   * Reads the vault and starts watching it. With `fsync`, first repairs what
   * a power cut tore from the journal (call it holding the vault's lock).
   * With `cache`, a session an earlier call kept for this vault (in this
   * process) is taken from it and brought up to date with the disk by
   * `NoteMirror.resync` instead of every note being read and parsed again;
   * its journal too, unread while no other call changed it.
   */
  static async open(root: string, options: SessionOptions, cache?: SessionCache<VaultSession>): Promise<VaultSession> {
    // Synchronous, as every look at the vault a call makes: a turn of the thread pool cost more than the look.
    const real = realpathSync.native(root)
    const kept = cache?.take(real)
    const journal = hasTraceFolder(real) ? NoteJournal.open(real, { fsync: options.fsync }, kept?.writes.journal) : undefined
    let session: VaultSession
    if (kept) {
      session = new VaultSession(real, options, [...kept.files.notes.values()], kept.files.issues, journal, kept.runFiles, kept.graph)
      session.held.copyFrom(kept.held)
      if (await session.files.resync()) session.rebuild()
    } else {
      const at = Date.now()
      const { notes, issues } = await readNotes(real)
      session = new VaultSession(real, options, notes, issues, journal, new RunFiles(real))
      for (const note of notes) session.held.remember(note, at)
    }
    // The statuses of the hops a killed run journaled and did not apply: applied as any other, by the careful rewrite.
    if (journal && journal.unapplied.size > 0) {
      for (const [file, status] of journal.unapplied) {
        const node = [...session.graph.nodes.values()].find((each) => each.file === file)
        if (node) session.defer(node.id, file, status as NodeStatus, true)
      }
      session.rebuild()
    }
    if (options.watch ?? true) session.watchers.push(...session.files.watch())
    return session
  }

  /** How many notes the session holds. */
  get size(): number {
    return this.files.notes.size
  }

  /** Ids of the notes with this status now, in vault order; kept until a status or a note changes. */
  withStatus(status: NodeStatus): string[] {
    return this.statuses.withStatus(this.graph, status)
  }

  /** Validates the plan as it is now; throws `PlanValidationError` on errors, `note-busy` when a note left out mid-save may be why. */
  validate(): PlanIssue[] {
    const { tools, checks } = this.options
    return busyOr(() => this.graph.validate({ ...(tools && { tools }), ...(checks && { checks }) }))
  }

  /**
   * Picks up edits: files the watchers reported and the notes of `ids` are
   * re-read when their stamp changed; the graph is rebuilt and validated
   * only when something did.
   *
   * @throws {@link PlanValidationError} when an edit made the plan invalid.
   */
  async refresh(ids: string[]): Promise<boolean> {
    const files: string[] = []
    for (const id of ids) {
      const file = this.graph.nodes.get(id)?.file
      if (file !== undefined) files.push(file)
    }
    if (!(await this.files.pickUp(files)) && !this.unvalidated) return false
    await this.rebuildAndValidate()
    return true
  }

  /**
   * Sets a node's status in its note, through `editNote` (the one careful
   * rewrite of a person's note): only the status value is patched, and a
   * note a person changed is read again (an edit made a moment earlier
   * survives, a save paused mid-way too). The version the session holds is
   * taken as the note's without a stat, since the replace compares its
   * stamp anyway. With the journal, its copy of the note is flushed before
   * the rename instead of the note. `justRefreshed`: `refresh([id])` ran
   * right before, with nothing awaited since, so its stamp comparison
   * stands when there is nothing to write.
   *
   * @returns the note's id now (a note a person renamed meanwhile is followed)
   * @throws {@link RunStateError} `status-unwritable` when the frontmatter cannot be patched; `note-busy` when the note kept changing; `node-missing` when it was deleted
   */
  async setStatus(id: string, status: NodeStatus, options: { justRefreshed?: boolean } = {}): Promise<string> {
    const file = this.graph.node(id).file ?? `${id}.md`
    const refreshed = options.justRefreshed === true && this.files.verified === file
    this.files.verified = undefined
    const journal = this.writes.journal
    const patch = (text: string) => {
      try {
        return setFrontmatterStatus(text, status)
      } catch (error) {
        throw new RunStateError(
          'status-unwritable',
          `Cannot write \`status: ${status}\` into \`${file}\`: ${(error as Error).message}. The note is unchanged; fix its frontmatter and run again.`,
          { file, status },
          { cause: error },
        )
      }
    }
    // The note's data is flushed before the rename, or the journal holds its bytes.
    const how: Pick<EditOptions, 'trust' | 'fsync' | 'beforeWrite'> = { trust: refreshed ? 'confirmed' : true, fsync: this.options.fsync && !journal }
    // Flushed before the rename when the journal does not hold this version yet (the first rewrite, a person's edit).
    if (journal)
      how.beforeWrite = (from) => {
        journal.cover(file, from)
        journal.status(file, status)
        journal.commit()
      }
    const done = await this.notes.rewrite(file, patch, how)
    // Written now: a status journaled for it before is replaced. Only now: one whose note refused this write (a person
    // kept saving it) is still to write, or the next settle would mark the journal applied without it.
    this.writes.drop(file)
    if (done === undefined) return this.setStatus(await this.follow(id), status)
    const { edited, held } = done
    const note = this.files.notes.get(file)
    // A version a person saved meanwhile, or their save the replace caught: the note is parsed again.
    if (edited.from !== held || !note) {
      this.files.notes.set(file, parseNote(file, edited.text))
      await this.rebuildAndValidate()
      return id
    }
    // Only the status moved (perhaps on a line of its own): patch what we hold instead of reading the note again.
    const added = countLines(edited.text) - countLines(edited.from)
    if (added !== 0) {
      for (const edge of note.edges) {
        edge.line += added
        edge.itemLine += added
      }
    }
    this.hold(id, note, status)
    return id
  }

  /**
   * Gives a node a status in a hop: journaled (see {@link commit}) and held
   * at once, written into its note by {@link apply}, off the hop's path, or
   * by {@link writeStatusNow} when someone is about to read it.
   * A later status of the same note replaces it unwritten.
   *
   * @returns false, journaling nothing, when the status cannot wait (see {@link canWait}): the caller writes it with {@link setStatus}
   */
  deferStatus(id: string, status: NodeStatus): boolean {
    const file = this.graph.node(id).file ?? `${id}.md`
    if (!this.canWait(file, status)) return false
    this.defer(id, file, status)
    return true
  }

  /**
   * Whether a status can wait to be written: the note is the version the
   * session holds (not saved by a person since, nor renamed or deleted; one
   * `stat`) and its frontmatter takes a status. Otherwise it is written at
   * once by {@link setStatus}, which merges a person's save, follows a
   * rename and names a frontmatter it cannot patch, before any work.
   */
  private canWait(file: string, status: NodeStatus): boolean {
    const text = this.held.text(file)
    if (text === undefined || !this.held.unchanged(this.notes.pathOf(file), file)) return false
    try {
      setFrontmatterStatus(text, status)
      return true
    } catch {
      return false
    }
  }

  private defer(id: string, file: string, status: NodeStatus, recovered = false): void {
    this.writes.status(file, id, status, recovered)
    this.hold(id, this.files.notes.get(file), status)
  }

  /** Holds a status the note is given: the note as parsed, the graph's node, the index of statuses. */
  private hold(id: string, note: ParsedNote | undefined, status: NodeStatus): void {
    const node = this.graph.node(id)
    if (note) {
      note.status = status
      note.frontmatter.status = status
    }
    this.statuses.move(this.graph, id, node.status, status)
    node.status = status
    node.frontmatter.status = status
  }

  /** Journals a trace entry of run `run` (see `TraceAppender`) and appends what the hop journaled with it; a `record` is flushed (with `fsync`). */
  journalTrace(offset: number, text: string, run: string, record: boolean): void {
    this.writes.trace(offset, text, run, record)
  }

  /** Appends what the hop journaled, in one write (a hop's record flushed with `fsync`): from then on a crash loses none of it. */
  commit(): void {
    this.writes.journal?.commit()
  }

  /** How long (ms) the oldest journaled write has waited to be applied; `undefined` when none waits. */
  get unappliedFor(): number | undefined {
    return this.writes.waited
  }

  /**
   * Applies the journaled writes to the files: the output notes, then each
   * note's last status through {@link setStatus} (the one careful rewrite),
   * with the images of the notes covered first in one flush (with `fsync`).
   * Then the journal is marked applied (emptied without `fsync`).
   *
   * @throws what {@link setStatus} throws; what is not applied stays journaled, for the next open
   */
  async apply(): Promise<void> {
    if (this.writes.waited === undefined) return
    const { outputs, statuses } = this.writes.take(this.held)
    for (const { file, text } of outputs) writeOutputNote(this.root, file, text)
    for (const [file, { id, status }] of statuses) if (this.writes.statusOf(file) === status) await this.writeHeld(id, status)
    this.writes.settle()
  }

  /**
   * Writes the status journaled for the note of `id` into it now, if one
   * waits (unflushed: the journal holds the durable copy), for whoever reads
   * the note next; the hop's other writes still wait. Throws what {@link setStatus} throws.
   */
  async writeStatusNow(id: string): Promise<void> {
    const status = this.writes.statusOf(this.graph.nodes.get(id)?.file ?? `${id}.md`)
    if (status !== undefined) await this.writeHeld(id, status)
  }

  /** Writes a journaled status through {@link setStatus}; a person's save that breaks the plan is said at the next refresh. */
  private async writeHeld(id: string, status: NodeStatus): Promise<void> {
    try {
      await this.setStatus(id, status)
    } catch (error) {
      // Written, into a version a person saved that breaks the plan: the hop's path says so at its next refresh, after its work is saved.
      if (!(error instanceof PlanValidationError)) throw error
      this.unvalidated = true
    }
  }

  /**
   * Finds where the note of `id` went when its file is gone: the note a
   * rename made of it (the same file under another name, found by its inode
   * or its text), once the vault is listed again and the plan still
   * validates.
   *
   * @returns the note's id now
   * @throws {@link PlanValidationError} when the plan is invalid without the old name (links not rewritten)
   * @throws {@link RunStateError} `node-missing` when the note was deleted
   */
  async follow(id: string): Promise<string> {
    const file = this.graph.node(id).file ?? `${id}.md`
    // Taken before the refresh, which forgets the file once it is gone.
    const was = { ino: this.held.stamp(file)?.ino, text: this.held.text(file) }
    const before = new Set(this.files.notes.keys())
    this.files.noteChanged(file)
    this.files.listingChanged()
    await this.refresh([])
    if (this.files.notes.has(file)) return id
    const moved = this.held.movedFrom(
      was,
      [...this.files.notes.keys()].filter((each) => !before.has(each)),
    )
    const node = moved === undefined ? undefined : [...this.graph.nodes.values()].find((each) => each.file === moved)
    if (!node)
      throw new RunStateError(
        'node-missing',
        `The run is at \`${id}\`, but its note \`${file}\` was deleted. Restore it, or set another note \`status: active\` to move the run there.`,
        { node: id, file },
      )
    return node.id
  }

  /**
   * Shows a human node's `## Next` items as empty task boxes: ticks are
   * cleared (a consumed decision, or one made before the node waited) and
   * items without a box gain one, so a person sees what to tick. Written
   * through `editNote`, on the note as it is when written (a status written
   * may have added a line), and flushed: the journal's copy would give a
   * power cut's victim its ticks back. The feedback a decision `handed`
   * on gets its `(handed on at step N)` line in the same edit.
   *
   * @returns the note's id now (a note a person renamed meanwhile is followed)
   */
  async emptyBoxes(id: string, handed?: { text: string; step: number }): Promise<string> {
    const file = this.graph.node(id).file ?? `${id}.md`
    const edit = (text: string) => emptyTaskBoxes(file, handed ? markHandedOn(file, text, handed.text, handed.step) : text)
    const done = await this.notes.rewrite(file, edit, { trust: false, fsync: this.options.fsync })
    if (done === undefined) return this.emptyBoxes(await this.follow(id), handed)
    if (!done.edited.written && done.edited.from === done.held) return id
    this.files.notes.set(file, parseNote(file, done.edited.text))
    this.rebuild()
    return id
  }

  /** Journals a step's output note (`file` relative to the trace folder), written by {@link apply}. */
  saveOutput(file: string, meta: OutputMeta, output: string): void {
    this.writes.output(file, renderOutput(meta, output))
  }

  /** What a person wrote under the node's `## Feedback` heading. */
  feedbackOf(id: string): string {
    const file = this.graph.node(id).file
    return (file !== undefined && this.files.notes.get(file)?.feedback) || ''
  }

  /**
   * Stops watching, closes the journal, and waits until the second names of
   * the note versions it replaced are removed. What is journaled and not
   * applied yet (the run's driver applies it as it closes, holding the
   * vault's lock) stays journaled: the next open applies it.
   */
  async close(): Promise<void> {
    this.writes.journal?.close()
    for (const watcher of this.watchers.splice(0)) watcher.close()
    await replacedFilesFreed()
  }

  private rebuild(): void {
    this.writes.overlay(this.files.notes)
    this.graph = graphFromNotes([...this.files.notes.values()], this.files.issues)
  }

  /** Rebuilds the graph after an edit and validates it; an edited edge may link a note not read yet. */
  private async rebuildAndValidate(): Promise<void> {
    this.unvalidated = false
    this.rebuild()
    // A link to a note the watchers have not reported yet: look for new notes once.
    const dangling = [...this.graph.nodes.values()].some((node) => node.edges.some((edge) => !this.graph.nodes.has(edge.target)))
    if (dangling && (await this.files.relistFiles(new Set()))) this.rebuild()
    this.validate()
  }
}
