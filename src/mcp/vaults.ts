import { open, readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { TRACE_FOLDER } from '../vault/run-folder.js'

/** How far `findVaults` looks: folders deep below the root, and vaults at most. */
export const FIND_DEFAULTS = { depth: 6, limit: 100 }
/** Bytes of a note read to tell whether it is part of a plan. */
const SNIFF_BYTES = 16 * 1024
const NEXT_HEADING = /^##[ \t]+next[ \t]*#*[ \t]*$/im
const START_KNOB = /^type[ \t]*:[ \t]*['"]?start\b/im
/** Folders that hold packages or build output, never plans. */
const SKIPPED = new Set(['node_modules', TRACE_FOLDER])

/**
 * The plan vaults under `root`, as real paths, sorted: folders that hold a
 * run (`00_plan-trace/`) or a note with a `## Next` list or `type: start`.
 * A vault's own subfolders (subplans, folders of notes) are part of it and
 * not listed again; dot-folders and `node_modules` are skipped, and so are
 * symlinked folders (they may lead out of the root).
 *
 * @param options.depth - how many folders deep to look (default 6)
 * @param options.limit - how many vaults at most (default 100); `truncated` says when more were left
 */
export async function findVaults(root: string, options: { depth?: number; limit?: number } = {}): Promise<{ vaults: string[]; truncated: boolean }> {
  const { depth, limit } = { ...FIND_DEFAULTS, ...options }
  const vaults: string[] = []
  let truncated = false
  const walk = async (folder: string, level: number): Promise<void> => {
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => [])
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    if (folder !== root && (await isPlanFolder(folder, entries))) {
      if (vaults.length >= limit) truncated = true
      else vaults.push(folder)
      return
    }
    if (level >= depth) return
    for (const entry of entries) {
      if (truncated) return
      if (entry.isDirectory() && !entry.name.startsWith('.') && !SKIPPED.has(entry.name)) await walk(join(folder, entry.name), level + 1)
    }
  }
  await walk(root, 0)
  return { vaults, truncated }
}

/** Whether `folder` holds a plan: a run (`00_plan-trace/`), or a note with a `## Next` list or `type: start`. */
export async function isPlanFolder(folder: string, entries?: { name: string; isDirectory(): boolean; isFile(): boolean }[]): Promise<boolean> {
  entries ??= await readdir(folder, { withFileTypes: true }).catch(() => [])
  if (entries.some((entry) => entry.isDirectory() && entry.name === TRACE_FOLDER)) return true
  for (const entry of entries) {
    if (!entry.isFile() || !/\.md$/i.test(entry.name)) continue
    const head = await readHead(join(folder, entry.name))
    if (NEXT_HEADING.test(head) || (head.startsWith('---') && START_KNOB.test(head))) return true
  }
  return false
}

async function readHead(file: string): Promise<string> {
  const handle = await open(file, 'r').catch(() => undefined)
  if (!handle) return ''
  try {
    const buffer = Buffer.alloc(SNIFF_BYTES)
    const { bytesRead } = await handle.read(buffer, 0, SNIFF_BYTES, 0)
    return buffer.subarray(0, bytesRead).toString('utf8')
  } finally {
    await handle.close()
  }
}
