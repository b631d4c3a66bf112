import { dirname, join } from 'node:path'
import { writeFileAtomicSync } from '../vault/fs-atomic.js'
import { runFolder } from '../vault/run-file-path.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import type { PlanGraph } from '../plan/plan-graph.js'
import type { HeldVersions } from './held-versions.js'
import type { NoteJournal } from './note-journal.js'
import { tracePaths } from './trace.js'

/** What saving an output note needs of the session. */
export interface OutputPlace {
  root: string
  graph: PlanGraph
  held: HeldVersions
  journal: NoteJournal | undefined
  fsync: boolean
}

/**
 * Saves a step's output note (`file` relative to the trace folder) in one
 * flush: with a journal, its bytes go to the journal together with the
 * images of the notes the hop may rewrite next (the node's and its edges'
 * targets'), and the note itself is written without a flush of its own.
 */
export function saveOutputNote(where: OutputPlace, id: string, file: string, text: string): void {
  const path = join(tracePaths(where.root).folder, file)
  if (where.journal) {
    const node = where.graph.nodes.get(id)
    for (const target of new Set([id, ...(node?.edges.map((edge) => edge.target) ?? [])])) {
      const note = where.graph.nodes.get(target)?.file
      const known = note === undefined ? undefined : where.held.text(note)
      if (note !== undefined && known !== undefined) where.journal.cover(note, known)
    }
    where.journal.file(`${TRACE_FOLDER}/${file}`, text)
    // `done` follows at once: flushed with the output, so a power cut cannot leave the note looking claimed.
    if (node?.file !== undefined) where.journal.status(node.file, 'done')
    where.journal.commit()
  }
  const write = () => writeFileAtomicSync(path, text, { mode: 0o644, fsync: where.fsync && !where.journal })
  try {
    write()
  } catch (error) {
    // The outputs folder deleted while the run went on: made again (checked as every run folder is), then written.
    if ((error as NodeJS.ErrnoException).code !== 'ENOENT') throw error
    runFolder(where.root, `${TRACE_FOLDER}/${dirname(file)}`)
    write()
  }
}
