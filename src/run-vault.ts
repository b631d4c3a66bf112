import { copyFile, mkdir, readdir, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { listNotes, savePlan, TRACE_FOLDER } from './markdown-io.js'
import { RunStateError } from './errors.js'
import type { PlanGraph } from './plan-graph.js'
import { tracePaths } from './trace.js'

/**
 * Where a run happens. A folder runs in place; with `runVault`, the plan is
 * copied there first (unless the run vault already holds it, then it is
 * resumed); an in-memory graph is written out first, by default to
 * `./runs/<YYYYMMDD-HHMMSS>-<slug of the query>/`.
 */
export async function prepareRunVault(plan: string | PlanGraph, options: { query: string; runVault?: string; fsync: boolean }): Promise<string> {
  if (typeof plan === 'string') {
    if (options.runVault === undefined || resolve(options.runVault) === resolve(plan)) return resolve(plan)
    const target = resolve(options.runVault)
    const planFiles = await listNotes(resolve(plan), []).catch(() => [])
    if (!(await holdsPlan(target, planFiles))) await copyVault(resolve(plan), target)
    return target
  }
  const target = resolve(options.runVault ?? defaultRunVault(options.query))
  const planFiles = [...plan.nodes.values()].map((node) => node.file ?? `${node.id}.md`)
  if (!(await holdsPlan(target, planFiles))) await savePlan(plan, target, { fsync: options.fsync })
  return target
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
 * @throws {RunStateError} when it holds other notes and no run: copying the plan in would mix the two.
 */
async function holdsPlan(folder: string, planFiles: string[]): Promise<boolean> {
  if (await stat(tracePaths(folder).trace).then(() => true, () => false)) return true
  const notes = await listNotes(folder, []).catch(() => [] as string[])
  if (notes.length === 0) return false
  const expected = new Set(planFiles)
  if (notes.length === expected.size && notes.every((file) => expected.has(file))) return true
  throw new RunStateError(
    'run-vault-not-empty',
    `The run vault \`${folder}\` holds other notes and no run of this plan; pick an empty folder (or one holding a run of this plan) so the plan's copy does not mix with them.`,
  )
}

/** Copies a plan vault (notes, attachments, `.obsidian/`), leaving out its trace, `.git/` and `.trash/`. Symlinks are not followed. */
async function copyVault(from: string, to: string): Promise<void> {
  const info = await stat(from).catch(() => undefined)
  if (!info?.isDirectory()) throw new Error(`Plan vault \`${from}\` does not exist or is not a folder`)
  const walk = async (relative: string) => {
    await mkdir(join(to, relative), { recursive: true })
    for (const entry of await readdir(join(from, relative), { withFileTypes: true })) {
      if (!relative && (entry.name === TRACE_FOLDER || entry.name === '.git' || entry.name === '.trash')) continue
      const path = relative ? join(relative, entry.name) : entry.name
      // A run vault inside the plan folder must not be copied into itself.
      if (entry.isDirectory() && resolve(from, path) === to) continue
      if (entry.isDirectory()) await walk(path)
      else if (entry.isFile()) await copyFile(join(from, path), join(to, path))
    }
  }
  await walk('')
}

