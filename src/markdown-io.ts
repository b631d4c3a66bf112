import { constants } from 'node:fs'
import { mkdir, open, readdir, readFile, realpath, stat, type FileHandle } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { stringify } from 'yaml'
import { setFrontmatterStatus } from './frontmatter.js'
import { assertFolder, isInside, pathInVault, toStamp, writeFileAtomic, type FileStamp, type WriteOptions } from './fs-atomic.js'
import { LinkResolver } from './links.js'
import { aliasesOf, DEFAULT_MAX_VISITS, idFromFile, parseNote, readKnob, type ParsedNote } from './parse-note.js'
import { edgeOrigins, loadIssues, PlanGraph, subplanGraphs, type EdgeOrigin } from './plan-graph.js'
import { issueFromSubplan, rerooted, splitSubplans, subplanFoldersOf } from './subplan-folders.js'
import { checkPlan } from './validate.js'
import type { Edge, NodeStatus, PlanIssue, PlanNode } from './types.js'

/** The folder a run writes its trace and outputs into; never part of the plan. */
export const TRACE_FOLDER = '00_plan-trace'
/** Notes larger than this are not read as plan steps. */
const MAX_NOTE_BYTES = 8 * 1024 * 1024
const STATUSES: readonly NodeStatus[] = ['pending', 'active', 'done', 'waiting']
const READ_CONCURRENCY = 32

/** The notes of a vault and the problems met while reading them. */
export interface VaultNotes {
  notes: ParsedNote[]
  issues: PlanIssue[]
}

/**
 * Reads a plan vault: every `*.md` file (subfolders too, not `00_plan-trace/`
 * and not dot-folders) becomes a node whose id is its path without `.md`.
 * A bad note becomes diagnostics, never a failed load; call
 * `graph.validate()` to see them.
 *
 * @throws {Error} when `dir` does not exist or is not a folder.
 */
export async function loadPlan(dir: string): Promise<PlanGraph> {
  const { notes, issues } = await readNotes(dir)
  return graphFromNotes(notes, issues)
}

/** Reads and parses every note of a vault. */
export async function readNotes(dir: string): Promise<VaultNotes> {
  await assertFolder(dir)
  const root = await realpath(dir)
  const issues: PlanIssue[] = []
  const folders: NoteFolders = { claimed: new Set(), skipped: [] }
  const notes: ParsedNote[] = []
  for (let files = await listNotes(root, issues, folders); files.length > 0; ) {
    notes.push(...(await readFiles(root, files, issues)))
    // A subplan folder holds a run of its own once it ran: its notes are still the subplan's, read with the parent.
    const wanted = claimedRunFolders(folders, notes)
    files = []
    for (const folder of wanted) files.push(...(await listNotes(root, issues, folders, folder)))
  }
  return { notes, issues }
}

async function readFiles(root: string, files: string[], issues: PlanIssue[]): Promise<ParsedNote[]> {
  const notes: ParsedNote[] = []
  let next = 0
  const worker = async () => {
    for (let index = next++; index < files.length; index = next++) {
      const note = await readNote(root, files[index]!, issues)
      if (note) notes[index] = note
    }
  }
  await Promise.all(Array.from({ length: Math.min(READ_CONCURRENCY, files.length) }, worker))
  return notes.filter(Boolean)
}

/** Folders the listing passed over because they hold a run, and those a `plan:` claims as subplans (listed all the same). */
export interface NoteFolders {
  claimed: Set<string>
  skipped: string[]
}

/** The passed-over run folders that a note's `plan:` names, marked claimed: they are to be listed now. */
export function claimedRunFolders(folders: NoteFolders, notes: Iterable<Pick<ParsedNote, 'id' | 'file' | 'plan'>>): string[] {
  const named = new Set<string>()
  for (const note of notes) for (const { folder } of subplanFoldersOf(note)) named.add(folder)
  const wanted = folders.skipped.filter((folder) => named.has(folder) && !folders.claimed.has(folder))
  for (const folder of wanted) folders.claimed.add(folder)
  return wanted
}

/**
 * Reads one note file; `undefined` (with a warning) when it is not a text
 * note. The file is checked to be a regular file of bounded size before it
 * is opened, and opened without blocking, so a FIFO, a socket or a device
 * named `*.md` (even one swapped in after the check) never stalls the read.
 */
export async function readNote(root: string, file: string, issues: PlanIssue[]): Promise<ParsedNote | undefined> {
  let buffer: Buffer
  let stamp: FileStamp
  const notRegular = () => issues.push({ code: 'not-a-note', severity: 'warning', message: 'is not a regular file (a FIFO, socket, device or folder); it is not read', file })
  const tooLarge = (size: number) => issues.push({ code: 'note-too-large', severity: 'warning', message: `is ${size} bytes, over the ${MAX_NOTE_BYTES}-byte limit of a plan note; it is not read`, file })
  try {
    const path = join(root, file)
    const before = await stat(path)
    if (!before.isFile()) return void notRegular()
    if (before.size > MAX_NOTE_BYTES) return void tooLarge(before.size)
    // One handle for the stamp and the bytes, so they describe the same version of the note.
    const handle = await open(path, constants.O_RDONLY | (constants.O_NONBLOCK ?? 0))
    try {
      const info = await handle.stat()
      if (!info.isFile()) return void notRegular()
      stamp = toStamp(info)
      if (info.size > MAX_NOTE_BYTES) return void tooLarge(info.size)
      buffer = await readAll(handle, info.size)
    } finally {
      await handle.close()
    }
  } catch (error) {
    issues.push({ code: 'unreadable-note', severity: 'warning', message: `cannot be read: ${(error as Error).message}`, file })
    return undefined
  }
  if (buffer.subarray(0, 8192).includes(0)) {
    issues.push({ code: 'not-a-note', severity: 'warning', message: 'is binary, not a markdown note; it is not read', file })
    return undefined
  }
  const text = buffer.toString('utf8')
  return { ...parseNote(file, text), text, stamp }
}

/**
 * Reads a file through its handle, `size` bytes as its stat said (`readFile`
 * would stat it again). A file that changed since has a new stamp, which
 * the next look at it notices.
 */
async function readAll(handle: FileHandle, size: number): Promise<Buffer> {
  const buffer = Buffer.allocUnsafe(size)
  let length = 0
  while (length < size) {
    const { bytesRead } = await handle.read(buffer, length, size - length, length)
    if (bytesRead === 0) break
    length += bytesRead
  }
  return buffer.subarray(0, length)
}

/** Builds the graph of parsed notes, resolving each edge's link to a node id. */
export function graphFromNotes(notes: ParsedNote[], issues: PlanIssue[] = []): PlanGraph {
  // The notes of a subplan folder are the subplan's (SPEC section 11): validated with the parent, never its nodes.
  const split = splitSubplans(notes)
  const inner = [...split.inner.values()].flat()
  const innerIds = new Set(inner.map((note) => note.id))
  const all = [...issues.filter((issue) => issue.file === undefined || !innerIds.has(idFromFile(issue.file))), ...split.issues]
  const unique = withoutDuplicateIds(split.own, all)
  const resolver = new LinkResolver(unique)
  const innerResolver = inner.length > 0 ? new LinkResolver(inner) : undefined
  const nodes = unique.map((note) => {
    all.push(...note.issues)
    return nodeFromNote(note, resolver, all, innerResolver)
  })
  const graph = new PlanGraph(nodes)
  const subgraphs = new Map<string, PlanGraph>()
  for (const [folder, members] of split.inner) {
    if (members.length === 0) continue
    const subgraph = graphFromNotes(members.map((note) => rerooted(note, folder)))
    subgraphs.set(folder, subgraph)
    all.push(...checkPlan(subgraph).map((issue) => issueFromSubplan(issue, folder)))
  }
  loadIssues.set(graph, all)
  if (subgraphs.size > 0) subplanGraphs.set(graph, subgraphs)
  return graph
}

/**
 * The notes with the first of each id only: `b.md` and `b.MD`, NFC and NFD
 * spellings of one name, `x/b.md` and a file named `x\\b.md` all have the
 * id `b` or `x/b`. Each later one is a `duplicate-id` error naming both files.
 */
function withoutDuplicateIds(notes: ParsedNote[], issues: PlanIssue[]): ParsedNote[] {
  const first = new Map<string, ParsedNote>()
  for (const note of notes) {
    const earlier = first.get(note.id)
    if (!earlier) {
      first.set(note.id, note)
      continue
    }
    issues.push({
      code: 'duplicate-id',
      severity: 'error',
      message: `has the same id \`${note.id}\` as \`${earlier.file}\` (ids ignore the case of \`.md\`, read \`\\\` as \`/\` and compare in Unicode NFC); rename one of the two files`,
      // No \`node\`: two files are wrong, whichever of them the run could reach, so this is never only a warning.
      file: note.file,
    })
  }
  return [...first.values()]
}

function nodeFromNote(note: ParsedNote, resolver: LinkResolver, issues: PlanIssue[], innerResolver?: LinkResolver): PlanNode {
  const edges = note.edges.map((raw) => {
    const origin: EdgeOrigin = { line: raw.line, column: raw.column }
    if (raw.checked !== undefined) origin.checked = raw.checked
    let target = raw.link
    if (raw.outside) origin.problem = 'outside'
    else {
      const resolved = resolver.resolve(raw.link)
      if (resolved.id !== undefined) target = resolved.id
      else if (resolved.candidates.length === 0 && innerResolver?.resolve(raw.link).id !== undefined) origin.problem = 'subplan'
      else if (resolved.candidates.length > 1) {
        origin.problem = 'ambiguous'
        issues.push({
          code: 'ambiguous-link',
          severity: 'error',
          message: `\`[[${raw.link}]]\` matches ${resolved.candidates.length} notes (${resolved.candidates.map((id) => `\`${id}\``).join(', ')}); write the path`,
          node: note.id,
          file: note.file,
          line: raw.line,
          column: raw.column,
        })
      }
    }
    const edge: Edge = { label: raw.label, target, conditional: raw.conditional }
    edgeOrigins.set(edge, origin)
    return edge
  })
  const node: PlanNode = {
    id: note.id,
    title: note.title,
    body: note.body,
    type: note.type,
    status: note.status,
    maxVisits: note.maxVisits,
    edges,
    file: note.file,
    frontmatter: note.frontmatter,
  }
  if (note.tools) node.tools = note.tools
  if (note.role !== undefined) node.role = note.role
  if (note.judge !== undefined) node.judge = note.judge
  if (note.plan !== undefined) node.plan = note.plan
  return node
}

/**
 * Lists the notes of a vault (sorted paths relative to it), skipping
 * `00_plan-trace/` and dot-folders. A folder with a run of its own is passed
 * over (noted in `folders.skipped`) unless it is `claimed` as a subplan.
 *
 * @param from - list only this folder (relative to the vault)
 */
export async function listNotes(root: string, issues: PlanIssue[], folders?: NoteFolders, from = ''): Promise<string[]> {
  const files: string[] = []
  const walk = async (folder: string) => {
    const entries = await readdir(join(root, folder), { withFileTypes: true })
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      if (entry.name.startsWith('.')) continue
      const path = folder ? `${folder}/${entry.name}` : entry.name
      // A run's folder at any depth holds no notes of the plan; a subfolder with a run of its own
      // (a run vault kept inside the plan, a subplan's folder) is a vault of its own.
      if (entry.name === TRACE_FOLDER) continue
      if (entry.isDirectory()) {
        if (folders?.claimed.has(path) || !(await holdsRun(join(root, path)))) await walk(path)
        else folders?.skipped.push(path)
      } else if (/\.md$/i.test(entry.name)) {
        if (entry.isFile()) files.push(path)
        else if (entry.isSymbolicLink()) {
          const real = await realpath(join(root, path)).catch(() => undefined)
          const info = real ? await stat(real) : undefined
          if (real && info?.isFile() && isInside(root, real)) files.push(path)
          else issues.push({ code: 'outside-vault', severity: 'warning', message: 'is a symlink that leads outside the vault (or nowhere); it is not read', file: path })
        }
      }
    }
  }
  await walk(from)
  return files
}

/** Whether a folder is a vault with a run of its own (it has a `00_plan-trace/trace.md`). */
export async function holdsRun(folder: string): Promise<boolean> {
  return stat(join(folder, TRACE_FOLDER, 'trace.md')).then(
    (info) => info.isFile(),
    () => false,
  )
}

/**
 * Writes a graph as a vault: one note per node. A note that already holds
 * the node is left byte for byte as it is; a note whose only change is the
 * status gets just that value patched.
 *
 * @returns the vault's absolute path.
 * @throws {Error} when a node's body leaves a code fence or an Obsidian `%%` comment open: the `## Next` written after it would be hidden.
 */
export async function savePlan(graph: PlanGraph, dir: string, options: WriteOptions = {}): Promise<string> {
  const vault = resolve(dir)
  await mkdir(vault, { recursive: true })
  const resolver = new LinkResolver([...graph.nodes.values()].map((node) => ({ id: node.id, aliases: aliasesOf(node.frontmatter) })))
  for (const node of graph.nodes.values()) {
    const file = node.file ?? `${node.id}.md`
    const path = await pathInVault(vault, file)
    let existing: string | undefined
    try {
      existing = await readFile(path, 'utf8')
    } catch {
      // a new note
    }
    let text = renderNote(node)
    // A body that leaves a code fence or an Obsidian `%%` comment open hides the `## Next` written after it.
    if (parseNote(file, text).edges.length !== node.edges.length) {
      throw new Error(`Cannot save \`${node.id}\`: its body leaves a code fence or an Obsidian \`%%\` comment open, which would hide the \`## Next\` written after it; close it in the body`)
    }
    if (existing !== undefined) {
      const before = nodeFromNote(parseNote(file, existing), resolver, [])
      if (sameNode(before, node)) continue
      if (sameNode({ ...before, status: node.status }, node)) {
        try {
          text = setFrontmatterStatus(existing, node.status)
        } catch {
          // frontmatter we cannot patch in place: write the note anew
        }
      }
    }
    await mkdir(dirname(path), { recursive: true })
    await writeFileAtomic(path, text, options)
  }
  return vault
}

/**
 * Sets one node's `status:` in its note, changing no other byte: comments,
 * key order, quoting, body and line endings stay as they are. A note without
 * frontmatter gains one. The note is found by listing the vault, so its file
 * name need not be the id plus `.md` (`Review.MD`, a name in NFD).
 *
 * @throws {TypeError} on a status that is not one of `pending`, `active`, `done`, `waiting`.
 * @throws {Error} when no note has the id, two notes have it, or its frontmatter cannot be patched.
 */
export async function updateStatus(dir: string, nodeId: string, status: NodeStatus, options: WriteOptions = {}): Promise<void> {
  if (!STATUSES.includes(status)) {
    throw new TypeError(`Expected \`status\` to be one of ${STATUSES.map((s) => `\`${s}\``).join(', ')}, got \`${String(status)}\``)
  }
  // The note is found by listing: its file name need not be the id plus `.md` (`.MD`, NFD names, `\\`).
  await assertFolder(dir)
  const root = await realpath(dir)
  const id = String(nodeId).normalize('NFC')
  const files = (await listNotes(root, [])).filter((file) => idFromFile(file) === id)
  if (files.length === 0) throw new Error(`Cannot set the status of \`${nodeId}\`: no note \`${nodeId}.md\` (nor any note with that id) in \`${dir}\``)
  if (files.length > 1) throw new Error(`Cannot set the status of \`${nodeId}\`: ${files.map((file) => `\`${file}\``).join(' and ')} both have that id; rename one`)
  const path = await pathInVault(root, files[0]!)
  let text: string
  try {
    text = await readFile(path, 'utf8')
  } catch (error) {
    throw new Error(`Cannot set the status of \`${nodeId}\`: \`${files[0]}\` cannot be read (${(error as Error).message})`)
  }
  const updated = setFrontmatterStatus(text, status)
  if (updated !== text) await writeFileAtomic(path, updated, options)
}

/** Renders a node as a note: frontmatter knobs, title, body, `## Next`. */
function renderNote(node: PlanNode): string {
  const data: Record<string, unknown> = { ...node.frontmatter }
  const knob = (key: Parameters<typeof readKnob>[0], value: unknown, fallback: unknown) => {
    const read = Object.hasOwn(node.frontmatter, key) ? (readKnob(key, node.frontmatter[key]) ?? fallback) : fallback
    // What the user wrote stays when it already reads as the node's value (`status:` left empty, say).
    if (JSON.stringify(read) === JSON.stringify(value)) return
    if (value === undefined) delete data[key]
    else data[key] = value
  }
  knob('type', node.type, 'step')
  knob('status', node.status, 'pending')
  knob('tools', node.tools, undefined)
  knob('role', node.role, undefined)
  knob('max_visits', node.maxVisits, DEFAULT_MAX_VISITS)
  knob('judge', node.judge, undefined)
  knob('plan', node.plan?.length === 1 ? node.plan[0] : node.plan, undefined)
  let text = Object.keys(data).length > 0 ? `---\n${stringify(data)}---\n` : ''
  if (node.title !== node.id) text += `# ${escapeInline(node.title)}\n\n`
  if (node.body) text += `${node.body}\n`
  if (node.edges.length > 0) {
    text += `${node.body || node.title !== node.id ? '\n' : ''}## Next\n`
    for (const edge of node.edges) text += edge.label ? `- ${escapeInline(edge.label)} -> [[${edge.target}]]\n` : `- [[${edge.target}]]\n`
  }
  return text
}

/**
 * Escapes a title or label so that markdown reads it back as the same text:
 * emphasis, code, links, HTML and entities, Obsidian's `%%` comments, a closing `#`, and what would
 * open a list, quote or heading at the start of a list item.
 */
function escapeInline(text: string): string {
  return text.replace(/[\\`*_[\]<>&#%]/g, '\\$&').replace(/^[-+]/, '\\$&').replace(/^(\d{1,9})([.)])/, '$1\\$2')
}

function sameNode(a: PlanNode, b: PlanNode): boolean {
  const shape = (node: PlanNode) =>
    JSON.stringify([
      node.id,
      node.title,
      node.body,
      node.type,
      node.status,
      node.tools ?? null,
      node.role ?? null,
      node.maxVisits,
      node.judge ?? null,
      node.plan ?? null,
      node.edges.map((edge) => [edge.label, edge.target, edge.conditional]),
      node.frontmatter,
    ])
  return shape(a) === shape(b)
}
