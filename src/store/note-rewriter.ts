import { lstatSync } from 'node:fs'
import { join } from 'node:path'
import { editNote, type EditOptions, type NoteEdit } from '../vault/edit-note.js'
import { pathInVault } from '../vault/path-gate.js'
import type { HeldVersions } from './held-versions.js'
import { tracePaths } from './trace.js'

/**
 * The one careful rewrite of a person's note a session makes (a status,
 * emptied boxes): through `editNote`, from the version the session holds
 * while the note still has its stamp, to where the note's writes go (a
 * symlink inside the vault resolved once per version of the file).
 */
export class NoteRewriter {
  /** Where a note's writes go, checked once per version of the file. */
  private readonly paths = new Map<string, string>()

  constructor(
    /** The vault's real path. */
    private readonly root: string,
    private readonly held: HeldVersions,
    /** Told of each note written. */
    private readonly wrote: (file: string) => void,
  ) {}

  /** Forgets where a note's writes go: its file changed, so the path is checked again next time. */
  forget(file: string): void {
    this.paths.delete(file)
  }

  /** Where the note's writes go as last checked, else its plain path in the vault. */
  pathOf(file: string): string {
    return this.paths.get(file) ?? join(this.root, file)
  }

  /**
   * Rewrites a note through `editNote`, from the version the session holds
   * while the note still has its stamp, and holds what was written.
   *
   * @returns what `editNote` did and the text the session held before; `undefined` when the note is gone (renamed or deleted)
   */
  async rewrite(
    file: string,
    edit: (text: string) => string,
    how: Pick<EditOptions, 'trust' | 'fsync' | 'beforeWrite'>,
  ): Promise<{ edited: NoteEdit; held: string | undefined } | undefined> {
    // Synchronous calls on the hop path: a system call each, no thread-pool round trip (a regular note only).
    const path = this.paths.get(file) ?? (await this.writePath(file).catch(() => undefined))
    if (path === undefined) return undefined
    const stamp = this.held.stamp(file)
    const text = this.held.text(file)
    // The folder is not flushed: the trace, not the notes, says where a run is. The old version leaves the note's folder
    // at once, unlinked in the trace folder later.
    const options: EditOptions = { ...how, syncFolder: false, park: tracePaths(this.root).folder, doubt: stamp ?? true }
    if (stamp !== undefined && text !== undefined) options.held = { stamp, text, doubted: this.held.doubted(file) }
    const gone = (error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? undefined : Promise.reject(error))
    const edited = await editNote(file, path, edit, options).catch(gone)
    if (edited === undefined) return undefined
    // A version a person saved meanwhile: where its writes go is checked again next time.
    if (edited.from !== text) this.paths.delete(file)
    this.held.wrote(file, edited.stamp, edited.text, edited.written ? undefined : stamp, !edited.written && edited.doubted)
    this.wrote(file)
    return { edited, held: text }
  }

  /** Resolves where a note's writes go, refusing a path that leaves the vault (through a symlink too). */
  private async writePath(file: string): Promise<string> {
    // Notes are found by walking real folders (symlinked folders are not walked): only a symlinked note needs resolving.
    const direct = join(this.root, file)
    const path = lstatSync(direct).isSymbolicLink() ? await pathInVault(this.root, file) : direct
    this.paths.set(file, path)
    return path
  }
}
