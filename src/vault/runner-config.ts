import { readFile, realpath } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { isInside } from './fs-atomic.js'

/*
 * The runner's own settings, `vaultplan.config.json` in the working folder
 * of whoever runs a plan: the checks a note may name, and the schedules of
 * `vaultplan schedule`. A vault must not define the commands it runs, so
 * the one rule below decides for every surface (the CLI's commands, the MCP
 * server, a queue worker's jobs) whether that folder may give checks.
 */

/** The file of the runner's settings, read from the working folder. */
export const CONFIG_FILE = 'vaultplan.config.json'

/**
 * Reads `vaultplan.config.json` in `folder`: its keys, or `undefined` when
 * there is no such file. The one reader of the file.
 *
 * @throws `TypeError` for a file that is not a JSON object, with why
 */
export async function readRunnerConfig(folder: string): Promise<Record<string, unknown> | undefined> {
  const text = await readFile(join(folder, CONFIG_FILE), 'utf8').catch(() => undefined)
  if (text === undefined) return undefined
  let config: unknown
  try {
    config = JSON.parse(text)
  } catch (error) {
    throw new TypeError(`${CONFIG_FILE} is not JSON: ${(error as Error).message}`)
  }
  if (typeof config !== 'object' || config === null || Array.isArray(config)) throw new TypeError(`${CONFIG_FILE} is not a JSON object`)
  return config as Record<string, unknown>
}

/** What a runner's folders are to the config: the vaults being run, or the root a server serves. */
export interface GuardedFolders {
  folders: readonly string[]
  as: 'vault' | 'root'
}

/**
 * The one rule for where checks may come from: the config of `cwd` defines
 * none when `cwd` is one of `guarded.folders` or inside one (compared by
 * real paths, so a symlinked way in is no way round). Resolves to the
 * sentence that refuses it, naming the folder and how to give the checks
 * instead; `undefined` when the config may define checks.
 */
export async function configRefusal(cwd: string, guarded: GuardedFolders): Promise<string | undefined> {
  const here = await realOrResolved(cwd)
  for (const folder of guarded.folders) {
    if (!isInside(await realOrResolved(folder), here)) continue
    const what = guarded.as === 'root' ? 'the root this server serves' : 'the vault being run'
    const outside = guarded.as === 'root' ? 'start the server from a folder outside the root' : 'run from a folder outside the vault'
    return (
      `${CONFIG_FILE} in ${cwd} is inside ${what} (${folder}), so its checks are not read: a vault must not define the commands it runs. ` +
      `Give the checks with --check NAME='CMD' (may be repeated), or ${outside}.`
    )
  }
  return undefined
}

async function realOrResolved(path: string): Promise<string> {
  return realpath(path).catch(() => resolve(path))
}
