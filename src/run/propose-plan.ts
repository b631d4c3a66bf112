import { mkdir, readdir, readFile, rename, rm, stat } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { VaultPathError } from '../core/errors.js'
import { sameStamp, stampOf, writeFileAtomic } from '../vault/fs-atomic.js'
import { confinedOrNothing } from '../vault/path-gate.js'
import { runFilePath } from '../vault/run-file-path.js'
import { setFrontmatterStatus } from '../vault/frontmatter.js'
import { createLLM } from '../models/llm-client.js'
import { savePlan } from '../plan/save-plan.js'
import { listNotes } from '../vault/read-vault.js'
import { readNoteForRewrite } from '../vault/settled-read.js'
import { PROPOSAL_FILE, PROPOSALS_FOLDER, TRACE_FOLDER } from '../vault/run-folder.js'
import { PlanGraph } from '../plan/plan-graph.js'
import { planGraph } from '../plan/plan-document.js'
import { parseProposal, renderProposal, type ProposalContent, type ProposalNote } from '../vault/proposal-note.js'
import { intoPlace } from './run-vault.js'
import { dataFence } from '../core/text.js'
import type { CallLLM } from '../core/types.js'

/** Options of `proposePlan`. */
export interface ProposeOptions {
  /** The folder the proposal's vault is written into: missing or empty. */
  into: string
  /**
   * The planning role's model.
   *
   * @default the client configured from `LLM_*` environment variables
   */
  llm?: CallLLM
  /**
   * Flush every write to the disk.
   *
   * @default true
   */
  fsync?: boolean
  signal?: AbortSignal
}

/**
 * Has the planning role write a plan for `query` (as `planGraph` does,
 * degrading to a path graph) and writes it into `into` as a vault that waits
 * for a person: `00_plan-trace/proposal.md` records the version, the status,
 * the query, and three boxes, `approve`, `revise`, `decline`, with a
 * `## Feedback` section. Until a box is ticked, `runPlan` on the vault
 * returns `waiting` on the proposal. The vault appears whole or not at all.
 *
 * @returns the vault's absolute path
 * @throws {@link VaultPathError} `vault-not-empty` when `into` holds anything, `vault-not-folder` when it is a file
 * @throws {@link ModelConfigError} when no `llm` is given and no planning model is configured; nothing is written
 * @throws `TypeError` on a bad argument
 */
export async function proposePlan(query: string, options: ProposeOptions): Promise<string> {
  if (typeof query !== 'string' || query.trim() === '') throw new TypeError(`Expected \`query\` to be a non-empty string, got \`${String(query)}\``)
  if (!options || typeof options.into !== 'string' || options.into === '')
    throw new TypeError(`Expected \`options.into\` to be a folder path, got \`${String(options?.into)}\``)
  if (options.llm !== undefined && typeof options.llm !== 'function')
    throw new TypeError(`Expected \`options.llm\` to be a function, got \`${typeof options.llm}\``)
  const target = resolve(options.into)
  await assertEmptyFolder(target)
  const fsync = options.fsync ?? true
  const graph = await planGraph(query, options.llm ?? createLLM(), signalOf(options.signal))
  const fill = async (temp: string) => {
    await savePlan(graph, temp, { fsync })
    await mkdir(join(temp, TRACE_FOLDER), { recursive: true })
    await writeFileAtomic(join(temp, PROPOSAL_FILE), renderProposal(contentOf(graph, query, 1, [])), { fsync })
  }
  await intoPlace(target, fill, { fsync })
  return target
}

/**
 * Writes version n+1 of a proposal sent back with `revise`: the planner
 * gets the query, the person's feedback and version n's notes; version n's
 * notes (only those the proposal wrote, listed in its `notes:`) and its
 * proposal note move under `00_plan-trace/proposals/v<n>/`, the new notes
 * take their place (renamed when a person's own note holds the name) and
 * the new proposal links every earlier version. The planner is asked before
 * anything moves.
 *
 * @returns the new proposal
 */
export async function reviseProposal(
  vault: string,
  note: ProposalNote,
  options: { llm: CallLLM; fsync: boolean; signal?: AbortSignal | undefined },
): Promise<ProposalNote> {
  const version = note.version
  // `notes:` is text a person (or anyone) may edit: only the notes the gate finds inside the vault are read, moved or sent.
  const ours = notesInside(vault, note.notes)
  const earlierNotes = await Promise.all(ours.map(async ({ file, path }) => ({ file, text: await readFile(path, 'utf8').catch(() => undefined) })))
  const fence = dataFence("an earlier plan and a person's feedback on it")
  const request = [
    note.query,
    '',
    `Version ${version} of the plan for this task was sent back by a person. Write version ${version + 1}: follow the feedback, and keep what it does not ask to change.`,
    fence.rule,
    '',
    fence.wrap('The feedback:', note.feedback ?? '(none given)', 8_000),
    '',
    fence.wrap(
      `Version ${version}, note by note:`,
      earlierNotes.flatMap(({ file, text }) => (text === undefined ? [] : [`### ${file}\n${text.trim()}`])).join('\n\n'),
      24_000,
    ),
  ].join('\n')
  const planned = await planGraph(request, options.llm, signalOf(options.signal))
  const folder = `${PROPOSALS_FOLDER}/v${version}`
  // The notes a revision cut short wrote are ours too, like the version's own.
  // Every write below goes into real folders of the vault, never through a symlink (runFilePath).
  const journal = runFilePath(vault, `${folder}/revision.json`)
  const mine = new Set([...ours.map(({ file }) => file), ...(await attemptedNotes(journal))])
  // A person's own notes keep their names: a new note that would take one is renamed.
  const taken = new Set((await listNotes(vault, [])).filter((file) => !mine.has(file)))
  const graph = clearOf(planned, taken, version + 1)
  const path = runFilePath(vault, PROPOSAL_FILE)
  const archived = runFilePath(vault, `${folder}/proposal.md`)
  const archive = async () => {
    const text = await readNoteForRewrite(PROPOSAL_FILE, path, true)
    await writeFileAtomic(archived, setFrontmatterStatus(text, 'revised'), { fsync: options.fsync })
    return stampOf(path)
  }
  await writeFileAtomic(journal, `${JSON.stringify({ notes: contentOf(graph, note.query, version + 1, []).notes })}\n`, { fsync: options.fsync })
  const stamp = await archive()
  for (const { file } of ours) {
    const to = runFilePath(vault, `${folder}/${file}`)
    // Kept already by a revision cut short: what now holds the name stays where it is, never overwriting the kept one.
    if (
      await stat(to).then(
        () => true,
        () => false,
      )
    )
      continue
    await rename(join(vault, file), to).catch((error: NodeJS.ErrnoException) => {
      // Deleted by a person: nothing to keep.
      if (error.code !== 'ENOENT') throw error
    })
  }
  await savePlan(graph, vault, { fsync: options.fsync })
  const content = contentOf(graph, note.query, version + 1, await earlierVersions(vault, version))
  content.parent = `${folder}/proposal.md`
  // A person's edit of the proposal while the planner wrote is kept in the archived copy.
  if (!sameStamp(await stampOf(path), stamp)) await archive()
  const text = renderProposal(content)
  await writeFileAtomic(path, text, { fsync: options.fsync })
  await rm(journal, { force: true })
  return parseProposal(text, vault)
}

/** The entries of a proposal's `notes:` that the path gate finds inside the vault, each with the real path it reads from. */
function notesInside(vault: string, notes: string[]): { file: string; path: string }[] {
  const inside = notes.map((file) => ({ file, path: confinedOrNothing(vault, file, 'a note of the proposal') }))
  return inside.filter((note): note is { file: string; path: string } => note.path !== undefined)
}

/** The notes a revision cut short had started to write, from its journal. */
async function attemptedNotes(journal: string): Promise<string[]> {
  try {
    const notes = (JSON.parse(await readFile(journal, 'utf8')) as { notes?: unknown }).notes
    return Array.isArray(notes) ? notes.filter((file): file is string => typeof file === 'string') : []
  } catch {
    return []
  }
}

/** The versions kept under `proposals/`, oldest first, with the feedback that sent each back. */
async function earlierVersions(vault: string, upTo: number): Promise<ProposalContent['earlier']> {
  const names = await readdir(join(vault, PROPOSALS_FOLDER)).catch(() => [] as string[])
  const versions = names.flatMap((name) => {
    const version = /^v(\d+)$/.exec(name)?.[1]
    return version === undefined || Number(version) > upTo ? [] : [Number(version)]
  })
  const earlier: ProposalContent['earlier'] = []
  for (const version of versions.sort((a, b) => a - b)) {
    const folder = `${PROPOSALS_FOLDER}/v${version}`
    const kept = confinedOrNothing(vault, `${folder}/proposal.md`, 'a kept proposal')
    const text = kept === undefined ? undefined : await readFile(kept, 'utf8').catch(() => undefined)
    let feedback: string | undefined
    try {
      feedback = text === undefined ? undefined : parseProposal(text, vault).feedback
    } catch {
      // A kept version a person broke still gets its link.
    }
    earlier.push(feedback === undefined ? { version, folder } : { version, folder, feedback })
  }
  return earlier
}

function contentOf(graph: PlanGraph, query: string, version: number, earlier: ProposalContent['earlier']): ProposalContent {
  const nodes = [...graph.nodes.values()]
  const content: ProposalContent = { version, query, notes: nodes.map((node) => node.file ?? `${node.id}.md`), nodes: nodes.map((node) => node.id), earlier }
  if (graph.degraded !== undefined) content.degraded = graph.degraded
  return content
}

/** The graph with every node whose note name is `taken` renamed (`draft` -> `draft-v2`), its edges following. */
function clearOf(graph: PlanGraph, taken: Set<string>, version: number): PlanGraph {
  const renamed = new Map<string, string>()
  const used = new Set([...taken].map((file) => file.replace(/\.md$/i, '').toLowerCase()))
  for (const id of graph.nodes.keys()) used.add(id.toLowerCase())
  for (const node of graph.nodes.values()) {
    if (!taken.has(node.file ?? `${node.id}.md`)) continue
    let id = `${node.id}-v${version}`
    for (let more = 2; used.has(id.toLowerCase()); more++) id = `${node.id}-v${version}-${more}`
    used.add(id.toLowerCase())
    renamed.set(node.id, id)
  }
  if (renamed.size === 0) return graph
  const cleared = new PlanGraph(
    [...graph.nodes.values()].map(({ file: _file, ...node }) => ({
      ...node,
      id: renamed.get(node.id) ?? node.id,
      edges: node.edges.map((edge) => ({ ...edge, target: renamed.get(edge.target) ?? edge.target })),
    })),
  )
  if (graph.degraded !== undefined) cleared.degraded = graph.degraded
  return cleared
}

async function assertEmptyFolder(target: string): Promise<void> {
  const info = await stat(target).catch(() => undefined)
  if (!info) return
  if (!info.isDirectory()) throw new VaultPathError('vault-not-folder', `\`${target}\` is a file; propose into a new or empty folder.`)
  if ((await readdir(target)).length > 0)
    throw new VaultPathError(
      'vault-not-empty',
      `\`${target}\` is not empty; propose into a new or empty folder, so the proposal's notes do not mix with others.`,
    )
}

function signalOf(signal: AbortSignal | undefined): { signal?: AbortSignal } {
  return signal ? { signal } : {}
}
