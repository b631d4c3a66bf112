import { realpathSync, type Stats } from 'node:fs'
import { realpath } from 'node:fs/promises'
import { join, relative, resolve, sep } from 'node:path'
import { RunStateError } from '../core/errors.js'
import { isInside, toStamp, type FileStamp } from './fs-atomic.js'
import { statOrNothingSync } from './stat-or-nothing.js'

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
  partsInside(path, what)
  return path.split('/').filter((segment) => segment !== '' && segment !== '.')
}

/** {@link insideSegments}' rule; returns the parts between `/` and `\`. */
function partsInside(path: string, what: string): string[] {
  if (typeof path !== 'string') throw new PathRefusal('bad-path', `\`${what}\` is no path: \`${String(path)}\``)
  if (path.includes('\0')) throw new PathRefusal('bad-path', `\`${what}\` contains a NUL byte`)
  if (ABSOLUTE.test(path)) throw new PathRefusal('outside-root', `\`${path}\` is absolute; pass ${what} relative to the root, like \`plans/release\``)
  const parts = path.split(/[\\/]/)
  if (parts.includes('..')) throw new PathRefusal('outside-root', `\`${path}\` climbs out with \`..\`; ${what} must stay inside the root`)
  return parts
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
  const segments = partsInside(path, what)
  // A path may end in a separator (a folder); no other empty segment.
  if (segments.at(-1) === '') segments.pop()
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
 * a run checks every output its trace names at each call. `stamp`: the
 * stamp of what the path names, when it is a regular file (no symlink).
 *
 * @param seen - what an earlier gate of the same pass found, to look at each folder once ({@link GateMemo})
 * @throws `PathRefusal` when the path leaves `base` or breaks {@link segmentsOf}' rule.
 */
export function confineSync(base: string, relativePath: string, what: string, seen?: GateMemo): { path: string; exists: boolean; stamp?: FileStamp } {
  const segments = segmentsOf(relativePath, what)
  const root = seen?.get('') ?? realpathSync.native(base)
  seen?.set('', root)
  let real = root
  let info: Stats | undefined
  let folders = ''
  for (let index = 0; index < segments.length; index++) {
    const segment = segments[index]!
    folders = index === 0 ? segment : `${folders}/${segment}`
    const folder = index < segments.length - 1 ? folders : undefined
    const known = folder === undefined ? undefined : seen?.get(folder)
    if (known !== undefined) {
      real = known
      continue
    }
    // A real path and a plain name (no separator, no `.` or `..`): `join`'s tidying has nothing to do.
    const next = real.endsWith(sep) ? `${real}${segment}` : `${real}${sep}${segment}`
    info = statOrNothingSync(next, { link: true })
    if (info === undefined) return { path: join(next, ...segments.slice(index + 1)), exists: false }
    // Not a link, in a folder known by its real path: its real path already (a run checks every output at each call).
    real = info.isSymbolicLink() ? linkInside(root, next, relativePath, what) : next
    if (folder !== undefined) seen?.set(folder, real)
  }
  // What the last look found, when that is what the path names (no symlink): a caller that wants its stamp need not look again.
  return info?.isFile() ? { path: real, exists: true, stamp: toStamp(info) } : { path: real, exists: true }
}

/** Where the symlink at `path` leads, refused unless it is something inside `root`. */
function linkInside(root: string, path: string, relativePath: string, what: string): string {
  const resolved = realOrNothing(path)
  // A link to nothing would follow wherever its target appears later, out of the root too.
  if (resolved === undefined)
    throw new PathRefusal(
      'outside-root',
      `\`${relativePath}\` goes through a symlink that leads nowhere; ${what} must be a real file or folder inside the root`,
    )
  if (!isInside(root, resolved))
    throw new PathRefusal('outside-root', `\`${relativePath}\` leads outside the root through a symlink; only files inside the root are read or written`)
  return resolved
}

/**
 * What one pass of {@link confineSync} over many paths under one base
 * found (the base's real path, and the real path of each folder by its
 * segments): the folders the paths share are looked at once. Use one for a
 * single pass over a list read at once, never keep it: the disk may change
 * after it.
 */
export type GateMemo = Map<string, string>

/** {@link confineSync}, for the callers that await it. */
export async function confine(base: string, relativePath: string, what: string): Promise<{ path: string; exists: boolean }> {
  const { path, exists } = confineSync(base, relativePath, what)
  return { path, exists }
}

/** The path {@link confineSync} resolves, or `undefined` for one it refuses: for a list read from a file, whose bad entries are left out. */
export function confinedOrNothing(base: string, relativePath: string, what: string, seen?: GateMemo): string | undefined {
  try {
    return confineSync(base, relativePath, what, seen).path
  } catch (error) {
    if (error instanceof PathRefusal) return undefined
    throw error
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

/**
 * The gate for reading a run's own file (its trace, output notes, ledger,
 * final note): `file` under `vault`, with no symlink on the way from the
 * vault down, as a run requires of every file it writes (`runFilePath`).
 * So a reader (a snapshot, the status, the board, the MCP server) never
 * shows what a run would refuse: a `00_plan-trace` linked to the run folder
 * of another vault, in the same root or out of it. Where a part is missing
 * the look ends: the file is missing, and its read finds nothing.
 *
 * Synchronous: `lstat` never blocks on what it looks at.
 *
 * @param file - relative to the vault, `/` between names: `00_plan-trace/trace.md`
 * @returns the file's absolute path
 * @throws {@link RunStateError} `trace-outside-vault` for a symlink on the way, the file's own place included
 * @throws `PathRefusal` for a `file` that is absolute or climbs out with `..`
 */
export function runFileToRead(vault: string, file: string): string {
  let path = vault
  for (const part of insideSegments(file, 'a run file')) {
    path = join(path, part)
    const info = statOrNothingSync(path, { link: true })
    if (info === undefined) return join(vault, file)
    if (info.isSymbolicLink()) throw symlinkInRunFolder(path)
  }
  return path
}

/** The refusal of a symlink at `path`, where a run keeps its own files: for a write and a read alike. */
export function symlinkInRunFolder(path: string): RunStateError<'trace-outside-vault'> {
  return new RunStateError(
    'trace-outside-vault',
    `\`${path}\` is a symlink; a run keeps its files only in real folders of its vault, and reads and writes none through a link. Remove it (or put a folder in its place), then run again.`,
    { path },
  )
}
