import { dirname, join } from 'node:path'
import { watchFolders, type FolderWatcher } from '../vault/folder-watch.js'
import { sameStamp } from '../vault/fs-atomic.js'
import { listVault, readNote } from '../vault/read-vault.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import type { ParsedNote } from '../vault/parse-note.js'
import { stampOrNothing, type HeldVersions } from './held-versions.js'
import type { PlanIssue } from '../core/types.js'

/**
 * A vault's notes as a session last parsed them, kept in step with the disk:
 * the files folder watchers reported and the files a hop names are read
 * again only when their stamp changed, the vault is listed again when a
 * watcher saw the listing change, and a mirror kept from an earlier call is
 * checked note by note (`resync`). It reads; the session builds the graph
 * from it and writes the notes.
 */
export class NoteMirror {
  /** The parsed notes, by file, in vault order. */
  readonly notes = new Map<string, ParsedNote>()
  /** A note whose stamp `pickUp` has just compared: the status write that follows needs no second look. */
  verified: string | undefined
  private readIssues: PlanIssue[]
  private readonly dirty = new Set<string>()
  private relist = false

  constructor(
    /** The vault's real path. */
    private readonly root: string,
    /** The versions the session holds, shared with its writes. */
    private readonly held: HeldVersions,
    notes: ParsedNote[],
    issues: PlanIssue[],
    /** Called when a note is read again in a new version: where its writes go is checked again. */
    private readonly newVersion: (file: string) => void,
  ) {
    for (const note of notes) this.notes.set(note.file, note)
    this.readIssues = issues
  }

  /** Starts watching the vault's folder and each folder holding a note: what they report is read again from the next hop. */
  watch(): FolderWatcher[] {
    const folders = ['', ...[...this.notes.keys()].map((file) => dirname(file))]
    return watchFolders(
      this.root,
      folders,
      (file) => this.noteChanged(file),
      () => this.listingChanged(),
    )
  }

  /** The issues met reading the notes. */
  get issues(): PlanIssue[] {
    return this.readIssues
  }

  /** A watcher saw this file change: it is looked at on the next `pickUp`. */
  noteChanged(file: string): void {
    this.dirty.add(file)
  }

  /** A watcher saw a folder's listing change: the vault is listed again on the next `pickUp`. */
  listingChanged(): void {
    this.relist = true
  }

  /** The session wrote this file itself: the watcher's report of that write is no edit to pick up. */
  wrote(file: string): void {
    this.dirty.delete(file)
  }

  /**
   * Picks up edits: the files the watchers reported and `files` are read
   * again when their stamp changed, the vault listed again when a watcher
   * asked for it.
   *
   * @returns whether the notes changed
   */
  async pickUp(files: string[]): Promise<boolean> {
    this.verified = undefined
    const looked = new Set(this.dirty)
    this.dirty.clear()
    for (const file of files) looked.add(file)
    let changed = false
    if (this.relist) changed = (await this.relistFiles(looked)) || changed
    for (const file of looked) changed = (await this.reread(file)) || changed
    return changed
  }

  /** Reads a note again when its stamp changed (or always, with `force`); whether the notes changed. */
  private async reread(file: string, force = false): Promise<boolean> {
    if (file.startsWith(`${TRACE_FOLDER}/`) || file.split('/').some((part) => part.startsWith('.')) || !/\.md$/i.test(file)) return false
    const path = join(this.root, file)
    const at = Date.now()
    const stamp = stampOrNothing(path)
    if (stamp === undefined) {
      this.held.forget(file)
      return this.notes.delete(file)
    }
    if (!force && sameStamp(stamp, this.held.stamp(file))) {
      this.verified = file
      return false
    }
    const seen = this.held.forget(file)
    this.newVersion(file)
    const issues: PlanIssue[] = []
    const note = await readNote(this.root, file, issues, { changed: seen ?? true })
    this.readIssues = [...this.readIssues.filter((issue) => issue.file !== file), ...issues]
    if (note) {
      this.notes.set(file, note)
      this.held.remember(note, at, true)
    } else this.notes.delete(file)
    return true
  }

  /**
   * Brings a mirror kept from an earlier call up to date without trusting
   * the watchers (another process may have written since, and a watcher
   * lags): lists the vault again, compares every note's stamp, and reads a
   * note again when its stamp changed, or when the stamp was confirmed too
   * soon after the note's last write to tell a second write in the same
   * clock tick of equal size (its text is compared then, and parsed only
   * when it differs: git's "racy" rule).
   *
   * @returns whether a note, the listing, its order or the read issues changed (the graph needs rebuilding)
   */
  async resync(): Promise<boolean> {
    const now = Date.now()
    const issuesBefore = JSON.stringify(this.readIssues)
    const listIssues: PlanIssue[] = []
    let changed = false
    const inListing = await listVault(
      this.root,
      listIssues,
      () => this.notes.values(),
      async (file) => {
        if (this.notes.has(file) && this.held.confirm(join(this.root, file), file, now)) return
        changed = (await this.reread(file, this.notes.has(file))) || changed
      },
    )
    const listed = [...inListing]
    for (const file of [...this.notes.keys()]) {
      if (inListing.has(file)) continue
      this.notes.delete(file)
      this.held.forget(file)
      changed = true
    }
    this.readIssues = [...this.readIssues.filter((issue) => issue.file !== undefined && inListing.has(issue.file)), ...listIssues]
    const order = listed.filter((file) => this.notes.has(file))
    const known = [...this.notes.keys()]
    if (order.some((file, index) => file !== known[index])) {
      const notes = order.map((file) => this.notes.get(file)!)
      this.notes.clear()
      for (const note of notes) this.notes.set(note.file, note)
      changed = true
    }
    return changed || JSON.stringify(this.readIssues) !== issuesBefore
  }

  /**
   * Lists the vault again to find notes added or removed; reads the new ones
   * and adds the files no longer listed to `files`.
   *
   * @returns whether the notes changed
   */
  async relistFiles(files: Set<string>): Promise<boolean> {
    this.relist = false
    let changed = false
    const listed = await listVault(
      this.root,
      [],
      () => this.notes.values(),
      async (file) => {
        if (!this.notes.has(file)) changed = (await this.reread(file)) || changed
      },
    )
    for (const file of this.notes.keys()) if (!listed.has(file)) files.add(file)
    return changed
  }
}
