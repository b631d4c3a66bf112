import { rename } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import { runFolder } from '../vault/run-file-path.js'
import { ARCHIVE_FOLDER, FINAL_FILE, GRAPH_FILES, OUTPUTS_FOLDER as OUTPUTS, TRACE_FILE, TRACE_FOLDER } from '../vault/run-folder.js'
import { syncFolder } from '../vault/fs-atomic.js'
import { tracePaths } from './trace.js'
import { statOrNothingSync } from '../vault/stat-or-nothing.js'

/**
 * Moves a run's trace, outputs, final answer and picture to
 * `00_plan-trace/archive/<run>/`. The trace moves last: a kill part way
 * leaves the trace in place with its archive folder begun, which
 * {@link archiveInterrupted} tells and a second call finishes, so nothing is
 * lost or overwritten. The ledger stays: it outlives runs. With `fsync`, the
 * archive folder and the moves before the trace's are on the disk before the
 * trace moves, and the trace's move before the call returns: after a power
 * cut the trace is still in place, with its archive begun, or archived
 * whole.
 */
export async function archiveTrace(vault: string, run: string, options: { fsync: boolean }): Promise<void> {
  const folder = tracePaths(vault).folder
  const target = runFolder(vault, relative(vault, archiveFolder(vault, run)).split(sep).join('/'))
  // The folders whose names changed: the one left, the one entered (and, first, the one the archive folder was made in).
  const flush = async (folders: string[] = [target, folder]) => {
    if (options.fsync) for (const each of folders) await syncFolder(each)
  }
  await flush([dirname(target), folder])
  for (const name of [OUTPUTS, FINAL_FILE, GRAPH_FILES.note.slice(TRACE_FOLDER.length + 1), TRACE_FILE]) {
    if (name === TRACE_FILE) await flush()
    await rename(join(folder, name), join(target, name)).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error
    })
  }
  await flush()
}

/**
 * A run's archive folder, named by the run id its trace header gives: a file
 * anyone may edit, so the name is made one plain folder whatever it says
 * (never `.` or `..`, which named the archive or the trace folder itself,
 * nor empty, nor a dot-folder the search leaves out).
 */
function archiveFolder(vault: string, run: string): string {
  const name = run.replace(/[^\w.-]+/g, '_').replace(/^\./, '_') || '_'
  return join(tracePaths(vault).folder, ARCHIVE_FOLDER, name)
}

/** Whether archiving this run was begun and cut short (its archive folder exists while its trace is still in place). */
export async function archiveInterrupted(vault: string, run: string): Promise<boolean> {
  // Looked at synchronously: every call looks, and a stat never blocks on what it looks at. Nearly always
  // missing, said without an error thrown (its stack is most of the cost).
  return statOrNothingSync(archiveFolder(vault, run))?.isDirectory() === true
}
