import type { NodeStatus } from '../core/types.js'
import type { ParsedNote } from '../vault/parse-note.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import type { HeldVersions } from './held-versions.js'
import { NoteJournal } from './note-journal.js'

/**
 * The writes of a run's hops that are journaled and not applied to the
 * files yet: each note's last status, the output notes; and the journal
 * they are appended to (opened once the vault has a run folder). The
 * session applies them (`VaultSession.apply`); until then it holds the
 * statuses as the notes' own.
 */
export class JournaledWrites {
  /** Per note (vault-relative), the last status given and not written yet, in the order given. */
  private readonly statuses = new Map<string, { id: string; status: NodeStatus }>()
  private readonly outputs: { file: string; text: string }[] = []
  /** When the oldest write not applied yet was journaled (`Date.now()`). */
  private since: number | undefined

  constructor(
    private readonly root: string,
    private readonly fsync: boolean,
    /** The run's journal, when the vault has a run folder. */
    public journal: NoteJournal | undefined,
  ) {}

  /** The journal, opened (and brought up to) when first needed. */
  private opened(): NoteJournal {
    this.journal ??= NoteJournal.open(this.root, { fsync: this.fsync })
    return this.journal
  }

  /** Journals a note's status and keeps it to write. `recovered`: journaled by an earlier run already. */
  status(file: string, id: string, status: NodeStatus, recovered = false): void {
    if (!recovered) this.opened().status(file, status)
    this.statuses.delete(file)
    this.statuses.set(file, { id, status })
    this.since ??= Date.now()
  }

  /** Journals a step's output note (`file` relative to the trace folder) and keeps it to write. */
  output(file: string, text: string): void {
    this.opened().file(`${TRACE_FOLDER}/${file}`, text)
    this.outputs.push({ file, text })
    this.since ??= Date.now()
  }

  /** Journals a trace entry of run `run` and appends it with what the hop journaled; a `record` is flushed (with `fsync`). */
  trace(offset: number, text: string, run: string, record: boolean): void {
    const journal = this.opened()
    journal.trace(offset, text, run, record)
    journal.commit()
  }

  /** A status written now: one journaled before for the note is not written. */
  drop(file: string): void {
    this.statuses.delete(file)
  }

  /** How long (ms) the oldest write has waited; `undefined` when none waits. */
  get waited(): number | undefined {
    return this.since === undefined ? undefined : Date.now() - this.since
  }

  /** The status still to write of a note, if any. */
  statusOf(file: string): NodeStatus | undefined {
    return this.statuses.get(file)?.status
  }

  /** Gives notes read again (a person's save) the status still to write: that write comes after their save. */
  overlay(notes: Map<string, ParsedNote>): void {
    for (const [file, { status }] of this.statuses) {
      const note = notes.get(file)
      if (note && note.status !== status) {
        note.status = status
        note.frontmatter.status = status
      }
    }
  }

  /**
   * Takes what is to write: the output notes, and the statuses (each note's
   * last), the copies of their notes journaled first, in one flush (with
   * `fsync`). A status written meanwhile is dropped from them.
   */
  take(held: HeldVersions): { outputs: { file: string; text: string }[]; statuses: [string, { id: string; status: NodeStatus }][] } {
    this.journal?.commit()
    if (this.journal && this.statuses.size > 0) {
      for (const file of this.statuses.keys()) {
        const known = held.text(file)
        if (known !== undefined) this.journal.cover(file, known)
      }
      this.journal.commit()
    }
    return { outputs: this.outputs.splice(0), statuses: [...this.statuses] }
  }

  /** Once everything is written: the journal is marked applied (emptied without `fsync`). */
  settle(): void {
    if (this.statuses.size > 0 || this.outputs.length > 0) return
    this.since = undefined
    this.journal?.settled()
  }
}
