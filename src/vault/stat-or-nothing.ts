import { lstatSync, statSync, type Stats } from 'node:fs'
import { lstat, stat } from 'node:fs/promises'

/** How a look at a path is made: `link: true` looks at a symlink itself (`lstat`) instead of where it leads. */
export interface LookOptions {
  /** @default false */
  link?: boolean
}

/**
 * What `stat` (or, with `link`, `lstat`) says of `path`, or `undefined`
 * when nothing is there: the path is missing, or a file stands where one of
 * its folders should be. Synchronous: a stat never blocks on what it looks
 * at, and a miss builds no error.
 *
 * @throws any other error of the look (no permission, a loop of symlinks, ...)
 */
export function statOrNothingSync(path: string, options: LookOptions = {}): Stats | undefined {
  try {
    return (options.link ? lstatSync : statSync)(path, { throwIfNoEntry: false })
  } catch (error) {
    if (nothingThere(error)) return undefined
    throw error
  }
}

/**
 * {@link statOrNothingSync} through `fs/promises`, for a path that may be
 * slow to look at (a network share, a FIFO's folder).
 *
 * @throws any other error of the look (no permission, a loop of symlinks, ...)
 */
export async function statOrNothing(path: string, options: LookOptions = {}): Promise<Stats | undefined> {
  try {
    return await (options.link ? lstat : stat)(path)
  } catch (error) {
    if (nothingThere(error)) return undefined
    throw error
  }
}

/** Whether a file call failed because nothing is at its path (missing, or a file in a folder's place). */
function nothingThere(error: unknown): boolean {
  const code = (error as NodeJS.ErrnoException | null)?.code
  return code === 'ENOENT' || code === 'ENOTDIR'
}
