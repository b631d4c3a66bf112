import { lstat, realpath } from 'node:fs/promises'
import { join, sep } from 'node:path'
import { isInside } from '../vault/fs-atomic.js'

/** The scheme of the notes and traces the server offers as resources. */
export const URI_SCHEME = 'vaultplan:'

/**
 * A request that would leave the root, or names no usable folder or note: a
 * user's mistake, answered as a tool error (or a resource error) whose
 * message says what to pass instead.
 */
export class PathRefusal extends Error {
  override name = 'PathRefusal' as const
  constructor(
    readonly code: 'outside-root' | 'bad-path' | 'not-found' | 'exists',
    message: string,
  ) {
    super(message)
  }
}

/**
 * The segments of a path relative to the root or a vault, `/` or `\` between
 * them. Refuses what could name something else than it says: an absolute
 * path, `..`, `.`, an empty segment, a NUL byte.
 */
export function segmentsOf(path: string, what: string): string[] {
  if (typeof path !== 'string' || path === '')
    throw new PathRefusal('bad-path', `\`${what}\` is empty; pass a path relative to the root, like \`plans/release\``)
  if (path.includes('\0')) throw new PathRefusal('bad-path', `\`${what}\` contains a NUL byte`)
  if (/^([a-zA-Z]:|[\\/])/.test(path)) {
    throw new PathRefusal('outside-root', `\`${path}\` is absolute; pass ${what} relative to the root the server serves, like \`plans/release\``)
  }
  const segments = path.split(/[\\/]/).filter((segment, index, all) => !(segment === '' && index === all.length - 1))
  for (const segment of segments) {
    if (segment === '..') throw new PathRefusal('outside-root', `\`${path}\` climbs out with \`..\`; ${what} must stay inside the root the server serves`)
    if (segment === '' || segment === '.') throw new PathRefusal('bad-path', `\`${path}\` has an empty or \`.\` segment; write ${what} as \`folder/sub\``)
  }
  return segments
}

/**
 * Where `relativePath` leads under the folder `base` (a real path), checked on
 * disk: the deepest part of it that exists must really be inside `base`
 * (symlinks followed), so a link pointing out of the root refuses the path.
 * Resolves to the real path of what exists followed by the segments that do
 * not exist yet, and whether the whole path exists.
 *
 * @throws `PathRefusal` when the path leaves `base`.
 */
export async function confine(base: string, relativePath: string, what: string): Promise<{ path: string; exists: boolean }> {
  const segments = segmentsOf(relativePath, what)
  let real = base
  for (let index = 0; index < segments.length; index++) {
    const next = join(real, segments[index]!)
    try {
      await lstat(next)
    } catch {
      return { path: join(next, ...segments.slice(index + 1)), exists: false }
    }
    real = await realpath(next).catch(() => next)
    if (!isInside(base, real))
      throw new PathRefusal('outside-root', `\`${relativePath}\` leads outside the root through a symlink; the server reads and writes only inside its root`)
  }
  return { path: real, exists: true }
}

/**
 * The vault `vault` (relative to the root) as a real path: an existing folder
 * strictly inside the root.
 *
 * @throws `PathRefusal` when it leaves the root, is the root itself, or is no folder.
 */
export async function vaultPath(root: string, vault: string): Promise<string> {
  const { path, exists } = await confine(root, vault, 'the vault')
  if (path === root) throw new PathRefusal('bad-path', `\`${vault}\` is the root itself; a vault is a folder inside the root, like \`plans/release\``)
  const info = exists ? await lstat(path) : undefined
  if (!info?.isDirectory()) {
    throw new PathRefusal('not-found', `There is no vault folder \`${vault}\` under the root; plan_list shows the vaults, plan_create writes a new one`)
  }
  return path
}

/** A vault's path relative to the root as the server names it: `/` between folders, whatever the platform. */
export function vaultName(root: string, vault: string): string {
  return vault
    .slice(root.length + 1)
    .split(sep)
    .join('/')
}

/**
 * The resource URI of a file of a vault: the vault, relative
 * to the root, percent-encoded as one segment, then each segment of the
 * file's path relative to the vault, so `review/final.md` of the vault
 * `plans/release` is `vaultplan://plans%2Frelease/review/final.md`.
 */
export function resourceUri(vault: string, file: string): string {
  return `${URI_SCHEME}//${encodeURIComponent(vault)}/${file.split('/').map(encodeURIComponent).join('/')}`
}

/**
 * Reads a resource URI back into the vault and the file, both decoded and
 * checked like any path a client passes; `undefined` for a URI of another
 * scheme.
 *
 * @throws `PathRefusal` for a URI of this scheme that is malformed or climbs out.
 */
export function parseResourceUri(uri: string): { vault: string; file: string } | undefined {
  const prefix = `${URI_SCHEME}//`
  if (!uri.toLowerCase().startsWith(prefix)) return undefined
  const [encodedVault = '', ...encodedFile] = uri.slice(prefix.length).split(/[?#]/)[0]!.split('/')
  const decode = (segment: string) => {
    try {
      return decodeURIComponent(segment)
    } catch {
      throw new PathRefusal('bad-path', `\`${uri}\` is not percent-encoded properly`)
    }
  }
  const vault = decode(encodedVault)
  const fileSegments = encodedFile.map(decode)
  if (vault === '' || fileSegments.length === 0) {
    throw new PathRefusal('bad-path', `\`${uri}\` names no note; resource URIs read \`vaultplan://<vault>/<note path>\``)
  }
  if (fileSegments.some((segment) => segment.includes('/') || segment.includes('\\'))) {
    throw new PathRefusal('bad-path', `\`${uri}\` has an encoded \`/\` inside the note's path; encode each segment on its own`)
  }
  const file = fileSegments.join('/')
  segmentsOf(vault, 'the vault')
  segmentsOf(file, 'the note')
  return { vault, file }
}
