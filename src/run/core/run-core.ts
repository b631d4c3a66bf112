import { feedbackAfterMarks, feedbackAsTyped } from '../../vault/note-edits.js'
import type { SavedOutput } from '../../store/output-note.js'
import { outputFile, type ClaimRecord, type HopRecord, type TraceRecord } from '../../store/trace.js'
import type { StepOutput } from '../../core/types.js'

/**
 * The pure core of a run: where a run stands and what comes next, as a
 * function of what is on disk (the trace's records, the saved output of a
 * step not yet recorded, the notes' statuses and budgets). It does no I/O:
 * `runPlan`, the stepping calls and `readRunStatus` read the vault, ask it,
 * and perform what it answers. One decision, in one place.
 */

/** A record of a run that may say the step budget of the call that wrote it: a claim, a stop, a hop or a wait, with its time. */
export interface BudgetEntry {
  at?: string | undefined
  maxSteps?: number | undefined
}

/** What a run has done, replayed from its trace. */
export interface Replay {
  /** The visits this vault's run worked (a wait for a person counts its visit once), the terminal's included. */
  steps: number
  /** The highest step number recorded: numbers count the works of the whole run, subplans included. */
  lastStep: number
  /** Works against `maxSteps` are `steps + extraWorks`: a subplan note's step counts its subplans' works (`works`), not one. */
  extraWorks: number
  /** The highest visit recorded per node (a wait for a person counts its visit). */
  visits: Map<string, number>
  /** Outputs in the order they were made, and feedback handed on, oldest first. */
  outputs: StepOutput[]
  lastRecord: TraceRecord | undefined
  lastHop: HopRecord | undefined
  /** The last node worked, and its output. */
  lastNode: string
  lastOutput: string
  /** Per node, the `## Feedback` text at its latest decision: later decisions hand on only what changed. */
  feedback: Map<string, string>
  /** Visits (`node\nvisit`) that waited for a person: their decision adds no second output. */
  waited: Set<string>
  /** Each claimed visit's claim (by `claimKey`), as the trace records it: the step number it was given. */
  claims: Map<string, ClaimRecord>
  /** The highest step number a claim holds. */
  lastClaim: number
  /** Visits (by `claimKey`) an agent blocked at some time: their next claim hands on a person's feedback. */
  blocked: Set<string>
  /** The latest claim or record that says the step budget of the call that wrote it (see `resolveBudget`). */
  budget: BudgetEntry | undefined
}

/**
 * Replays a trace: visits, steps and outputs, so budgets hold across restarts
 * and workers see the run's history.
 *
 * @param outputOf - the text of a saved output note by its file (`outputs/0003-review.md`), if it exists
 */
export function replay(records: readonly TraceRecord[], outputOf: (file: string) => string | undefined, claims: readonly ClaimRecord[] = []): Replay {
  const state: Replay = {
    steps: 0,
    lastStep: 0,
    extraWorks: 0,
    visits: new Map(),
    outputs: [],
    lastRecord: undefined,
    lastHop: undefined,
    lastNode: '',
    lastOutput: '',
    feedback: new Map(),
    waited: new Set(),
    claims: new Map(),
    lastClaim: 0,
    blocked: new Set(),
    budget: undefined,
  }
  for (const claim of claims) addClaim(state, claim)
  for (const record of records) applyRecord(state, record, outputOf(outputNoteOf(record)))
  return state
}

/** The output note a hop or a wait names, relative to its vault's trace folder. */
function outputNoteOf(record: TraceRecord): string {
  return record.kind === 'hop' ? record.output : outputFile(record.step, record.node)
}

/**
 * Adds one record to a replay, as the run that writes it goes on: the same
 * step whether the record was just appended or read back after a restart.
 *
 * @param output - the text of the record's output note (`undefined` when it has none)
 */
export function applyRecord(state: Replay, record: TraceRecord, output: string | undefined): void {
  state.lastStep = Math.max(state.lastStep, record.step)
  state.lastRecord = record
  noteBudget(state, record)
  if (record.kind === 'stop') return
  // A waited visit's step is counted by its `waiting` record.
  if (record.works !== undefined && (record.kind === 'waiting' || !state.waited.has(`${record.node}\n${record.visit}`))) state.extraWorks += record.works - 1
  state.visits.set(record.node, Math.max(state.visits.get(record.node) ?? 0, record.visit))
  // A human node's visit is recorded twice: when it starts waiting and when the person decides.
  const visitKey = `${record.node}\n${record.visit}`
  const decided = state.waited.has(visitKey)
  if (!decided) state.steps++
  if (!decided) state.outputs.push({ node: record.node, visit: record.visit, output: output ?? '', file: outputNoteOf(record) })
  if (record.kind === 'waiting') state.waited.add(visitKey)
  else {
    state.lastHop = record
    if (record.decidedBy === 'human') {
      const handed = feedbackToHandOn(state.feedback.get(record.node), record.feedback)
      if (record.feedback !== undefined) state.feedback.set(record.node, record.feedback)
      if (handed) state.outputs.push({ node: record.node, visit: record.visit, output: feedbackAsTyped(handed), feedback: true })
    }
  }
  state.lastNode = record.node
  if (!decided) state.lastOutput = output ?? ''
}

/**
 * The feedback a decision hands on: the `## Feedback` text as it stands,
 * less what was handed on already: what follows the last
 * `(handed on at step N)` line, or, in a note with no such line, what
 * follows the text an earlier decision of the same note recorded. A person
 * adds below what they wrote before, so only the new part is new.
 */
export function feedbackToHandOn(previous: string | undefined, current: string | undefined): string {
  const now = current?.trim() ?? ''
  const unmarked = feedbackAfterMarks(now)
  if (unmarked !== undefined) return unmarked
  const before = previous?.trim() ?? ''
  if (now === '' || now === before) return ''
  return before !== '' && now.startsWith(before) ? now.slice(before.length).trim() : now
}

/** What the notes say, as the core needs it. */
export interface NotesView {
  /** Ids of the notes that are `status: active`, in vault order. */
  active: string[]
  /** The start node's id, when the plan has one. */
  start: string | undefined
  has(id: string): boolean
  maxVisits(id: string): number
  /** Whether the note runs subplans: not a work itself (its subplans' notes are), so a claimed visit of it is not refused by `maxSteps`. */
  runsSubplans?(id: string): boolean
  /** Whether the note says `status: waiting` (a blocked step stays blocked while it does). */
  waiting?(id: string): boolean
}

/** The view of a graph's notes the core needs: `active` and `start` as the caller found them. */
export function notesOf(
  graph: { nodes: ReadonlyMap<string, { maxVisits: number; status?: string }> },
  active: string[],
  start: string | undefined,
  runsSubplans?: (id: string) => boolean,
): NotesView {
  const notes: NotesView = {
    active,
    start,
    has: (id) => graph.nodes.has(id),
    maxVisits: (id) => graph.nodes.get(id)?.maxVisits ?? 0,
    waiting: (id) => graph.nodes.get(id)?.status === 'waiting',
  }
  if (runsSubplans) notes.runsSubplans = (id) => graph.nodes.has(id) && runsSubplans(id)
  return notes
}

/** Where a run goes on. */
export type Position =
  /** Enter `node` as a new visit: count it, set it `active`, work it. `claimed`: it is `active` already (a crash, or a claim not yet completed). */
  | { kind: 'work'; node: string; visit: number; step: number; claimed: boolean }
  /** An output is saved and its transition not yet judged: judge it, without working again. */
  | { kind: 'judge'; node: string; visit: number; step: number; saved: SavedOutput & { file: string } }
  /** A `judge: human` note waits: follow its ticked box, or keep waiting. */
  | { kind: 'decide'; node: string; visit: number; step: number }
  /** An agent handed the visit to a person (`blockStep`), and the note still says `waiting`: it waits to be unblocked. */
  | { kind: 'blocked'; node: string; visit: number; step: number; block: ClaimRecord }
  /** The run reached its terminal. */
  | { kind: 'completed'; hop: HopRecord }
  /** A budget refuses the next visit. `recorded`: the trace already says so. */
  | { kind: 'stopped'; node: string; visit: number; budget: 'max_visits' | 'maxSteps'; recorded: boolean }
  /** More than one note is `active`: a person must choose. */
  | { kind: 'two-active'; nodes: string[] }
  /** No trace and no start node: the plan needs fixing (validation says how). */
  | { kind: 'no-start' }

/**
 * Where a run stands when it resumes, in this order: two `active`
 * notes are an error; an output saved for the next step of this run and not
 * yet recorded is judged (unless a person moved the run to another note);
 * an `active` note is worked (again, with the same visit when the run was
 * there); else the last record says: a stop tries again, a wait looks at the
 * boxes, a terminal hop is the result, a hop enters its target; no record
 * enters the start node. Entering a note checks its budgets first.
 */
export function locate(
  run: { runId: string; replay: Replay; pending: (SavedOutput & { file: string }) | undefined; maxSteps: number; spent?: number | undefined },
  notes: NotesView,
): Position {
  const { replay: state, pending } = run
  if (notes.active.length > 1) return { kind: 'two-active', nodes: notes.active }
  const active = notes.active[0]
  const expected =
    pending &&
    pending.run === run.runId &&
    pending.step > state.lastStep &&
    notes.has(pending.node) &&
    pending.visit === (state.visits.get(pending.node) ?? 0) + 1
  if (pending && expected && (active === undefined || active === pending.node)) {
    return { kind: 'judge', node: pending.node, visit: pending.visit, step: pending.step, saved: pending }
  }
  if (active !== undefined) return enter(run, notes, active, true)
  const last = state.lastRecord
  if (!last) return notes.start === undefined ? { kind: 'no-start' } : enter(run, notes, notes.start, false)
  if (last.kind === 'stop') return enter(run, notes, last.node, false)
  if (last.kind === 'waiting') return { kind: 'decide', node: last.node, visit: last.visit, step: last.step }
  if (last.next === null) return { kind: 'completed', hop: last }
  return enter(run, notes, last.next, false)
}

function enter(run: { replay: Replay; maxSteps: number; spent?: number | undefined }, notes: NotesView, node: string, claimed: boolean): Position {
  const { replay: state } = run
  const visit = (state.visits.get(node) ?? 0) + 1
  // A blocked visit holds its step and waits for a person until its note no longer says `waiting`.
  const block = state.claims.get(claimKey(node, visit))
  if (!claimed && block?.kind === 'block' && notes.waiting?.(node)) return { kind: 'blocked', node, visit, step: block.step, block }
  // `spent`: the works of the whole run when subplans share the budget; a claimed note that runs subplans goes on into them.
  const spends = !(claimed && notes.runsSubplans?.(node))
  const budget = notes.has(node) && visit > notes.maxVisits(node) ? 'max_visits' : spends && (run.spent ?? state.steps) >= run.maxSteps ? 'maxSteps' : undefined
  if (budget) {
    const last = state.lastRecord
    const recorded = last?.kind === 'stop' && last.node === node && last.budget === budget && last.visit === visit
    return { kind: 'stopped', node, visit, budget, recorded }
  }
  return { kind: 'work', node, visit, step: state.claims.get(claimKey(node, visit))?.step ?? nextStepNumber(state), claimed }
}

/**
 * The step number the vault's next claim gets when nothing above it numbers
 * the run (the top vault): one past the highest recorded, or past the works,
 * for a trace whose subplans numbered their steps from 1 (format 2).
 */
export function nextStepNumber(state: Replay): number {
  return highestNumber(state) + 1
}

/** The highest step number a vault's trace holds: recorded, or given to a claim. */
export function highestNumber(state: Replay): number {
  return Math.max(state.lastStep, state.steps + state.extraWorks, state.lastClaim)
}

/** The key of a visit's claim in `Replay.claims`. */
export function claimKey(node: string, visit: number): string {
  return `${node}\n${visit}`
}

/** Adds a claim to a replay, as the run that writes it goes on: the same whether just appended or read back. */
export function addClaim(state: Replay, claim: ClaimRecord): void {
  noteBudget(state, claim)
  state.claims.set(claimKey(claim.node, claim.visit), claim)
  if (claim.kind === 'block') state.blocked.add(claimKey(claim.node, claim.visit))
  state.lastClaim = Math.max(state.lastClaim, claim.step)
}

/** The stable key of a visit: run, node and visit, the same when the visit is worked again. */
export function visitKey(runId: string, node: string, visit: number): string {
  return `${runId}:${node}:${visit}`
}

/** Keeps the latest entry of a replay that says a budget (records come in the order written; a claim read back with them by its time). */
function noteBudget(state: Replay, entry: BudgetEntry): void {
  if (entry.maxSteps === undefined || entry.at === undefined) return
  if (!state.budget?.at || entry.at >= state.budget.at) state.budget = { at: entry.at, maxSteps: entry.maxSteps }
}
