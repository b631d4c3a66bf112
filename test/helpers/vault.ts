import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join, relative } from 'node:path'
import { afterEach } from 'vitest'
import { observeRun } from 'vaultplan'
import { until } from './until.js'

const temps: string[] = []

afterEach(async () => {
  await Promise.all(temps.splice(0).map((dir) => rm(dir, { recursive: true, force: true })))
})

/** A fresh, empty temporary folder, removed after the test. */
export async function tempDir(prefix = 'vaultplan-test-'): Promise<string> {
  const dir = await mkdtemp(join(tmpdir(), prefix))
  temps.push(dir)
  return dir
}

/** Writes `{ 'path.md': 'text' }` into `dir` (or a fresh temporary vault) and returns the folder. */
export async function writeVault(files: Record<string, string | Buffer>, dir?: string): Promise<string> {
  const root = dir ?? (await tempDir())
  for (const [file, text] of Object.entries(files)) {
    await mkdir(dirname(join(root, file)), { recursive: true })
    await writeFile(join(root, file), text)
  }
  return root
}

/** Every file under `dir`, path -> text, sorted by path; `skipTrace` leaves `00_plan-trace/` out. */
export async function readTree(dir: string, options: { skipTrace?: boolean } = {}): Promise<Record<string, string>> {
  const files: Record<string, string> = {}
  const walk = async (folder: string): Promise<void> => {
    const entries = await readdir(folder, { withFileTypes: true })
    entries.sort((a, b) => (a.name < b.name ? -1 : 1))
    for (const entry of entries) {
      const path = join(folder, entry.name)
      const rel = relative(dir, path).split('\\').join('/')
      if (options.skipTrace && rel === '00_plan-trace') continue
      if (entry.isDirectory()) await walk(path)
      else {
        // A file gone between the listing and the read (a run's temporary file, while it works) was not there to read.
        const text = await readFile(path, 'utf8').catch((error: NodeJS.ErrnoException) => (error.code === 'ENOENT' ? undefined : Promise.reject(error)))
        if (text !== undefined) files[rel] = text
      }
    }
  }
  await walk(dir)
  return files
}

/** The notes of a vault (every `*.md` outside `00_plan-trace/`), path -> text. */
export async function readNotes(dir: string): Promise<Record<string, string>> {
  const tree = await readTree(dir, { skipTrace: true })
  return Object.fromEntries(Object.entries(tree).filter(([path]) => path.endsWith('.md')))
}

/** The `status:` of every note as written on disk (`pending` when absent), id -> status. */
export async function statuses(dir: string): Promise<Record<string, string>> {
  const notes = await readNotes(dir)
  return Object.fromEntries(Object.entries(notes).map(([path, text]) => [path.replace(/\.md$/, ''), statusOf(text)]))
}

/**
 * Where the run's snapshot says each note stands (`observeRun`: the notes
 * and the run's journal as one), by id: what the run has persisted, whether
 * or not it is written into the note yet.
 */
export async function persistedStatuses(dir: string): Promise<Record<string, string>> {
  const snapshot = await observeRun(dir)
  return Object.fromEntries(snapshot.nodes.map((node) => [node.id, node.status]).sort(([a], [b]) => (a! < b! ? -1 : 1)))
}

/** Waits until every note shows the status the run persisted for it (see {@link persistedStatuses}), as a person sees them. */
export async function untilShown(dir: string): Promise<void> {
  let seen = { shown: {}, persisted: {} }
  await until(
    async () => {
      seen = { shown: await statuses(dir), persisted: await persistedStatuses(dir) }
      return JSON.stringify(seen.shown) === JSON.stringify(seen.persisted)
    },
    () => `the notes to show what the run persisted, ${JSON.stringify(seen.persisted)}; they show ${JSON.stringify(seen.shown)}`,
  )
}

/**
 * Waits until the note `file` says `status:` `status`, as a person watching
 * it in their notes app would see it (a run writes a hop's statuses into the
 * notes within milliseconds).
 */
export async function shownInNote(dir: string, file: string, status: string): Promise<void> {
  let now = ''
  await until(
    async () => (now = statusOf(await readFile(join(dir, file), 'utf8').catch(() => ''))) === status,
    () => `\`${file}\` to say \`status: ${status}\`; it says \`status: ${now}\``,
  )
}

/** The `status:` in a note's frontmatter; `pending` when it has none. */
export function statusOf(text: string): string {
  const front = /^---\r?\n([\s\S]*?)\r?\n---/.exec(text)?.[1] ?? ''
  return /^status:\s*['"]?(\w+)/m.exec(front)?.[1] ?? 'pending'
}

/** Reads a file of the vault. */
export function read(dir: string, file: string): Promise<string> {
  return readFile(join(dir, file), 'utf8')
}

/** Rewrites a note in place, the way Obsidian saves it (same file, new bytes). */
export async function edit(dir: string, file: string, change: (text: string) => string): Promise<void> {
  const path = join(dir, file)
  const before = await readFile(path, 'utf8')
  const after = change(before)
  if (after === before) throw new Error(`edit of ${file} changed nothing`)
  await writeFile(path, after)
}

/** One hop of `00_plan-trace/trace.md` as a person reads it. */
export interface TraceEntry {
  heading: string
  edge?: string
  decidedBy?: string
  rationale: string
}

/**
 * The entries of the trace, read from its human-readable sections.
 * `complete` leaves out a section without its closing marker line (one torn by a crash).
 */
export async function traceEntries(dir: string, options: { complete?: boolean } = {}): Promise<TraceEntry[]> {
  const text = await read(dir, '00_plan-trace/trace.md')
  return text
    .split(/\n(?=## )/)
    .slice(1)
    .filter((section) => !options.complete || section.includes('\n<!-- vaultplan:hop '))
    .map((section) => {
      const lines = section.split('\n')
      const entry: TraceEntry = { heading: lines[0]!.replace(/^## /, ''), rationale: '' }
      const edge = lines.find((line) => line.startsWith('- Edge: '))
      const decided = lines.find((line) => line.startsWith('- Decided by: '))
      if (edge) entry.edge = edge.slice('- Edge: '.length)
      if (decided) entry.decidedBy = decided.slice('- Decided by: '.length)
      entry.rationale = lines
        .filter((line) => line.startsWith('> '))
        .map((line) => line.slice(2))
        .join('\n')
      return entry
    })
}

/** The trace headings only: `Step 2 · [[draft]] · visit 1`, ... */
export async function traceHeadings(dir: string): Promise<string[]> {
  return (await traceEntries(dir)).map((entry) => entry.heading)
}

/** A small note: frontmatter from `front`, a title, a body and `## Next` items. */
export function note(options: { front?: Record<string, string | number>; title?: string; body?: string; next?: string[] }): string {
  const front =
    options.front && Object.keys(options.front).length > 0
      ? `---\n${Object.entries(options.front)
          .map(([key, value]) => `${key}: ${value}`)
          .join('\n')}\n---\n`
      : ''
  const title = options.title ? `# ${options.title}\n\n` : ''
  const body = options.body ? `${options.body}\n` : ''
  const next = options.next ? `\n## Next\n${options.next.map((item) => `- ${item}`).join('\n')}\n` : ''
  return `${front}${title}${body}${next}`
}

/**
 * Every folder and file under `dir`, hidden ones included (the run's journal, the lock's records), path -> the
 * file's bytes (base64), or `folder/` -> `''` for a folder: what a call that writes nothing leaves exactly as it was.
 */
export async function vaultBytes(dir: string): Promise<Record<string, string>> {
  const found: Record<string, string> = {}
  const walk = async (folder: string): Promise<void> => {
    for (const entry of await readdir(folder, { withFileTypes: true })) {
      const path = join(folder, entry.name)
      const rel = relative(dir, path).split('\\').join('/')
      if (entry.isDirectory()) {
        found[`${rel}/`] = ''
        await walk(path)
      } else found[rel] = (await readFile(path)).toString('base64')
    }
  }
  await walk(dir)
  return Object.fromEntries(Object.entries(found).sort(([a], [b]) => (a < b ? -1 : 1)))
}
