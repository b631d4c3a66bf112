import { mkdir, readdir, readFile, rename, rm } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { RunStateError, VaultPathError } from '../../core/errors.js'
import { durationMs } from '../../core/durations.js'
import { knobExpects } from '../../core/knobs.js'
import { withVaultLock } from '../../vault/lock.js'
import { sameStamp, stampOf, writeFileAtomic } from '../../vault/fs-atomic.js'
import { confinedOrNothing } from '../../vault/path-gate.js'
import { runFilePath } from '../../vault/run-file-path.js'
import { setFrontmatterStatus } from '../../vault/frontmatter.js'
import { createLLM } from '../../models/llm-client.js'
import { savePlan } from '../../plan/save-plan.js'
import { listNotes } from '../../vault/read-vault.js'
import { readNoteForRewrite } from '../../vault/settled-read.js'
import { feedbackAsTyped } from '../../vault/note-edits.js'
import { PROPOSAL_FILE, PROPOSALS_FOLDER, TRACE_FOLDER } from '../../vault/run-folder.js'
import { PlanGraph } from '../../plan/plan-graph.js'
import { parsePlanDocument, planGraph } from '../../plan/plan-document.js'
import { parseProposal, readProposalNote, renderProposal, type ProposalContent, type ProposalNote } from '../../vault/proposal-note.js'
import { intoPlace } from '../drive/run-vault.js'
import { dataFence } from '../../core/text.js'
import { clipLine } from '../core/messages.js'
import type { CallLLM } from '../../core/types.js'
import { statOrNothing } from '../../vault/stat-or-nothing.js'

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
   * A plan document an agent wrote (the format `parsePlanDocument` reads):
   * it is the proposal, and no model is asked, now or for a revision. On a
   * folder whose proposal a person sent back with `revise`, it is the next
   * version. Not with `llm`.
   */
  document?: string
  /**
   * How long a version may wait for a person (`45s`, `30m`, `4h`, `2d`)
   * before its `waiting` entry says `overdue` (it keeps waiting: a proposal
   * has no `timeout` edge). Written as `wait:` in the proposal note, where a
   * person may change it.
   *
   * @default no deadline; a revision keeps the one its proposal has
   */
  wait?: string
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
 * degrading to a path graph), or takes the `document` an agent wrote, and
 * writes it into `into` as a vault that waits for a person:
 * `00_plan-trace/proposal.md` records the version, the status, the query,
 * and three boxes, `approve`, `revise`, `decline`, with a `## Feedback`
 * section. Until a box is ticked, `runPlan` on the vault returns `waiting`
 * on the proposal. The vault appears whole or not at all. With `document`,
 * on a vault whose proposal a person sent back with `revise`, writes
 * version n+1 as a planner's revision would.
 *
 * @returns the vault's absolute path
 * @throws {@link VaultPathError} `vault-not-empty` when `into` holds anything (but a proposal sent back, with `document`), `vault-not-folder` when it is a file
 * @throws {@link PlanValidationError} when `document` is not a valid plan; nothing is written
 * @throws {@link RunStateError} `not-revising` when, with `document`, `into` holds a proposal no person sent back with `revise`; `query-mismatch` for another query than the proposal's; `vault-locked` while a run holds the vault
 * @throws {@link ModelConfigError} when no `llm` or `document` is given and no planning model is configured; nothing is written
 * @throws `TypeError` on a bad argument
 */
export async function proposePlan(query: string, options: ProposeOptions): Promise<string> {
  if (typeof query !== 'string' || query.trim() === '') throw new TypeError(`Expected \`query\` to be a non-empty string, got \`${String(query)}\``)
  if (!options || typeof options.into !== 'string' || options.into === '')
    throw new TypeError(`Expected \`options.into\` to be a folder path, got \`${String(options?.into)}\``)
  if (options.llm !== undefined && typeof options.llm !== 'function')
    throw new TypeError(`Expected \`options.llm\` to be a function, got \`${typeof options.llm}\``)
  if (options.document !== undefined && (typeof options.document !== 'string' || options.llm !== undefined))
    throw new TypeError(
      `Expected \`options.document\` to be a plan document string, and no \`llm\` beside it (an agent's document is the plan), got \`${typeof options.document}\``,
    )
  if (options.wait !== undefined && (typeof options.wait !== 'string' || durationMs(options.wait) === undefined))
    throw new TypeError(`Expected \`options.wait\` to be ${knobExpects('wait')}, got \`${String(options.wait)}\``)
  const target = resolve(options.into)
  const fsync = options.fsync ?? true
  const extra: VersionExtra = { ...(options.wait !== undefined && { wait: options.wait.trim() }) }
  let graph: PlanGraph
  if (options.document !== undefined) {
    // Parsed before anything is read or written: an invalid document changes nothing.
    graph = parsePlanDocument(options.document)
    extra.planner = 'agent'
    if (await holdsProposal(target)) {
      await withVaultLock(target, () => reviseByDocument(target, query, graph, { fsync, wait: options.wait }))
      return target
    }
    await assertEmptyFolder(target)
  } else {
    await assertEmptyFolder(target)
    graph = await planGraph(query, options.llm ?? createLLM(), signalOf(options.signal))
  }
  const fill = async (temp: string) => {
    await savePlan(graph, temp, { fsync })
    await mkdir(join(temp, TRACE_FOLDER), { recursive: true })
    await writeFileAtomic(join(temp, PROPOSAL_FILE), renderProposal(contentOf(graph, query, 1, [], extra)), { fsync })
  }
  await intoPlace(target, fill, { fsync })
  return target
}

/** What a version's note says besides its plan: who wrote it, and its `wait:`. */
type VersionExtra = Pick<ProposalContent, 'planner' | 'wait'>

/** Whether `target` is a folder holding a proposal note. */
async function holdsProposal(target: string): Promise<boolean> {
  const info = await statOrNothing(join(target, PROPOSAL_FILE))
  return info?.isFile() === true
}

/** Writes an agent's document as version n+1 of the proposal in `vault`, which a person must have sent back with `revise`; under the vault's lock. */
async function reviseByDocument(vault: string, query: string, graph: PlanGraph, options: { fsync: boolean; wait: string | undefined }): Promise<void> {
  const note = await readProposalNote(vault, true)
  // Removed by a person since: the folder holds a plan that is no proposal.
  if (!note) return assertEmptyFolder(vault)
  if (note.status !== 'pending' || note.ticked.length !== 1 || note.ticked[0] !== 'revise') {
    const { status, ticked, version } = note
    const why =
      status !== 'pending' ? `is ${status}` : ticked.length === 0 ? 'waits for a person' : `has ${ticked.map((each) => `\`${each}\``).join(' and ')} ticked`
    throw new RunStateError(
      'not-revising',
      `The proposal in \`${vault}\` (v${version}) ${why}, not sent back with \`revise\`: nothing was written. ` +
        'A new version is proposed once a person ticks `revise`; to propose another plan, propose into a new folder.',
      { version, status, ticked },
    )
  }
  if (query !== note.query) {
    throw new RunStateError(
      'query-mismatch',
      `The proposal in \`${vault}\` is for the query ${JSON.stringify(clipLine(note.query))}, not ${JSON.stringify(clipLine(query))}. ` +
        'Nothing was written: propose the next version for the same query, or a new plan into a new folder.',
      { recorded: note.query },
    )
  }
  const wait = options.wait ?? note.wait
  await writeRevision(vault, note, graph, { fsync: options.fsync, extra: { planner: 'agent', ...(wait !== undefined && { wait }) } })
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
    fence.wrap('The feedback:', note.feedback === undefined ? '(none given)' : feedbackAsTyped(note.feedback), 8_000),
    '',
    fence.wrap(
      `Version ${version}, note by note:`,
      earlierNotes.flatMap(({ file, text }) => (text === undefined ? [] : [`### ${file}\n${text.trim()}`])).join('\n\n'),
      24_000,
    ),
  ].join('\n')
  const planned = await planGraph(request, options.llm, signalOf(options.signal))
  return writeRevision(vault, note, planned, { fsync: options.fsync, extra: note.wait === undefined ? {} : { wait: note.wait } })
}

/**
 * Moves version n's notes (only those the proposal wrote, listed in its
 * `notes:`) and its proposal note under `00_plan-trace/proposals/v<n>/`,
 * writes `planned` in their place (renamed when a person's own note holds
 * the name) and a new proposal linking every earlier version.
 */
async function writeRevision(vault: string, note: ProposalNote, planned: PlanGraph, options: { fsync: boolean; extra: VersionExtra }): Promise<ProposalNote> {
  const { version } = note
  const { extra } = options
  const ours = notesInside(vault, note.notes)
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
  await writeFileAtomic(journal, `${JSON.stringify({ notes: contentOf(graph, note.query, version + 1, [], extra).notes })}\n`, { fsync: options.fsync })
  const stamp = await archive()
  for (const { file } of ours) {
    const to = runFilePath(vault, `${folder}/${file}`)
    // Kept already by a revision cut short: what now holds the name stays where it is, never overwriting the kept one.
    if ((await statOrNothing(to)) !== undefined) continue
    await rename(join(vault, file), to).catch((error: NodeJS.ErrnoException) => {
      // Deleted by a person: nothing to keep.
      if (error.code !== 'ENOENT') throw error
    })
  }
  await savePlan(graph, vault, { fsync: options.fsync })
  const content = contentOf(graph, note.query, version + 1, await earlierVersions(vault, version), extra)
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

function contentOf(graph: PlanGraph, query: string, version: number, earlier: ProposalContent['earlier'], extra: VersionExtra): ProposalContent {
  const nodes = [...graph.nodes.values()]
  const content: ProposalContent = {
    version,
    query,
    notes: nodes.map((node) => node.file ?? `${node.id}.md`),
    nodes: nodes.map((node) => node.id),
    earlier,
    ...extra,
    proposed: new Date().toISOString(),
  }
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
  const info = await statOrNothing(target)
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
