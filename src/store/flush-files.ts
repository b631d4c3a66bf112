import { closeSync, constants, fsyncSync, lstatSync, openSync } from 'node:fs'
import { open } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { syncFolderSync } from '../vault/fs-atomic.js'

/** How many files a finished run's journal flushes at once. */
const FLUSHES_AT_ONCE = 8

/**
 * Flushes files of a vault (vault-relative) and their folders, several at
 * once in the thread pool (the file system commits flushes that overlap
 * together): a finished run's output notes, at its end.
 */
export async function flushFilesAtOnce(root: string, files: string[]): Promise<void> {
  const folders = new Set<string>()
  const flushOne = async (file: string) => {
    const path = join(root, file)
    const handle = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK).catch(() => undefined)
    if (!handle) return
    try {
      if ((await handle.stat()).isFile()) {
        await handle.sync()
        folders.add(dirname(path))
      }
    } finally {
      await handle.close()
    }
  }
  const queue = [...new Set(files)]
  await Promise.all(
    Array.from({ length: Math.min(FLUSHES_AT_ONCE, queue.length) }, async () => {
      for (let file = queue.pop(); file !== undefined; file = queue.pop()) await flushOne(file)
    }),
  )
  for (const folder of folders) syncFolderSync(folder)
}

/** Flushes files of a vault (vault-relative) and their folders; one gone or unreadable has nothing to keep. */
export function flushFiles(root: string, ...lists: Iterable<string>[]): void {
  const folders = new Set<string>()
  for (const file of lists.flatMap((list) => [...list])) {
    const path = join(root, file)
    try {
      if (!lstatSync(path).isFile()) continue
      const fd = openSync(path, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK)
      try {
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
      folders.add(dirname(path))
    } catch {
      // gone or unreadable: nothing of it to keep
    }
  }
  for (const folder of folders) syncFolderSync(folder)
}
