import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { clearAbandonedLock } from '../vault/lock.js'
import { hasTraceFolder, TRACE_FOLDER } from '../vault/run-folder.js'
import { NoteJournal } from './note-journal.js'
import { removeStaleTempFiles } from '../vault/fs-atomic.js'
import { tracePaths } from './trace.js'

/**
 * Once a run is completed, removes what it no longer needs from its run
 * folders: the journal of its vault, and in the folders below it (its
 * subplans') the locks runners gone for good left there and then their
 * journals, each through {@link NoteJournal.retire}, which repairs from the
 * journal and flushes what it covers first. Call it holding the vault's
 * lock, with its sessions closed: a runner of another process in a folder
 * below is refused while that lock is held, and a folder locked by a runner
 * still alive (of this process or another) is left as it is.
 */
export async function tidyFinishedRun(vault: string, options: { fsync: boolean } = { fsync: true }): Promise<void> {
  await NoteJournal.retire(vault, options)
  const below = async (folder: string): Promise<void> => {
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => [])
    for (const entry of entries) {
      // As the loader and the lock's look below: no dot-folder, no run folder, no symlinked folder.
      if (!entry.isDirectory() || entry.name.startsWith('.') || entry.name === TRACE_FOLDER) continue
      const path = join(folder, entry.name)
      if (await clearAbandonedLock(path)) await NoteJournal.retire(path, options)
      // A subplan's run folder: a write a crash cut short there may have left its temporary name, in a folder no later
      // call of this run opens again (the subplan finished before the crash). The top vault is swept by every call.
      if (hasTraceFolder(path)) await sweep(path)
      await below(path)
    }
  }
  await below(vault)
}

/** Removes the temporary files of writes a crash cut short in a subplan's folder and its outputs (not the old versions parked in its run folder). */
async function sweep(folder: string): Promise<void> {
  await Promise.all([folder, tracePaths(folder).outputs].map((each) => removeStaleTempFiles(each)))
}
