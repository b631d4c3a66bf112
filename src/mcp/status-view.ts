import { snapshotNodes, type SnapshotHop, type SnapshotNode } from '../run/core/run-snapshot.js'
import type { RunStatus } from '../run/read/run-status.js'
import { DEFAULT_MAX_VISITS } from '../vault/parse-note.js'
import { statusTodo } from './next-words.js'

/** A note as plan_status lists it: by its path from the vault, its status and visits (its budget when not the default). */
export interface NoteView {
  id: string
  status: string
  visits: number
  maxVisits?: number
}

/** A hop as plan_status lists it: where it went (`to`, none at the end) and the condition it took, when it took one. */
export interface HopView {
  step: number
  node: string
  visit: number
  to?: string
  choice?: string
  decidedBy: string
  unticked?: string[]
}

/**
 * Where a run stands as plan_status hands it on, as lean as a step result:
 * the snapshot's phase and what comes next, the notes in plan order with a
 * subplan's notes after the note that runs them (by their paths, not nested),
 * the latest hops, and only what is there (waits, a stop, the result, the
 * claims, a live runner, the plan's issues, a proposal). Paths are already
 * relative to the vault.
 */
export function viewStatus(status: RunStatus, vault: string): Record<string, unknown> {
  const { run } = status
  return {
    vault,
    phase: status.phase,
    ...(run && { run: { id: run.id, query: run.query, started: run.started, steps: status.steps, maxSteps: status.maxSteps } }),
    next: status.next,
    nodes: [...snapshotNodes(status.nodes)].map(noteView),
    ...(status.hops.length > 0 && { hops: status.hops.map(hopView) }),
    ...(status.waiting.length > 0 && { waiting: status.waiting.map(({ file: _file, ...note }) => note) }),
    ...(status.stop && { stop: status.stop }),
    ...(status.result && { result: status.result }),
    ...(status.claims.length > 0 && { claims: status.claims.map((item) => ({ node: item.node, ...item.claim })) }),
    ...(status.holder && { holder: status.holder }),
    ...(status.issues.length > 0 && { issues: status.issues }),
    ...(status.proposal && { proposal: status.proposal }),
    todo: statusTodo(status),
  }
}

/** A note's status and visits, its budget when it is not the default. */
function noteView(node: SnapshotNode): NoteView {
  const view: NoteView = { id: node.id, status: node.status, visits: node.visits }
  if (node.maxVisits !== DEFAULT_MAX_VISITS) view.maxVisits = node.maxVisits
  return view
}

function hopView(hop: SnapshotHop): HopView {
  return {
    step: hop.step,
    node: hop.node,
    visit: hop.visit,
    ...(hop.edge && { to: hop.edge.target }),
    ...(hop.edge?.conditional && { choice: hop.edge.label }),
    decidedBy: hop.decidedBy,
    ...(hop.unticked && { unticked: hop.unticked }),
  }
}
