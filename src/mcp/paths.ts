import { lstatSync, readdirSync } from 'node:fs'
import { dirname, sep } from 'node:path'
import { confine, PathRefusal, segmentsOf } from '../vault/path-gate.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import { findVaults, isPlanFolder } from './vaults.js'

// The one gate for paths from clients and from files (src/vault/path-gate.ts), as the server's tools use it.
export { confine, PathRefusal, segmentsOf }

/** The scheme of the notes and traces the server offers as resources. */
export const URI_SCHEME = 'vaultplan:'

/**
 * The vault `vault` (relative to the root) as a real path: an existing folder
 * strictly inside the root, and no folder of another vault's. Every tool
 * that takes a vault goes through here.
 *
 * @throws `PathRefusal` when it leaves the root, is the root itself, is no folder, or is inside a vault.
 */
export async function vaultPath(root: string, vault: string): Promise<string> {
  const { path, exists } = await confine(root, vault, 'the vault')
  if (path === root) throw new PathRefusal('bad-path', `\`${vault}\` is the root itself; a vault is a folder inside the root, like \`plans/release\``)
  // The looks of every tool call at its vault are synchronous: a turn of the thread pool costs more than a stat or a listing.
  const info = exists ? lstatSync(path) : undefined
  if (!info?.isDirectory()) {
    throw new PathRefusal('not-found', `There is no vault folder \`${vault}\` under the root; plan_list shows the vaults, plan_create writes a new one`)
  }
  await refuseInsideVault(root, path, vault)
  await refuseNoNotes(root, path, vault)
  return path
}

/**
 * Refuses a folder with no note of its own (no `*.md` beside its subfolders)
 * and no run: a folder that holds vaults, or nothing of a plan. Run as a
 * vault, it would take the notes of the vaults below it for one plan and
 * write a run of its own above them.
 *
 * @throws `PathRefusal` `not-a-vault`, naming the vaults it holds
 */
async function refuseNoNotes(root: string, path: string, vault: string): Promise<void> {
  const entries = readdirSync(path, { withFileTypes: true })
  const own = entries.some((entry) => (entry.isFile() && /\.md$/i.test(entry.name)) || (entry.isDirectory() && entry.name === TRACE_FOLDER))
  if (own) return
  const { vaults } = await findVaults(path, { limit: 5 })
  const names = vaults.map((inner) => `\`${vaultName(root, inner)}\``)
  throw new PathRefusal(
    'not-a-vault',
    names.length > 0
      ? `\`${vault}\` holds no note of its own, only vaults (${names.join(', ')}${vaults.length === 5 ? ', ...' : ''}): it is no vault itself`
      : `\`${vault}\` holds no note of its own: it is no vault`,
  )
}

/**
 * Refuses `path` (a real path under `root`, existing or not) when a folder
 * above it, below the root, holds a plan: it is then that vault's notes, a
 * subplan or a run's files, and a run started or a plan written there would
 * change that plan (its notes leave it, its saved outputs get a `status:`).
 *
 * @param code - `exists` for a vault to create: the folder is taken by the vault above
 * @throws `PathRefusal` naming the vault it is inside
 */
export async function refuseInsideVault(root: string, path: string, vault: string, code: 'bad-path' | 'exists' = 'bad-path'): Promise<void> {
  // The outermost plan folder is the vault: a subplan's folder inside it is a plan folder too.
  let outermost: string | undefined
  for (let folder = dirname(path); folder.startsWith(root + sep); folder = dirname(folder)) {
    if (await isPlanFolder(folder)) outermost = folder
  }
  if (outermost === undefined) return
  const name = vaultName(root, outermost)
  throw new PathRefusal(
    code,
    code === 'exists'
      ? `\`${vault}\` would be inside the vault \`${name}\`, whose notes would change that plan; put it beside that vault`
      : `\`${vault}\` is inside the vault \`${name}\`: its notes and run files belong to that plan; pass \`${name}\``,
  )
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
