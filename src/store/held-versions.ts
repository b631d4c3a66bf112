import { sameStamp, stampOfSync, type FileStamp } from '../vault/fs-atomic.js'
import { isHeldVersion } from '../vault/note-version.js'
import type { ParsedNote } from '../vault/parse-note.js'
import type { PlanGraph } from '../plan/plan-graph.js'
import type { NodeStatus } from '../core/types.js'

/** How many forgotten files a session keeps what they were of. */
const GONE_KEPT = 100

/**
 * What a vault session holds of each note's version on disk: its stamp, its
 * text as last read or written (valid while the stamp is unchanged), and when
 * the stamp was last confirmed with the bytes (git's "racy" rule, see
 * `isHeldVersion`; a version we wrote has none until then).
 */
export class HeldVersions {
  private readonly stamps = new Map<string, FileStamp>()
  private readonly texts = new Map<string, string>()
  private readonly checked = new Map<string, number>()
  /** The notes whose version held was read as one a person may have been saving (the reader saw it change). */
  private readonly doubtedReads = new Set<string>()
  private readonly gone = new Map<string, { ino: number | undefined; text: string | undefined }>()

  /** The stamp of the version held. */
  stamp(file: string): FileStamp | undefined {
    return this.stamps.get(file)
  }

  /** The text of the version held. */
  text(file: string): string | undefined {
    return this.texts.get(file)
  }

  /** Whether the file on disk has the stamp held (a stat; a file gone has none). */
  unchanged(path: string, file: string): boolean {
    return sameStamp(stampOrNothing(path), this.stamps.get(file))
  }

  /** Whether the version held was read doubted (the reader saw the note change), not written by this session nor read at first sight. */
  doubted(file: string): boolean {
    return this.doubtedReads.has(file)
  }

  /**
   * Keeps the text and stamp a note was read with (at `at`, taken before the
   * read), then lets the note go of them. `doubted`: read as a note that
   * changed, so a person's save of it may have been under way.
   */
  remember(note: ParsedNote, at: number, doubted = false): void {
    if (doubted) this.doubtedReads.add(note.file)
    else this.doubtedReads.delete(note.file)
    if (note.stamp) this.stamps.set(note.file, note.stamp)
    if (note.text !== undefined) this.texts.set(note.file, note.text)
    if (note.stamp && note.text !== undefined) this.checked.set(note.file, at)
    delete note.stamp
    delete note.text
  }

  /**
   * A version this session wrote, or read to write it (`doubted` as that
   * read was); still confirmed when the write left the stamp as it was
   * (nothing changed).
   */
  wrote(file: string, stamp: FileStamp, text: string, before?: FileStamp, doubted = false): void {
    if (doubted) this.doubtedReads.add(file)
    else this.doubtedReads.delete(file)
    this.stamps.set(file, stamp)
    this.texts.set(file, text)
    if (!sameStamp(stamp, before)) this.checked.delete(file)
  }

  /**
   * Forgets what is held of a file; what it was is kept a while, to follow a rename found later (see {@link renamedInto}).
   *
   * @returns the stamp that was held
   */
  forget(file: string): FileStamp | undefined {
    const stamp = this.stamps.get(file)
    this.gone.set(file, { ino: stamp?.ino, text: this.texts.get(file) })
    if (this.gone.size > GONE_KEPT) this.gone.delete(this.gone.keys().next().value!)
    this.stamps.delete(file)
    this.texts.delete(file)
    this.checked.delete(file)
    this.doubtedReads.delete(file)
    return stamp
  }

  /** Whether the note at `path` is the version held (`isHeldVersion`); its stamp then counts as confirmed at `now`. */
  confirm(path: string, file: string, now: number): boolean {
    if (!isHeldVersion(path, { stamp: this.stamps.get(file), text: this.texts.get(file), checkedAt: this.checked.get(file) })) return false
    this.checked.set(file, now)
    return true
  }

  /** The file among `files` that is the file `was` described (its inode) or holds its text: where a rename took it. */
  movedFrom(was: { ino: number | undefined; text: string | undefined }, files: Iterable<string>): string | undefined {
    for (const each of files) {
      if ((was.ino !== undefined && this.stamps.get(each)?.ino === was.ino) || (was.text !== undefined && this.texts.get(each) === was.text)) return each
    }
    return undefined
  }

  /**
   * Whether the visit key `key` of run `runId` names a note that is gone
   * from `graph` and that a rename made `file` (the same inode, or its
   * text): a step handed out before a person renamed its note, between
   * two stepping calls of this process.
   */
  renamedInto(key: string, runId: string, file: string, graph: PlanGraph): boolean {
    if (!key.startsWith(`${runId}:`) || key.lastIndexOf(':') <= runId.length) return false
    const id = key.slice(runId.length + 1, key.lastIndexOf(':'))
    const was = this.gone.get(`${id}.md`) ?? [...this.gone].find(([gone]) => gone.normalize('NFC').replace(/\.md$/i, '') === id)?.[1]
    return !graph.nodes.has(id) && was !== undefined && this.movedFrom(was, [file]) === file
  }

  /** Takes over what another session held (a session kept between stepping calls). */
  copyFrom(other: HeldVersions): void {
    for (const [file, was] of other.gone) this.gone.set(file, was)
    for (const [file, stamp] of other.stamps) this.stamps.set(file, stamp)
    for (const [file, text] of other.texts) this.texts.set(file, text)
    for (const [file, at] of other.checked) this.checked.set(file, at)
    for (const file of other.doubtedReads) this.doubtedReads.add(file)
  }
}

/** The file's stamp now, or nothing when it is gone. */
export function stampOrNothing(path: string): FileStamp | undefined {
  try {
    return stampOfSync(path)
  } catch {
    return undefined
  }
}

/**
 * The ids of the notes with one status, in vault order, kept until the graph
 * changes; a status moving is applied without a walk over every note (which a
 * hop in a 10,000-note vault would feel).
 */
export class StatusIndex {
  private cache: { graph: PlanGraph; status: NodeStatus; ids: string[] } | undefined

  /** Ids of the notes of `graph` with this status. */
  withStatus(graph: PlanGraph, status: NodeStatus): string[] {
    if (this.cache?.graph !== graph || this.cache.status !== status) {
      const ids = [...graph.nodes.values()].filter((node) => node.status === status).map((node) => node.id)
      this.cache = { graph, status, ids }
    }
    return this.cache.ids
  }

  /** One note's status moved from `from` to `to` in `graph`. */
  move(graph: PlanGraph, id: string, from: NodeStatus, to: NodeStatus): void {
    const cache = this.cache
    if (!cache || cache.graph !== graph || from === to) return
    if (cache.status === from) cache.ids = cache.ids.filter((each) => each !== id)
    else if (cache.status === to) {
      // In vault order: easy only when it is the one note with that status.
      if (cache.ids.length === 0) cache.ids = [id]
      else this.cache = undefined
    }
  }
}
