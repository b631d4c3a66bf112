import type { NodeStatus } from '../../core/types.js'
import type { OutputMeta } from '../../store/output-note.js'
import type { ClaimRecord, HopRecord, TraceHeader, TraceRecord } from '../../store/trace.js'
import { feedbackToHandOn, type Position } from './run-core.js'

/*
 * What a run writes, decided without I/O (a pure decision, tested by tables):
 * from where a vault's run stands and what just happened, the list
 * of writes to perform, in order. The driver performs them one by one; the
 * order is what makes every crash between two of them resumable (a status
 * is written after the record that explains it, an output before the status
 * that says it was worked).
 */

/** One write of a run to its vault. `node` is a note's id in the vault. */
export type Effect =
  /** A new run's trace header: written before its first claim. */
  | { kind: 'header'; header: TraceHeader }
  /** The step number a visit was given, appended to the trace once its note says `active`. */
  | { kind: 'claim'; claim: ClaimRecord }
  /** A note's `status:` rewritten (the note's other bytes kept). */
  | { kind: 'status'; node: string; status: NodeStatus }
  /** The boxes under a waiting note's `## Next` cleared. */
  | { kind: 'empty-boxes'; node: string; handed?: { text: string; step: number } }
  /** A worked visit's output note, saved whole before anything says it was worked. */
  | { kind: 'output'; node: string; file: string; meta: OutputMeta; output: string }
  /** A record appended to the trace, with the text shown under it; `output` is the text of the record's output, for the run's replay. */
  | { kind: 'record'; record: TraceRecord; rationale: string; output?: string | undefined }
  /** The run's final answer, `final.md`, from the terminal's output. */
  | { kind: 'final'; node: string; output: string }

/** What happened, as the driver tells the pure function: the events of a hop. */
export type HopEvent =
  /**
   * A visit is claimed for work; `header` when it is the run's first claim,
   * `claim` when it takes a step number the trace does not hold yet, `active`
   * when the note says so already.
   */
  | { type: 'claim'; node: string; header?: TraceHeader | undefined; claim?: ClaimRecord | undefined; active: boolean }
  /** A claimed visit was worked: its output, to save. */
  | { type: 'worked'; node: string; file: string; meta: OutputMeta; output: string }
  /** A worked visit's transition was decided: a hop record, or a `waiting` one for a note that waits for a person. `output` is the visit's. */
  | { type: 'judged'; record: TraceRecord; rationale: string; waits: boolean; output: string }
  /** A person ticked one box of a waiting note: the hop it decides. `output` is the run's last. */
  | { type: 'decided'; record: HopRecord; rationale: string; output: string; handed: string }
  /** The run had reached its terminal: `final.md` is written unless it is there. */
  | { type: 'finished'; node: string; output: string; written: boolean }
  /** A budget refused the next visit: the stop, unless the trace says so already. */
  | { type: 'stopped'; record: TraceRecord; recorded: boolean }
  /** A call begins: what a call cut short left half done. `status` is the note's status now. */
  | { type: 'recover'; status: NodeStatus | undefined }
  /** An agent lets go of its claimed visit: `defer` (worked later, `pending`) or `block` (handed to a person, `waiting`). */
  | { type: 'released'; record: ClaimRecord }

/**
 * The writes that follow from an event where a vault's run stands
 * (`position`, as `locate` decides it; `last` the trace's last record):
 * the one place that decides what a hop writes and in which order.
 */
export function effectsOf(position: Position | undefined, last: TraceRecord | undefined, event: HopEvent): Effect[] {
  switch (event.type) {
    case 'claim':
      // `active` before the claim's number: a number the trace holds is always a visit's that was claimed (a crash
      // in between leaves the visit to take the next number, which no other visit was given meanwhile).
      return [
        ...(event.header ? [{ kind: 'header' as const, header: event.header }] : []),
        ...(event.active ? [] : [status(event.node, 'active')]),
        ...(event.claim ? [{ kind: 'claim' as const, claim: event.claim }] : []),
      ]
    case 'released':
      // The record first: a crash before the status leaves the visit claimed, to be deferred or blocked again.
      return [{ kind: 'claim', claim: event.record }, status(event.record.node, event.record.kind === 'block' ? 'waiting' : 'pending')]
    case 'worked':
      // The output first: a crash after it is judged from what was saved, never worked again.
      return [{ kind: 'output', node: event.node, file: event.file, meta: event.meta, output: event.output }, status(event.node, 'done')]
    case 'judged': {
      const { record } = event
      // A note that waits: its boxes are cleared and it says `waiting` before the record, so a record never names a wait the note does not show.
      const recorded: Effect = { kind: 'record', record, rationale: event.rationale, output: event.output }
      if (event.waits) return [{ kind: 'empty-boxes', node: record.node }, status(record.node, 'waiting'), recorded]
      // The terminal's hop: the run's final answer follows its record.
      return record.kind === 'hop' && record.next === null ? [recorded, { kind: 'final', node: record.node, output: event.output }] : [recorded]
    }
    case 'decided':
      // Recorded before the boxes are cleared: a tick is never lost (a crash in between is recovered).
      return [
        { kind: 'record', record: event.record, rationale: event.rationale, output: event.output },
        boxesAfterDecision(event.record, event.handed),
        status(event.record.node, 'done'),
      ]
    case 'finished':
      return event.written ? [] : [{ kind: 'final', node: event.node, output: event.output }]
    case 'stopped':
      return event.recorded ? [] : [{ kind: 'record', record: event.record, rationale: event.record.kind === 'stop' ? event.record.reason : '' }]
    case 'recover':
      // A person's decision (or a deadline's) recorded, its note still waiting: clear its boxes and set it `done`.
      if (last?.kind === 'hop' && (last.decidedBy === 'human' || last.decidedBy === 'timeout') && event.status === 'waiting')
        return [boxesAfterDecision(last, feedbackToHandOn(undefined, last.feedback)), status(last.node, 'done')]
      // An output saved, its note still `active`: the note was worked.
      if (position?.kind === 'judge' && event.status === 'active') return [status(position.node, 'done')]
      return []
  }
}

/** A decided note's boxes cleared, and the feedback it handed on marked `(handed on at step N)` in the same edit. */
function boxesAfterDecision(record: HopRecord, handed: string): Effect {
  return handed === '' ? { kind: 'empty-boxes', node: record.node } : { kind: 'empty-boxes', node: record.node, handed: { text: handed, step: record.step } }
}

function status(node: string, value: NodeStatus): Effect {
  return { kind: 'status', node, status: value }
}
