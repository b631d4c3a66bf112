import { lstatSync, watch, type FSWatcher } from 'node:fs'
import { realpath } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { RunStateError } from '../core/errors.js'
import { setFrontmatterStatus } from '../vault/frontmatter.js'
import { pathInVault, sameStamp, stampOfSync, writeFileAtomic, writeFileAtomicSync, type FileStamp } from '../vault/fs-atomic.js'
import { graphFromNotes } from '../plan/load-plan.js'
import { listNotes, readNote, readNotes } from '../vault/read-vault.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import { NoteJournal } from './note-journal.js'
import { runFolder } from '../vault/run-file-path.js'
import { readNoteForRewrite, rememberWrite } from '../vault/settled-read.js'
import { parseNote, type ParsedNote } from '../vault/parse-note.js'
import type { PlanGraph } from '../plan/plan-graph.js'
import { emptyTaskBoxes } from '../vault/note-edits.js'
import { countLines } from '../core/text.js'
import { renderOutput, tracePaths, type OutputMeta } from './trace.js'
import type { NodeStatus, PlanIssue } from '../core/types.js'

/** Options of a vault session. */
export interface SessionOptions {
  fsync: boolean
  /** Tool names the caller supplies, for validation warnings. */
  tools?: string[]
}

/**
 * A plan vault kept in memory while a run walks it. Edits people make in
 * their notes app are picked up from the next hop: folder watchers report
 * which files changed, and the notes a hop touches are checked by their
 * stamp, so a hop where nothing changed costs no work proportional to the
 * vault's size.
 */
export class VaultSession {
  graph: PlanGraph
  private readonly notes = new Map<string, ParsedNote>()
  private readonly stamps = new Map<string, FileStamp>()
  /** The text of a note as we last wrote it, valid while its stamp is unchanged. */
  private readonly texts = new Map<string, string>()
  /** Where a note's writes go (a symlink inside the vault resolved), checked once per version of the file. */
  private readonly writePaths = new Map<string, string>()
  private readonly dirty = new Set<string>()
  private readonly watchers: FSWatcher[] = []
  private readIssues: PlanIssue[]
  private relist = false
  /** A note whose stamp `refresh` has just compared: the status write that follows needs no second look. */
  private verified: string | undefined
  private statusCache: { graph: PlanGraph; status: NodeStatus; ids: string[] } | undefined

  private constructor(
    /** The vault's real path. */
    readonly root: string,
    private readonly options: SessionOptions,
    notes: ParsedNote[],
    issues: PlanIssue[],
    /** With `fsync`: the journal that makes unflushed status rewrites and output notes safe (see NoteJournal). */
    private readonly journal: NoteJournal | undefined,
  ) {
    for (const note of notes) this.notes.set(note.file, note)
    this.readIssues = issues
    this.graph = graphFromNotes(notes, issues)
  }

  /**
   * Reads the vault and starts watching it. With `fsync`, first repairs what
   * a power cut tore from the journal (call it holding the vault's lock).
   */
  static async open(root: string, options: SessionOptions): Promise<VaultSession> {
    const real = await realpath(root)
    const journal = options.fsync && hasTraceFolder(real) ? NoteJournal.open(real) : undefined
    const { notes, issues } = await readNotes(real)
    const session = new VaultSession(real, options, notes, issues, journal)
    for (const note of notes) session.remember(note)
    session.watch(new Set(['', ...notes.map((note) => dirname(note.file)).filter((folder) => folder !== '.')]))
    return session
  }

  /** Ids of the notes with this status now, in vault order; kept until a status or a note changes. */
  withStatus(status: NodeStatus): string[] {
    if (this.statusCache?.graph !== this.graph || this.statusCache.status !== status) {
      const ids = [...this.graph.nodes.values()].filter((node) => node.status === status).map((node) => node.id)
      this.statusCache = { graph: this.graph, status, ids }
    }
    return this.statusCache.ids
  }

  /** Validates the plan as it is now; throws `PlanValidationError` on errors. */
  validate(): PlanIssue[] {
    return this.graph.validate(this.options.tools ? { tools: this.options.tools } : undefined)
  }

  /**
   * Picks up edits: files the watchers reported and the notes of `ids` are
   * re-read when their stamp changed; the graph is rebuilt and validated
   * only when something did.
   *
   * @throws {PlanValidationError} when an edit made the plan invalid.
   */
  async refresh(ids: string[]): Promise<boolean> {
    this.verified = undefined
    const files = new Set(this.dirty)
    this.dirty.clear()
    for (const id of ids) {
      const file = this.graph.nodes.get(id)?.file
      if (file !== undefined) files.add(file)
    }
    let changed = false
    if (this.relist) changed = (await this.relistFiles(files)) || changed
    for (const file of files) changed = (await this.reread(file)) || changed
    if (!changed) return false
    await this.rebuildAndValidate()
    return true
  }

  /**
   * Sets a node's status in its note. The note's stamp is compared just
   * before the write (it is read again when a person changed it) and only
   * the status value is patched, so an edit made a moment earlier survives.
   * `justRefreshed`: `refresh([id])` ran right before, with nothing awaited
   * since, so its stamp comparison stands.
   */
  async setStatus(id: string, status: NodeStatus, options: { justRefreshed?: boolean } = {}): Promise<string> {
    const node = this.graph.node(id)
    const file = node.file ?? `${id}.md`
    const known = this.stamps.get(file)
    // Trusting the stamp `refresh` just compared saves a stat, but only with nothing awaited in between:
    // a person may edit the note while a worker runs.
    const trusted = options.justRefreshed === true && this.verified === file && known !== undefined
    this.verified = undefined
    // The hop's file work is a few small calls: synchronous ones, each a system call and no thread-pool
    // round trip. Only a regular note of bounded size is read that way (see readRegularFileSync).
    let path = this.writePaths.get(file) ?? (await this.writePath(file).catch(() => undefined))
    const before = trusted ? known : path === undefined ? undefined : stampOrNothing(path)
    // Renamed (Obsidian moves the file and rewrites the links) or deleted while the run went on.
    if (path === undefined || before === undefined) return this.setStatus(await this.follow(id), status)
    const editedMeanwhile = !sameStamp(before, known)
    if (editedMeanwhile) path = await this.writePath(file)
    const text = (!editedMeanwhile && this.texts.get(file)) || (await readNoteForRewrite(file, path, editedMeanwhile))
    let updated: string
    try {
      updated = setFrontmatterStatus(text, status)
      // Flushed before the rename when the journal does not hold this version yet (the first rewrite, a person's edit).
      if (updated !== text && this.journal) {
        this.journal.cover(file, text)
        this.journal.status(file, status)
        this.journal.commit()
      }
    } catch (error) {
      throw new RunStateError('status-unwritable', `Cannot write \`status: ${status}\` into \`${file}\`: ${(error as Error).message}. The note is unchanged; fix its frontmatter and run again.`, { cause: error })
    }
    // The folder is not flushed: the trace, not the statuses, says where a run is, and the
    // note's data is flushed before the rename, so a power cut leaves its old bytes or its new ones.
    // With the journal holding the note's bytes, the rewrite needs no flush of its own.
    const stamp = updated === text ? before : writeFileAtomicSync(path, updated, { fsync: this.options.fsync && !this.journal, syncFolder: false, mode: before.mode })
    this.stamps.set(file, stamp)
    this.texts.set(file, updated)
    if (updated !== text) rememberWrite(path, stamp)
    this.dirty.delete(file)
    const note = this.notes.get(file)
    if (editedMeanwhile || !note) {
      this.notes.set(file, parseNote(file, updated))
      await this.rebuildAndValidate()
      return id
    }
    // Only the status moved (perhaps on a line of its own): patch what we hold instead of reading the note again.
    const added = countLines(updated) - countLines(text)
    if (added !== 0) {
      for (const edge of note.edges) {
        edge.line += added
        edge.itemLine += added
      }
    }
    note.status = status
    note.frontmatter.status = status
    this.moveInStatusCache(id, node.status, status)
    node.status = status
    node.frontmatter.status = status
    return id
  }

  /**
   * Finds where the note of `id` went when its file is gone: the note a
   * rename made of it (the same file under another name, found by its inode
   * or its text), once the vault is listed again and the plan still
   * validates.
   *
   * @returns the note's id now
   * @throws {PlanValidationError} when the plan is invalid without the old name (links not rewritten)
   * @throws {RunStateError} `node-missing` when the note was deleted
   */
  async follow(id: string): Promise<string> {
    const file = this.graph.node(id).file ?? `${id}.md`
    const ino = this.stamps.get(file)?.ino
    const text = this.texts.get(file)
    const before = new Set(this.notes.keys())
    this.dirty.add(file)
    this.relist = true
    await this.refresh([])
    if (this.notes.has(file)) return id
    const moved = [...this.notes.keys()].find((each) => !before.has(each) && ((ino !== undefined && this.stamps.get(each)?.ino === ino) || (text !== undefined && this.texts.get(each) === text)))
    const node = moved === undefined ? undefined : [...this.graph.nodes.values()].find((each) => each.file === moved)
    if (!node) throw new RunStateError('node-missing', `The run is at \`${id}\`, but its note \`${file}\` was deleted. Restore it, or set another note \`status: active\` to move the run there.`)
    return node.id
  }

  /**
   * Shows a human node's `## Next` items as empty task boxes: ticks are
   * cleared (a consumed decision, or one made before the node waited) and
   * items without a box gain one, so a person sees what to tick.
   */
  async emptyBoxes(id: string): Promise<string> {
    const node = this.graph.node(id)
    const file = node.file ?? `${id}.md`
    const path = await this.writePath(file).catch(() => undefined)
    const text = path === undefined ? undefined : await readNoteForRewrite(file, path, !sameStamp(stampOrNothing(path), this.stamps.get(file))).catch(() => undefined)
    if (path === undefined || text === undefined) return this.emptyBoxes(await this.follow(id))
    // Lines from the text as it is now: writing a status can have added a frontmatter line since the graph was built.
    const lines = parseNote(file, text).edges.filter((edge) => edge.checked !== false).map((edge) => edge.itemLine)
    if (lines.length === 0) return id
    const updated = emptyTaskBoxes(text, lines)
    if (updated === text) return id
    this.stamps.set(file, await writeFileAtomic(path, updated, { fsync: this.options.fsync, syncFolder: false }))
    this.texts.set(file, updated)
    this.notes.set(file, parseNote(file, updated))
    this.rebuild()
    return id
  }

  /**
   * Saves a step's output note (`file` relative to the trace folder) in one
   * flush: with `fsync`, its bytes go to the journal together with the
   * images of the notes the hop may rewrite next (the node's and its edges'
   * targets'), and the note itself is written without a flush of its own.
   */
  saveOutput(id: string, file: string, meta: OutputMeta, output: string): void {
    const text = renderOutput(meta, output)
    const path = join(tracePaths(this.root).folder, file)
    if (this.journal) {
      const node = this.graph.nodes.get(id)
      for (const target of new Set([id, ...(node?.edges.map((edge) => edge.target) ?? [])])) {
        const note = this.graph.nodes.get(target)?.file
        const known = note === undefined ? undefined : this.texts.get(note)
        if (note !== undefined && known !== undefined) this.journal.cover(note, known)
      }
      this.journal.file(`${TRACE_FOLDER}/${file}`, text)
      // `done` follows at once: flushed with the output, so a power cut cannot leave the note looking claimed.
      if (node?.file !== undefined) this.journal.status(node.file, 'done')
      this.journal.commit()
    }
    const write = () => writeFileAtomicSync(path, text, { mode: 0o644, fsync: this.options.fsync && !this.journal })
    try {
      write()
    } catch (error) {
      // The outputs folder deleted while the run went on: made again (checked as every run folder is), then written.
      if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
      runFolder(this.root, `${TRACE_FOLDER}/${dirname(file)}`)
      write()
    }
  }

  /** What a person wrote under the node's `## Feedback` heading. */
  feedbackOf(id: string): string {
    const file = this.graph.node(id).file
    return (file !== undefined && this.notes.get(file)?.feedback) || ''
  }

  /** Stops watching, and closes the journal. */
  close(): void {
    this.journal?.close()
    for (const watcher of this.watchers.splice(0)) watcher.close()
  }

  /**
   * Keeps the ids of `withStatus` true when one note's status moves, without
   * a walk over every note (which a hop in a 10,000-note vault would feel).
   */
  private moveInStatusCache(id: string, from: NodeStatus, to: NodeStatus): void {
    const cache = this.statusCache
    if (!cache || cache.graph !== this.graph || from === to) return
    if (cache.status === from) cache.ids = cache.ids.filter((each) => each !== id)
    else if (cache.status === to) {
      // In vault order: easy only when it is the one note with that status.
      if (cache.ids.length === 0) cache.ids = [id]
      else this.statusCache = undefined
    }
  }

  /** Resolves where a note's writes go, refusing a path that leaves the vault (through a symlink too). */
  private async writePath(file: string): Promise<string> {
    // Notes are found by walking real folders (symlinked folders are not walked): only a symlinked note needs resolving.
    const direct = join(this.root, file)
    const path = lstatSync(direct).isSymbolicLink() ? await pathInVault(this.root, file) : direct
    this.writePaths.set(file, path)
    return path
  }

  private rebuild(): void {
    this.graph = graphFromNotes([...this.notes.values()], this.readIssues)
  }

  /** Rebuilds the graph after an edit and validates it; an edited edge may link a note not read yet. */
  private async rebuildAndValidate(): Promise<void> {
    this.rebuild()
    // A link to a note the watchers have not reported yet: look for new notes once.
    const dangling = [...this.graph.nodes.values()].some((node) => node.edges.some((edge) => !this.graph.nodes.has(edge.target)))
    if (dangling && (await this.relistFiles(new Set()))) this.rebuild()
    this.validate()
  }

  private async reread(file: string): Promise<boolean> {
    if (file.startsWith(`${TRACE_FOLDER}/`) || file.split('/').some((part) => part.startsWith('.')) || !/\.md$/i.test(file)) return false
    const path = join(this.root, file)
    const stamp = stampOrNothing(path)
    if (stamp === undefined) {
      this.stamps.delete(file)
      this.texts.delete(file)
      return this.notes.delete(file)
    }
    if (sameStamp(stamp, this.stamps.get(file))) {
      this.verified = file
      return false
    }
    this.stamps.delete(file)
    this.texts.delete(file)
    this.writePaths.delete(file)
    const issues: PlanIssue[] = []
    const note = await readNote(this.root, file, issues, { changed: true })
    this.readIssues = [...this.readIssues.filter((issue) => issue.file !== file), ...issues]
    if (note) {
      this.notes.set(file, note)
      this.remember(note)
    } else this.notes.delete(file)
    return true
  }

  /** Keeps the text and stamp a note was read with, then lets the note go of them. */
  private remember(note: ParsedNote): void {
    if (note.stamp) this.stamps.set(note.file, note.stamp)
    if (note.text !== undefined) this.texts.set(note.file, note.text)
    delete note.stamp
    delete note.text
  }

  /** Lists the vault again to find notes added or removed; reads the new ones. */
  private async relistFiles(files: Set<string>): Promise<boolean> {
    this.relist = false
    const listed = new Set(await listNotes(this.root, []))
    let changed = false
    for (const file of listed) if (!this.notes.has(file)) changed = (await this.reread(file)) || changed
    for (const file of this.notes.keys()) if (!listed.has(file)) files.add(file)
    return changed
  }

  private watch(folders: Set<string>): void {
    for (const folder of folders) {
      try {
        const watcher = watch(join(this.root, folder), { persistent: false }, (_event, name) => {
          if (name === null) return void (this.relist = true)
          if (!folder && name === TRACE_FOLDER) return
          const file = folder ? `${folder}/${name}` : String(name)
          if (/\.md$/i.test(file)) this.dirty.add(file)
          else if (!String(name).startsWith('.')) this.relist = true
        })
        watcher.on('error', () => (this.relist = true))
        this.watchers.push(watcher)
      } catch {
        // Watching is an optimisation: the notes a hop touches are still checked by stamp.
      }
    }
  }
}

function stampOrNothing(path: string): FileStamp | undefined {
  try {
    return stampOfSync(path)
  } catch {
    return undefined
  }
}

function hasTraceFolder(root: string): boolean {
  try {
    return lstatSync(join(root, TRACE_FOLDER)).isDirectory()
  } catch {
    return false
  }
}
