import { readdir } from 'node:fs/promises'
import { readLedger } from '../memory/ledger.js'
import type { LedgerView } from '../core/ledger-types.js'
import { loadPlan } from '../plan/load-plan.js'
import { toSvg } from '../plan/plan-svg.js'
import { observeRun } from '../run/read/observe-run.js'
import { decidedNotes, waitingVisits, type DecidedNote } from '../run/decide/decide.js'
import { checkWords } from '../run/core/checks.js'
import { feedbackToHandOn } from '../run/core/run-core.js'
import { feedbackAsTyped } from '../vault/note-edits.js'
import { shellWord } from '../core/text.js'
import type { WaitingNote } from '../run/core/run-options.js'
import { snapshotNodes, visitsOfSnapshot, type RunSnapshot } from '../run/core/run-snapshot.js'
import { readOutput, type SavedOutput } from '../store/output-note.js'
import { readTrace, tracePaths, type HopRecord } from '../store/trace.js'
import { OUTPUTS_FOLDER } from '../vault/run-folder.js'
import { readProposal, type ProposalInfo } from '../vault/proposal-note.js'
import { vaultName, vaultPath } from '../mcp/paths.js'
import { findVaults } from '../mcp/vaults.js'

/** One row of the runs page. */
export interface RunRow {
  /** The vault, relative to the root, `/`-separated. */
  name: string
  phase: RunSnapshot['phase'] | 'unreadable'
  query: string
  /** What is worked or decided next, else the last note worked. */
  current: string
  steps: number
  maxSteps: number
  /** The notes that wait on a person (waiting notes, steps an agent blocked, a pending proposal), each with what it waits for. */
  waiting: Pick<WaitingNote, 'node' | 'kind'>[]
  /** Who holds the run now, beside its phase: a live runner, or the agents whose claims are live. */
  heldBy?: string
}

/** How many vaults the board lists at most. */
export const MAX_VAULTS = 5_000
/** How many vaults are read at once: enough to hide the disk's latency, few enough not to run out of file handles. */
const READ_AT_ONCE = 32

/** Every vault under the root with where its run stands; those that wait on a person first, then by name. */
export async function runRows(root: string): Promise<{ rows: RunRow[]; truncated: boolean }> {
  const { vaults, truncated } = await findVaults(root, { limit: MAX_VAULTS })
  const rows = await mapLimited(vaults, READ_AT_ONCE, async (path): Promise<RunRow> => {
    const name = vaultName(root, path)
    try {
      const snapshot = await observeRun(path, { hops: 1 })
      return {
        name,
        phase: snapshot.phase,
        query: snapshot.run?.query ?? '',
        current: snapshot.next.node ?? snapshot.hops.at(-1)?.node ?? '',
        steps: snapshot.steps,
        maxSteps: snapshot.maxSteps,
        waiting: snapshot.waiting.map(({ node, kind }) => ({ node, kind })),
        ...heldBy(snapshot),
      }
    } catch {
      return { name, phase: 'unreadable', query: '', current: '', steps: 0, maxSteps: 0, waiting: [] }
    }
  })
  return { rows: rows.sort((a, b) => Number(b.waiting.length > 0) - Number(a.waiting.length > 0) || (a.name < b.name ? -1 : 1)), truncated }
}

/** Who holds a run now, in words: a live runner, or the agents whose claims are live. */
function heldBy(snapshot: RunSnapshot): { heldBy?: string } {
  if (snapshot.holder) return { heldBy: `a runner (process ${snapshot.holder.pid})` }
  const agents = [...new Set(snapshot.frontier.flatMap((item) => (item.claim ? [item.claim.agent] : [])))]
  return agents.length > 0 ? { heldBy: agents.join(', ') } : {}
}

/** One hop of a run's timeline: the snapshot's hop with what its trace record adds. */
export interface TimelineHop {
  step: number
  node: string
  visit: number
  /** The label of the edge taken, `''` for an unconditional one, `null` for none. */
  edge: string | null
  decidedBy: string
  /** Why, in parts: the checks' results, the judge's answers, the feedback a person handed on (as typed), an agent's choice, a worker's error. */
  why: Why[]
  ms?: number
  model?: string
  tokens?: { input: number; output: number }
  /** The output's file, relative to the trace folder. */
  output?: string
}

/** One part of why a hop went where it went; `feedback` is a person's own words, as they typed them. */
export interface Why {
  kind: 'checks' | 'answers' | 'feedback' | 'choice' | 'error' | 'person' | 'deadline'
  text: string
}

/** What the page of one run shows. */
export interface RunDetail {
  name: string
  path: string
  snapshot: RunSnapshot
  hops: TimelineHop[]
  /** The latest outputs (all of them when asked), in step order. */
  outputs: (SavedOutput & { file: string })[]
  /** How many outputs the run has saved, shown or not. */
  outputCount: number
  ledger: LedgerView
  proposal: ProposalInfo | undefined
  /** The visit each note that waits for a person waits at, by id: what its decision form says it was made on. */
  visits: Record<string, number>
  /** Notes a person decided that the run has not followed yet, with what was chosen and the feedback. */
  decided: DecidedNote[]
  /** The command that goes on with the run, for a page that says what happens after a decision. */
  goOn: string
}

/** The command a page names to go on with a run a person decided, from the vault's path. */
export type GoOn = (vault: string) => string | Promise<string>

/** `vaultplan run <vault>`: the command a page names to go on, unless the board is told another. */
export const DEFAULT_GO_ON: GoOn = (vault) => `vaultplan run ${shellWord(vault)}`

/** How many outputs a run's page shows unless asked for all: the latest ones, enough to read what a run is doing, few enough that a run of thousands of hops loads in a moment. */
export const OUTPUTS_SHOWN = 50

/**
 * A run of the root, read for its page: the snapshot with every hop, each
 * hop's trace record, its latest `outputs` outputs, its ledger, its proposal
 * and the visit each waiting note waits at.
 *
 * @throws `PathRefusal` when `name` leaves the root or is no vault
 */
export async function runDetail(root: string, name: string, outputs = OUTPUTS_SHOWN, goOn = DEFAULT_GO_ON): Promise<RunDetail> {
  const path = await vaultPath(root, name)
  const snapshot = await observeRun(path, { hops: Number.MAX_SAFE_INTEGER })
  const notesWait = snapshot.waiting.some((waiting) => waiting.kind !== 'proposal')
  // A note that says `waiting` but waits for nobody now was decided, and the run has not followed it yet.
  const undecided = decidedOnes(snapshot).length > 0
  const [trace, ledger, proposal, visits, decided] = await Promise.all([
    readTrace(path),
    readLedger(path),
    readProposal(path),
    notesWait ? waitingVisits(path) : {},
    undecided ? decidedNotes(path) : [],
  ])
  const records = new Map<string, HopRecord>()
  for (const record of trace?.records ?? []) if (record.kind === 'hop') records.set(`${record.step}:${record.node}`, record)
  const handedBefore = new Map<string, string>()
  const hops = snapshot.hops.map((hop) => timelineHop(hop, records.get(`${hop.step}:${hop.node}`), handedBefore))
  // Named `<step, 4 digits>-<note>.md`: by the number first, so step 10000 still comes after 9999.
  const files = (await readdir(tracePaths(path).outputs).catch(() => [] as string[]))
    .filter((file) => file.endsWith('.md'))
    .sort((a, b) => parseInt(a, 10) - parseInt(b, 10) || (a < b ? -1 : 1))
  const shown = await mapLimited(files.slice(Math.max(0, files.length - outputs)), READ_AT_ONCE, async (file) => ({
    file,
    saved: await readOutput(path, `${OUTPUTS_FOLDER}/${file}`),
  }))
  return {
    name: vaultName(root, path),
    path,
    snapshot,
    hops,
    outputs: shown.flatMap(({ file, saved }) => (saved ? [{ ...saved, file }] : [])),
    outputCount: files.length,
    ledger,
    proposal,
    visits,
    decided,
    goOn: decided.length > 0 ? await goOn(path) : '',
  }
}

/**
 * A hop of the timeline; `handedBefore` holds the feedback each note's
 * earlier decisions recorded (the timeline goes in order), so a decision
 * shows only what it handed on.
 */
function timelineHop(hop: RunSnapshot['hops'][number], record: HopRecord | undefined, handedBefore: Map<string, string>): TimelineHop {
  const why = record ? whyOf(record, handedBefore) : []
  const timeline: TimelineHop = { step: hop.step, node: hop.node, visit: hop.visit, edge: hop.edge ? hop.edge.label : null, decidedBy: hop.decidedBy, why }
  if (record?.ms !== undefined) timeline.ms = record.ms
  if (record?.model !== undefined) timeline.model = record.model
  if (record?.tokens !== undefined) timeline.tokens = record.tokens
  if (record?.output !== undefined) timeline.output = record.output
  return timeline
}

/** Why a hop went where it went, from its trace record: what its checks, its judge, a person or an agent said. */
function whyOf(record: HopRecord, handedBefore: Map<string, string>): Why[] {
  const why: Why[] = []
  for (const check of record.checks ?? [])
    why.push({
      kind: 'checks',
      text: `check ${check.name} ${checkWords({ name: check.name, exit: check.exit, ms: check.ms, tail: '', ...(check.timedOut && { timedOut: true }) })}`,
    })
  if (record.answers?.length) why.push({ kind: 'answers', text: `judge: ${record.answers.map((entry) => `${entry.condition} ${entry.answer}`).join(' · ')}` })
  if (record.decidedBy === 'human') {
    const handed = feedbackAsTyped(feedbackToHandOn(handedBefore.get(record.node), record.feedback))
    if (record.feedback !== undefined) handedBefore.set(record.node, record.feedback)
    why.push(handed === '' ? { kind: 'person', text: 'a person ticked it' } : { kind: 'feedback', text: handed })
  }
  if (record.choice !== undefined) why.push({ kind: 'choice', text: `the agent chose ${record.choice}` })
  if (record.error !== undefined) why.push({ kind: 'error', text: `the worker failed: ${record.error}` })
  if (record.decidedBy === 'timeout') why.push({ kind: 'deadline', text: 'nobody decided by the `wait:` deadline' })
  return why
}

/** The notes of a snapshot that say `waiting` but wait for nobody now: decided (by a person, or a deadline), not yet followed by a run. */
export function decidedOnes(snapshot: RunSnapshot): string[] {
  const waiting = new Set(snapshot.waiting.map((note) => note.node))
  return [...snapshotNodes(snapshot.nodes)].filter((node) => node.status === 'waiting' && !waiting.has(node.id)).map((node) => node.id)
}

/**
 * The plan of a run of the root as an SVG image, with statuses and visits.
 *
 * @throws `PathRefusal` when `name` leaves the root or is no vault
 */
export async function planSvg(root: string, name: string): Promise<string> {
  const path = await vaultPath(root, name)
  const [graph, snapshot] = await Promise.all([loadPlan(path), observeRun(path, { hops: 0 })])
  // A decided note is drawn as done: the person's part is over, whether or not a run has followed it yet.
  const statuses = Object.fromEntries(decidedOnes(snapshot).map((id) => [id, 'done' as const]))
  return toSvg(graph, snapshot.run ? { visits: visitsOfSnapshot(snapshot), statuses } : undefined)
}

/** `map` with at most `limit` calls of `each` under way, in input order. */
async function mapLimited<T, R>(items: readonly T[], limit: number, each: (item: T) => Promise<R>): Promise<R[]> {
  const results = new Array<R>(items.length)
  let next = 0
  const lane = async () => {
    while (next < items.length) {
      const index = next++
      results[index] = await each(items[index]!)
    }
  }
  await Promise.all(Array.from({ length: Math.min(limit, items.length) }, lane))
  return results
}
