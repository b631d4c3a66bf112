import { constants } from 'node:fs'
import { access } from 'node:fs/promises'
import { statOrNothing } from './stat-or-nothing.js'
import { join } from 'node:path'

/** Why a file cannot be written where it would go: the kind, and the words that say so. */
export interface Unwritable {
  kind: 'name-too-long' | 'path-too-long' | 'reserved-name' | 'folder-in-the-way' | 'file-in-the-way' | 'not-writable'
  /** A clause that follows the file's name: `whose name is 300 bytes long, over the 255 a file name may have`. */
  message: string
}

/** The longest name of one file or folder, in bytes of UTF-8: what Linux, macOS and Windows file systems all hold. */
const NAME_MAX_BYTES = 255
/** The longest absolute path a system opens, in bytes (PATH_MAX); Windows' long paths reach far further. */
const PATH_MAX_BYTES: Partial<Record<NodeJS.Platform, number>> = { linux: 4095, darwin: 1023, freebsd: 1023, openbsd: 1023 }
/** The names Windows keeps for devices, with or without an extension, and what its file names never hold. */
const WINDOWS_DEVICE = /^(con|prn|aux|nul|com[0-9¹²³]|lpt[0-9¹²³])(\..*)?$/i
const WINDOWS_FORBIDDEN = /[<>:"|?*\u0000-\u001f]|[. ]$/

/**
 * Whether a file can be written at `file` (relative to `vault`, `/` between
 * names), looked at before anything is written so that a write of several
 * files fails before the first rather than after it: every name within the
 * bytes a file system holds, the whole path within the system's limit, no
 * name Windows reserves (on Windows), no folder in the file's place, no
 * file in a folder's place, and the nearest folder that exists writable.
 * A race can still make the write fail (a disk filling up, a folder made
 * meanwhile): this looks, it does not reserve.
 *
 * @returns why it cannot, or `undefined` when it can
 */
export async function unwritable(vault: string, file: string, platform: NodeJS.Platform = process.platform): Promise<Unwritable | undefined> {
  const names = file.split('/').filter((name) => name !== '')
  for (const [at, name] of names.entries()) {
    const bytes = Buffer.byteLength(name)
    const whose = at === names.length - 1 ? 'whose name' : `whose folder \`${name}\``
    if (bytes > NAME_MAX_BYTES) return { kind: 'name-too-long', message: `${whose} is ${bytes} bytes long, over the ${NAME_MAX_BYTES} a file name may have` }
    if (platform === 'win32' && (WINDOWS_DEVICE.test(name) || WINDOWS_FORBIDDEN.test(name)))
      return { kind: 'reserved-name', message: `and \`${name}\` is a name Windows keeps for itself (a device, or a character or an ending it refuses)` }
  }
  const path = join(vault, ...names)
  const limit = PATH_MAX_BYTES[platform]
  const bytes = Buffer.byteLength(path)
  if (limit !== undefined && bytes > limit) return { kind: 'path-too-long', message: `whose path is ${bytes} bytes long, over the ${limit} this system opens` }
  let folder = vault
  let depth = 0
  for (const [at, name] of names.entries()) {
    const next = join(folder, name)
    const info = await statOrNothing(next)
    if (info === undefined) break
    if (at === names.length - 1) {
      if (info.isDirectory()) return { kind: 'folder-in-the-way', message: 'where a folder of that name stands' }
    } else if (!info.isDirectory()) return { kind: 'file-in-the-way', message: `where \`${names.slice(0, at + 1).join('/')}\` is a file, not a folder` }
    else {
      folder = next
      depth = at + 1
    }
  }
  // A file is written as a temporary file renamed into place: its folder must take new names.
  const writable = await access(folder, constants.W_OK | constants.X_OK).then(
    () => true,
    () => false,
  )
  const shown = depth === 0 ? 'the vault' : `\`${names.slice(0, depth).join('/')}\``
  if (!writable) return { kind: 'not-writable', message: `in ${shown}, a folder this process may not write into` }
  return undefined
}
