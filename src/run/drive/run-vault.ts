import { createHash } from 'node:crypto'
import { copyFile, mkdir, readdir, realpath, rename, rm, rmdir, symlink } from 'node:fs/promises'
import { basename, dirname, join, relative, resolve, sep } from 'node:path'
import { makeFolder, syncFolder, syncTree } from '../../vault/fs-atomic.js'
import { confinedOrNothing } from '../../vault/path-gate.js'
import { isAlive } from '../../vault/lock-holder.js'
import { holdsRun, listNotes, readNotes } from '../../vault/read-vault.js'
import { subplanFoldersOf } from '../../vault/subplan-folders.js'
import { loadPlan } from '../../plan/load-plan.js'
import { savePlan } from '../../plan/save-plan.js'
import { TRACE_FOLDER } from '../../vault/run-folder.js'
import { namingVault, RunStateError } from '../../core/errors.js'
import type { PlanGraph } from '../../plan/plan-graph.js'
import { readTrace, tracePaths } from '../../store/trace.js'
import { statOrNothing } from '../../vault/stat-or-nothing.js'

/**
 * Where a run happens. A folder runs in place; with `runVault`, the plan is
 * copied there first (unless the run vault already holds it, then it is
 * resumed); an in-memory graph is written out first, by default to
 * `./runs/<YYYYMMDD-HHMMSS>-<slug of the query>/`. A copy is written into a
 * temporary folder and renamed into place, so a kill never leaves half a plan.
 * `source` identifies the plan (the template's real path, or a hash of the
 * graph) for the trace header. A template is validated (with the runner's
 * `tools`) before it is copied.
 *
 * @throws {@link RunStateError} `run-vault-other-plan` when the run vault holds a run of another plan
 * @throws {@link PlanValidationError} when a template to copy is invalid (nothing is copied)
 */
export async function prepareRunVault(
  plan: string | PlanGraph,
  options: { query?: string | undefined; runVault?: string | undefined; fsync: boolean; tools?: string[] | undefined; checks?: string[] | undefined },
): Promise<{ vault: string; source?: string }> {
  if (typeof plan === 'string') {
    if (options.runVault === undefined || resolve(options.runVault) === resolve(plan)) return { vault: resolve(plan) }
    const target = resolve(options.runVault)
    const source = await realpath(plan).catch(() => resolve(plan))
    const planFiles = await listNotes(resolve(plan), []).catch(() => [])
    if (!(await holdsPlan(target, planFiles, source))) {
      // A broken template is never copied: a copy would be held as the plan on the next run, after the template was fixed.
      const template = await loadPlan(resolve(plan))
      try {
        template.validate({ ...(options.tools && { tools: options.tools }), ...(options.checks && { checks: options.checks }) })
      } catch (error) {
        throw namingVault(error, plan)
      }
      await intoPlace(target, (temp) => copyVault(resolve(plan), temp, [target]), options)
    }
    return { vault: target, source }
  }
  const target = resolve(options.runVault ?? defaultRunVault(options.query ?? 'run'))
  const source = `sha256:${graphHash(plan)}`
  const planFiles = [...plan.nodes.values()].map((node) => node.file ?? `${node.id}.md`)
  if (!(await holdsPlan(target, planFiles, source)))
    await intoPlace(target, (temp) => savePlan(plan, temp, { fsync: options.fsync }).then(() => undefined), options)
  return { vault: target, source }
}

/** A hash of what a graph says (not its statuses): two emitted plans with the same ids still differ. */
function graphHash(graph: PlanGraph): string {
  const nodes = [...graph.nodes.values()].map(({ id, title, body, type, tools, role, maxVisits, judge, edges, file }) => [
    id,
    title,
    body,
    type,
    tools,
    role,
    maxVisits,
    judge,
    edges,
    file,
  ])
  return createHash('sha256').update(JSON.stringify(nodes)).digest('hex')
}

/**
 * Fills a temporary folder beside `target`, then renames it into place (over
 * a missing or empty folder). The temporary folders of copies whose process
 * is gone (killed mid-copy) are removed first. With `fsync`, every file and
 * folder of the filled folder is flushed before the rename, and the folder
 * holding `target` after it: a power cut then leaves no run vault or a whole
 * one, and the rename is on the disk before anything is written into it.
 */
export async function intoPlace(target: string, fill: (temp: string) => Promise<void>, options: { fsync: boolean }): Promise<void> {
  const parent = dirname(target)
  await makeFolder(parent, options)
  await checkPlace(target)
  const temp = `${target}${COPY_TEMP}${process.pid}`
  await removeDeadCopies(target)
  await rm(temp, { recursive: true, force: true })
  try {
    await fill(temp)
    if (options.fsync) await syncTree(temp)
    await rmdir(target).catch((error: NodeJS.ErrnoException) => {
      if (error.code !== 'ENOENT') throw error
    })
    await rename(temp, target)
  } catch (error) {
    // Whole or not at all: a failed fill or rename leaves no half-written copy beside the target.
    await rm(temp, { recursive: true, force: true })
    throw error
  }
  if (options.fsync) await syncFolder(parent)
}

/**
 * Checks that a plan may be written at `target`: nothing there yet, or a
 * real folder. A symlink is refused, as the loader does not read a
 * symlinked folder as part of the plan (and a write through it would land
 * outside the vault); so is a file.
 *
 * @throws {RunStateError} `trace-outside-vault` for a symlink, `trace-not-folder` for a file
 */
export async function checkPlace(target: string): Promise<void> {
  const info = await statOrNothing(target, { link: true })
  if (info?.isSymbolicLink()) {
    throw new RunStateError(
      'trace-outside-vault',
      `\`${target}\` is a symlink; a plan is written only into a real folder (or where there is none yet). Remove it (or put a folder in its place), then run again.`,
      { path: target },
    )
  }
  if (info !== undefined && !info.isDirectory()) {
    throw new RunStateError('trace-not-folder', `\`${target}\` is a file, not a folder; move it away so the plan can be written there, then run again.`, {
      path: target,
    })
  }
}

const COPY_TEMP = '.vaultplan-tmp-'

/** Removes `<target>.vaultplan-tmp-<pid>` folders whose process is no longer alive on this machine. */
async function removeDeadCopies(target: string): Promise<void> {
  const prefix = `${basename(target)}${COPY_TEMP}`
  const names = await readdir(dirname(target)).catch(() => [] as string[])
  for (const name of names) {
    const pid = name.startsWith(prefix) ? Number(name.slice(prefix.length)) : NaN
    if (Number.isInteger(pid) && pid > 0 && pid !== process.pid && !isAlive(pid)) await rm(join(dirname(target), name), { recursive: true, force: true })
  }
}

/** `runs/20261129-214500-write-a-post` for the query "Write a post". */
function defaultRunVault(query: string, now = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0')
  const stamp = `${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}-${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`
  const slug = query
    .normalize('NFKD')
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, '-')
    .replace(/^-+|-+$/g, '')
    .slice(0, 40)
    .replace(/-+$/, '')
  return join('runs', slug ? `${stamp}-${slug}` : stamp)
}

/**
 * Whether `folder` already holds this plan: it has a run's trace, or exactly
 * the plan's notes (a copy made just before a crash). An empty or missing
 * folder does not.
 *
 * @throws {@link RunStateError} when it holds other notes and no run: copying the plan in would mix the two.
 */
async function holdsPlan(folder: string, planFiles: string[], source: string): Promise<boolean> {
  const trace = await readTrace(folder).catch(() => undefined)
  if (trace) {
    if (trace.header.source !== undefined && trace.header.source !== source) {
      throw new RunStateError(
        'run-vault-other-plan',
        `The run vault \`${folder}\` holds a run of another plan (\`${trace.header.source}\`, not \`${source}\`); pick another run vault, or an empty folder.`,
        { folder, source: trace.header.source },
      )
    }
    return true
  }
  if ((await statOrNothing(tracePaths(folder).trace)) !== undefined) return true
  const notes = await listNotes(folder, []).catch(() => [] as string[])
  if (notes.length === 0) return false
  const expected = new Set(planFiles)
  if (notes.length === expected.size && notes.every((file) => expected.has(file))) return true
  throw new RunStateError(
    'run-vault-not-empty',
    `The run vault \`${folder}\` holds other notes and no run of this plan; pick an empty folder (or one holding a run of this plan) so the plan's copy does not mix with them.`,
    { folder },
  )
}

/**
 * Copies a plan vault (notes, attachments, `.obsidian/`, subplan folders),
 * leaving out the traces (its own and its subplans'), `.git/` and `.trash/`. A symlink to a file inside the vault (a note
 * the plan reads in place) is copied as a symlink to the same file of the
 * copy, so the copy is the plan it was; symlinks that lead out of the vault,
 * and symlinked folders, are left out, as the plan in place does not read them.
 */
export async function copyVault(from: string, to: string, skip: string[]): Promise<void> {
  const info = await statOrNothing(from)
  if (!info?.isDirectory()) throw new Error(`Plan vault \`${from}\` does not exist or is not a folder`)
  const root = await realpath(from)
  // A subplan's folder holds a run of its own once it ran in place; it is still part of the plan.
  const { notes } = await readNotes(from).catch(() => ({ notes: [] }))
  const subplans = new Set(notes.flatMap((note) => subplanFoldersOf(note).map(({ folder }) => folder)))
  const walk = async (relative: string) => {
    await mkdir(join(to, relative), { recursive: true })
    for (const entry of await readdir(join(from, relative), { withFileTypes: true })) {
      if (entry.name === TRACE_FOLDER || (!relative && (entry.name === '.git' || entry.name === '.trash'))) continue
      const path = relative ? join(relative, entry.name) : entry.name
      // A run vault inside the plan folder (this one, or one kept from an earlier run) is no part of the plan.
      const kept = async () => !subplans.has(path.split('\\').join('/')) && (await holdsRun(join(from, path)))
      if (entry.isDirectory() && ([to, ...skip].includes(resolve(from, path)) || (await kept()))) continue
      if (entry.isDirectory()) await walk(path)
      else if (entry.isFile()) await copyFile(join(from, path), join(to, path))
      else if (entry.isSymbolicLink()) await copyLink(root, path, to)
    }
  }
  await walk('')
}

/** A symlink of the plan that leads to a file inside it, made again in the copy relative to where it sits. */
async function copyLink(root: string, path: string, to: string): Promise<void> {
  const real = confinedOrNothing(root, path, 'a link of the plan')
  if (real === undefined || !(await statOrNothing(real))?.isFile()) return
  const target = relative(root, real)
  // A file the copy leaves out (the trace, `.git/`): the copy holds its bytes instead.
  const copied = !target.split(sep).some((part) => part === TRACE_FOLDER || part.startsWith('.'))
  if (copied) await symlink(relative(dirname(join(root, path)), real), join(to, path))
  else await copyFile(real, join(to, path))
}
