import { lstatSync, mkdirSync } from 'node:fs'
import { join } from 'node:path'
import { RunStateError } from '../core/errors.js'
import { insideSegments, symlinkInRunFolder } from './path-gate.js'
import { statOrNothingSync } from './stat-or-nothing.js'

/**
 * The one check every write of a run's own files goes through (the trace,
 * outputs, final note, archive, ledger, lock, journal, `graph --write`'s
 * picture, the search index): `folder`, a path relative to the vault, is
 * created where it is missing, and every part of it, from the vault down,
 * must be a real folder. A symlink anywhere on the way (even one that leads
 * back inside the vault) is refused: run files go where their names say,
 * never into a person's notes or outside the vault. The notes themselves,
 * which may be symlinks inside the vault, are resolved by `pathInVault` (src/vault/path-gate.ts).
 *
 * Synchronous: `lstat` and `mkdir` never block on what they look at.
 *
 * @returns the folder's absolute path
 * @throws {@link RunStateError} `trace-outside-vault` for a symlink on the way, `trace-not-folder` for a file in a folder's place
 * @throws `PathRefusal` for a `folder` that is absolute or climbs out with `..` (see `insideSegments`)
 */
export function runFolder(vault: string, folder: string): string {
  let path = vault
  for (const part of insideSegments(folder, 'a run folder')) {
    path = join(path, part)
    const info = statOrNothingSync(path, { link: true })
    if (info === undefined) {
      mkdirOnce(path)
      continue
    }
    if (info.isSymbolicLink()) throw symlinkInRunFolder(path)
    if (!info.isDirectory()) {
      throw new RunStateError(
        'trace-not-folder',
        `\`${path}\` is a file, not a folder; move it away (a run writes its trace, outputs and lock under \`${folder.split('/')[0]}\`), then run again.`,
        { path },
      )
    }
  }
  return path
}

/**
 * Where a file of a run's own is written: its folder as {@link runFolder}
 * checks it, and the file itself never a symlink (an append would follow it).
 *
 * @param file - relative to the vault, `/` between names: `00_plan-trace/ledger.md`
 * @returns the file's absolute path
 * @throws {@link RunStateError} `trace-outside-vault` for a symlink on the way or in the file's place
 */
export function runFilePath(vault: string, file: string): string {
  const cut = file.lastIndexOf('/')
  const path = join(runFolder(vault, cut < 0 ? '' : file.slice(0, cut)), file.slice(cut + 1))
  if (statOrNothingSync(path, { link: true })?.isSymbolicLink()) throw symlinkInRunFolder(path)
  return path
}

/** Creates one folder (its parent checked already); another writer creating it first is fine. */
function mkdirOnce(path: string): void {
  try {
    mkdirSync(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !lstatSync(path).isDirectory()) throw error
  }
}
