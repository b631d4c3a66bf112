import { watch, type FSWatcher } from 'node:fs'

/** A folder's watcher, as its owner needs it (no Node type in the declarations a package user compiles). */
export interface FolderWatcher {
  close(): void
}
import { join } from 'node:path'
import { TRACE_FOLDER } from './run-folder.js'

/**
 * Watches a vault's folders (relative to `root`, `''` for the root) for
 * edits: `onNote` gets a changed note's path relative to the vault, and
 * `onRelist` says the folder must be listed again (an unknown name, a new
 * subfolder, a watcher's error). A folder that cannot be watched is passed
 * over: watching is an optimisation, the notes a hop touches are still
 * checked by their stamp.
 */
export function watchFolders(root: string, folders: Iterable<string>, onNote: (file: string) => void, onRelist: () => void): FolderWatcher[] {
  const watchers: FSWatcher[] = []
  // Each folder once; `.` (the `dirname` of a note at the top) is the vault itself.
  for (const folder of new Set([...folders].map((each) => (each === '.' ? '' : each)))) {
    try {
      const watcher = watch(join(root, folder), { persistent: false }, (_event, name) => {
        if (name === null) return onRelist()
        if (!folder && name === TRACE_FOLDER) return
        const file = folder ? `${folder}/${name}` : String(name)
        if (/\.md$/i.test(file)) onNote(file)
        else if (!String(name).startsWith('.')) onRelist()
      })
      watcher.on('error', onRelist)
      watchers.push(watcher)
    } catch {
      // not watched: see above
    }
  }
  return watchers
}
