import type { ModelUsage } from '../../core/types.js'
import type { SavedOutput } from '../../store/output-note.js'
import type { Trace } from '../../store/trace.js'
import { replay, type Replay } from '../core/run-core.js'
import type { Claim, DriverOptions } from '../core/run-options.js'

/**
 * What a driver knows of its run, kept in step with the trace: shared by the
 * driver (where the run stands, what comes next) and its hop writer (the
 * hop's judgment and writes), which both hold it.
 */
export interface RunState {
  runId: string
  query: string
  /** The trace replayed, kept in step with every record appended. */
  state: Replay
  /** Whether the vault's trace has its header. */
  traced: boolean
  /** An output saved for the step after the last recorded one (a crash before its hop was recorded). */
  pending: (SavedOutput & { file: string }) | undefined
  /** The visit claimed in this call. */
  claim: Claim | undefined
  /** The step budget the run was started with, as its trace header records it. */
  startedWith: number | undefined
  /** The model calls of the hop under way: roles, models, tokens, for its trace record. */
  usage: ModelUsage[]
}

/** A run's state as a vault's trace (and its output notes, by file) holds it; the query the call gives for a new run. */
export function runStateOf(trace: Trace | undefined, outputs: Map<string, string>, options: DriverOptions): RunState {
  if (trace) options.degraded ??= trace.header.degraded
  return {
    runId: trace?.header.run ?? '',
    query: trace ? trace.header.query : (options.query ?? ''),
    state: replay(trace?.records ?? [], (file) => outputs.get(file), trace?.claims),
    traced: trace !== undefined,
    pending: undefined,
    claim: undefined,
    startedWith: trace?.header.maxSteps,
    usage: [],
  }
}
