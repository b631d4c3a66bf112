import { lstatSync, realpathSync } from 'node:fs'
import { realpath } from 'node:fs/promises'
import { join, relative, resolve } from 'node:path'
import { isInside } from './fs-atomic.js'

/**
 * A path that would leave its folder, or names no usable folder or note: a
 * user's mistake or a hostile file, never followed. The MCP server answers
 * it as a tool error (or a resource error) whose message says what to pass
 * instead; the library drops or refuses what named it.
 */
export class PathRefusal extends Error {
  override name = 'PathRefusal' as const
  constructor(
    readonly code: 'outside-root' | 'bad-path' | 'not-found' | 'exists' | 'not-a-vault',
    message: string,
  ) {
    super(message)
  }
}

/** A Windows drive (`C:`) or a leading separator. */
const ABSOLUTE = /^([a-zA-Z]:|[\\/])/

/**
 * The rule every path that comes out of a file or from a client obeys before
 * anything is opened with it (a note of a proposal, a trace hop's `output`,
 * a document of the search index, a run file's folder): relative, without
 * `..` (by `/` or `\`) and without a NUL byte. Returns its `/`-separated
 * segments, empty and `.` ones left out.
 *
 * @throws `PathRefusal` `outside-root` for an absolute path or a `..`, `bad-path` for a NUL byte or no string
 */
export function insideSegments(path: string, what: string): string[] {
  if (typeof path !== 'string') throw new PathRefusal('bad-path', `\`${what}\` is no path: \`${String(path)}\``)
  if (path.includes('\0')) throw new PathRefusal('bad-path', `\`${what}\` contains a NUL byte`)
  if (ABSOLUTE.test(path)) throw new PathRefusal('outside-root', `\`${path}\` is absolute; pass ${what} relative to the root, like \`plans/release\``)
  if (path.split(/[\\/]/).includes('..')) throw new PathRefusal('outside-root', `\`${path}\` climbs out with \`..\`; ${what} must stay inside the root`)
  return path.split('/').filter((segment) => segment !== '' && segment !== '.')
}

/**
 * The segments of a path relative to the root or a vault, `/` or `\` between
 * them: {@link insideSegments}' rule, and also no `.` or empty segment (a
 * typo, or a name that says something else than it means).
 *
 * @throws `PathRefusal` for an empty path, and as {@link insideSegments} does
 */
export function segmentsOf(path: string, what: string): string[] {
  if (typeof path !== 'string' || path === '')
    throw new PathRefusal('bad-path', `\`${what}\` is empty; pass a path relative to the root, like \`plans/release\``)
  insideSegments(path, what)
  const segments = path.split(/[\\/]/).filter((segment, index, all) => !(segment === '' && index === all.length - 1))
  for (const segment of segments) {
    if (segment === '' || segment === '.') throw new PathRefusal('bad-path', `\`${path}\` has an empty or \`.\` segment; write ${what} as \`folder/sub\``)
  }
  return segments
}

/**
 * The gate for reading or moving a file whose path came from a file or a
 * client: where `relativePath` leads under the folder `base`, checked on
 * disk. Every part of it that exists must really be inside `base`
 * (symlinks followed, `base` taken by its real path), so a link pointing
 * out, or leading nowhere, refuses the path. Returns the real path of what
 * exists followed by the segments that do not exist yet, and whether the
 * whole path exists. Writes of a run's own files go through the stricter
 * `runFilePath`, which takes no symlink at all.
 *
 * Synchronous: `lstat` and `realpath` never block on what they look at, and
 * a run checks every output its trace names at each call.
 *
 * @throws `PathRefusal` when the path leaves `base` or breaks {@link segmentsOf}' rule.
 */
export function confineSync(base: string, relativePath: string, what: string): { path: string; exists: boolean } {
  const segments = segmentsOf(relativePath, what)
  const root = realpathSync.native(base)
  let real = root
  for (let index = 0; index < segments.length; index++) {
    const next = join(real, segments[index]!)
    const info = lstatOrNothing(next)
    if (info === undefined) return { path: join(next, ...segments.slice(index + 1)), exists: false }
    const resolved = realOrNothing(next)
    // A link to nothing would follow wherever its target appears later, out of the root too.
    if (resolved === undefined && info.isSymbolicLink())
      throw new PathRefusal(
        'outside-root',
        `\`${relativePath}\` goes through a symlink that leads nowhere; ${what} must be a real file or folder inside the root`,
      )
    real = resolved ?? next
    if (!isInside(root, real))
      throw new PathRefusal('outside-root', `\`${relativePath}\` leads outside the root through a symlink; only files inside the root are read or written`)
  }
  return { path: real, exists: true }
}

/** {@link confineSync}, for the callers that await it. */
export async function confine(base: string, relativePath: string, what: string): Promise<{ path: string; exists: boolean }> {
  return confineSync(base, relativePath, what)
}

/** The path {@link confineSync} resolves, or `undefined` for one it refuses: for a list read from a file, whose bad entries are left out. */
export function confinedOrNothing(base: string, relativePath: string, what: string): string | undefined {
  try {
    return confineSync(base, relativePath, what).path
  } catch (error) {
    if (error instanceof PathRefusal) return undefined
    throw error
  }
}

/** What `lstat` says of `path`, `undefined` when there is nothing to follow there (missing, or a file on the way). */
function lstatOrNothing(path: string): ReturnType<typeof lstatSync> | undefined {
  try {
    return lstatSync(path)
  } catch {
    return undefined
  }
}

function realOrNothing(path: string): string | undefined {
  try {
    return realpathSync.native(path)
  } catch {
    return undefined
  }
}

/**
 * Resolves `file` inside `vault` for writing a note (a plan's node, a
 * status), refusing a path that leaves the vault by `..`, by an absolute
 * path or through a symlink: {@link confine}'s rule, after `..` inside the
 * vault is resolved. A note that is a symlink inside the vault resolves to
 * its target.
 *
 * @throws `Error` when the path leaves the vault.
 */
export async function pathInVault(vault: string, file: string): Promise<string> {
  const root = await realpath(vault)
  const target = resolve(root, file)
  if (target === root || !isInside(root, target)) throw new Error(`Refusing to write \`${file}\`: it is outside the vault \`${vault}\``)
  try {
    return (await confine(root, relative(root, target), 'a note')).path
  } catch (error) {
    if (!(error instanceof PathRefusal)) throw error
    throw new Error(`Refusing to write \`${file}\`: it leads outside the vault \`${vault}\` through a symlink`, { cause: error })
  }
}
