import { lstat } from 'node:fs/promises'
import { sep } from 'node:path'
import { confine, PathRefusal, segmentsOf } from '../vault/path-gate.js'

// The one gate for paths from clients and from files (src/vault/path-gate.ts), as the server's tools use it.
export { confine, PathRefusal, segmentsOf }

/** The scheme of the notes and traces the server offers as resources. */
export const URI_SCHEME = 'vaultplan:'

/**
 * The vault `vault` (relative to the root) as a real path: an existing folder
 * strictly inside the root.
 *
 * @throws {PathRefusal} when it leaves the root, is the root itself, or is no folder.
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
 * The resource URI of a file of a vault (SPEC section 10): the vault, relative
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
 * @throws {PathRefusal} for a URI of this scheme that is malformed or climbs out.
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
