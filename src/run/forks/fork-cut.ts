import type { NodeStatus } from '../../core/types.js'
import type { TraceHeader, TraceRecord } from '../../store/trace.js'

/*
 * Where a fork cuts a run, decided without I/O
 * from the traces of the run's vaults: its step numbers count the works of
 * the whole run, subplans included, as `RunResult.steps` does, and the fork
 * at step N holds what each vault of the tree had recorded right after the
 * Nth work.
 */

/** One entry of a trace: the text that renders it and its record. */
export interface TraceEntry {
  text: string
  record: TraceRecord
}

/** The run of one vault of the tree, as its trace recorded it (budget stops left out), with the runs of its subplan notes. */
export interface RunRecords {
  /** The vault's folder relative to the top vault, `''` at the top. */
  folder: string
  /** The folder holding its trace, outputs and final answer: the vault's `00_plan-trace/`, or an archived run's. */
  from: string
  header: TraceHeader
  entries: TraceEntry[]
  /** The visit whose subplan this run is: the run, note and visit of the parent; absent at the top. */
  parent?: { run: RunRecords; node: string; visit: number }
  /** The subplan runs of each visit of a subplan note (`node\nvisit`), a recorded one or one under way, one run per folder found. */
  subplans: Map<string, RunRecords[]>
}

/** What the fork at a step holds. */
export interface ForkCut {
  /** Per folder of the tree (`''` the top), the run the fork holds there and how many of its entries it keeps. A folder not listed holds no run. */
  runs: Map<string, { run: RunRecords; kept: number }>
  /** Per folder listed in `runs`, the statuses of its notes; a note not listed is `pending`. */
  statuses: Map<string, Map<string, NodeStatus>>
  /** The last record kept, in the order of the whole run. */
  last: TraceRecord | undefined
}

/** A record of one run, by its place in the run's entries. */
interface Mark {
  run: RunRecords
  index: number
}

/** One step of the whole run (`work`), with the records that come with it; or records after the last work of a run cut short. */
interface Chunk {
  marks: Mark[]
  work: boolean
  /** When its work was claimed, which orders the works of parallel branches. */
  at: string
}

/** The works of the whole run, subplans included: the highest step a fork can take. */
export function wholeRunSteps(top: RunRecords): number {
  return Math.max(0, ...timeline(top).flatMap((chunk) => (chunk.work ? [numberOf(chunk)] : [])))
}

/**
 * How many works of the whole run were made up to the step numbered `step`:
 * the same number, unless a step was decomposed after its claim, which
 * left its number to no work.
 */
export function worksUpTo(top: RunRecords, step: number): number {
  return timeline(top).filter((chunk) => chunk.work && numberOf(chunk) <= step).length
}

/** The step number of a work: its records' highest (a subplan note's record follows the last work of its subplans with its number). */
function numberOf(chunk: Chunk): number {
  return Math.max(...chunk.marks.map(({ run, index }) => run.entries[index]!.record.step))
}

/**
 * What the fork of a run at whole-run step `step` holds: the records made up
 * to the run's `step`th work, and the hop of a subplan note that its
 * subplans' last work ended (it is recorded at once, with no work of its
 * own); a person's decision comes with the work after it, so a note waiting
 * at `step` waits in the fork. The statuses are those the run had then:
 * worked notes `done`, a waiting one `waiting`, a note whose subplans are
 * under way `active`, the rest `pending`.
 */
export function cutAt(top: RunRecords, step: number): ForkCut {
  const kept: Mark[] = []
  let spent = 0
  for (const chunk of timeline(top)) {
    if (spent >= step) break
    kept.push(...chunk.marks)
    if (chunk.work) spent++
  }
  // One run per folder: the latest one entered there (a later visit's subplan run replaces an earlier one), its ancestors with it.
  const runs = new Map<string, { run: RunRecords; kept: number }>([['', { run: top, kept: 0 }]])
  for (const { run, index } of kept) {
    for (let each: RunRecords | undefined = run; each; each = each.parent?.run) {
      if (runs.get(each.folder)?.run !== each) runs.set(each.folder, { run: each, kept: 0 })
    }
    const held = runs.get(run.folder)!
    held.kept = Math.max(held.kept, index + 1)
  }
  const statuses = new Map<string, Map<string, NodeStatus>>()
  for (const [folder, { run, kept: count }] of runs) statuses.set(folder, statusesOf(run, count, runs))
  const mark = kept.at(-1)
  return { runs, statuses, last: mark && mark.run.entries[mark.index]!.record }
}

/** The statuses of one run's notes after its first `count` entries; a subplan note whose subplans the fork holds a run of, and no record of its visit, is being worked. */
function statusesOf(run: RunRecords, count: number, runs: ForkCut['runs']): Map<string, NodeStatus> {
  const statuses = new Map<string, NodeStatus>()
  const recorded = new Set<string>()
  for (const { record } of run.entries.slice(0, count)) {
    statuses.set(record.node, record.kind === 'waiting' ? 'waiting' : 'done')
    recorded.add(`${record.node}\n${record.visit}`)
  }
  for (const [visit, inner] of run.subplans) {
    if (!recorded.has(visit) && inner.some((each) => runs.get(each.folder)?.run === each)) statuses.set(visit.split('\n')[0]!, 'active')
  }
  return statuses
}

/**
 * The steps of a run in the order the whole run made them: a subplan note's
 * subplans' works before its record (parallel branches by claim time), and
 * the works of subplans still under way at the end.
 */
function timeline(run: RunRecords): Chunk[] {
  const chunks: Chunk[] = []
  // A person's decision is no work: it goes with the work after it.
  let lead: Mark[] = []
  const add = (more: Chunk[]) => {
    if (more.length === 0) return
    more[0] = { ...more[0]!, marks: [...lead, ...more[0]!.marks] }
    lead = []
    chunks.push(...more)
  }
  const waited = new Set<string>()
  const entered = new Set<string>()
  for (const [index, { record }] of run.entries.entries()) {
    const mark = { run, index }
    const visit = `${record.node}\n${record.visit}`
    if (record.kind === 'hop' && waited.has(visit)) {
      lead.push(mark)
      continue
    }
    if (record.kind === 'waiting') waited.add(visit)
    if (record.works === undefined) {
      add([{ marks: [mark], work: true, at: record.at ?? '' }])
      continue
    }
    entered.add(visit)
    const inner = subplanSteps(run.subplans.get(visit) ?? [], record.works, record.at ?? '')
    const end = inner.at(-1)
    if (!end) {
      lead.push(mark)
      continue
    }
    // The note's record follows its subplans' last work at once: it belongs to that step.
    inner[inner.length - 1] = { ...end, marks: [...end.marks, mark] }
    add(inner)
  }
  for (const [visit, inner] of run.subplans) if (!entered.has(visit)) add(merge(inner.map(timeline)))
  // Decisions after the last work (the run stopped or waited since): kept only when the fork keeps a work made after them.
  const last = lead.at(-1)
  if (last) chunks.push({ marks: lead, work: false, at: run.entries[last.index]!.record.at ?? '' })
  return chunks
}

/**
 * The steps of a subplan note's visit, as many as its record counts: works
 * the subplans' traces do not hold (a trace moved away) are counted first,
 * with nothing to copy, so the numbers stay those of `RunResult.steps`.
 */
function subplanSteps(runs: RunRecords[], works: number, at: string): Chunk[] {
  const inner = merge(runs.map(timeline))
  const missing = works - inner.filter((chunk) => chunk.work).length
  return missing > 0 ? [...Array.from({ length: missing }, () => ({ marks: [], work: true, at })), ...inner] : inner
}

/** The steps of parallel branches in the order their works were claimed, the listed order first on a tie. */
function merge(branches: Chunk[][]): Chunk[] {
  if (branches.length === 1) return branches[0]!
  const next = branches.map(() => 0)
  const merged: Chunk[] = []
  for (;;) {
    let pick = -1
    branches.forEach((chunks, branch) => {
      const head = chunks[next[branch]!]
      if (head && (pick === -1 || head.at < branches[pick]![next[pick]!]!.at)) pick = branch
    })
    if (pick === -1) return merged
    merged.push(branches[pick]![next[pick]!++]!)
  }
}
