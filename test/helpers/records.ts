import { PlanGraph, type Edge, type NodeStatus, type PlanNode } from 'vaultplan'
import type { VaultRecords } from '../../src/run/core/vault-stand.js'
import type { TraceRecord } from '../../src/store/trace.js'

/*
 * A run's records as they would be read off disk, built in memory for the
 * tables of the pure functions (the snapshot, the effects of a hop).
 */

/** A note of a table's plan: its edges (`label -> target` or `target`), status and knobs. */
export type NoteSpec = { next?: string[]; status?: NodeStatus; judge?: 'human'; plan?: string[]; start?: boolean; maxVisits?: number }

/** A plan note built from its spec. */
export function node(id: string, spec: NoteSpec): PlanNode {
  const edges: Edge[] = (spec.next ?? []).map((target) => {
    const [label, to] = target.includes('->') ? target.split('->').map((part) => part.trim()) : ['', target]
    return { label: label!, target: to!, conditional: label !== '' }
  })
  const built: PlanNode = {
    id,
    title: id,
    body: '',
    type: spec.start ? 'start' : 'step',
    status: spec.status ?? 'pending',
    maxVisits: spec.maxVisits ?? 3,
    edges,
    file: `${id}.md`,
    frontmatter: {},
  }
  if (spec.judge) built.judge = spec.judge
  if (spec.plan) built.plan = spec.plan
  return built
}

/** A vault's records: its notes, its trace's records, the visit whose subplan it is, its subplans. */
export function vault(
  notes: Record<string, NoteSpec>,
  options: { folder?: string; records?: TraceRecord[]; source?: string; subplans?: Record<string, VaultRecords> } = {},
): VaultRecords {
  const subplans = new Map(Object.entries(options.subplans ?? {}))
  const graph = new PlanGraph(
    Object.entries(notes).map(([id, spec]) => node(id, spec)),
    subplans.size > 0 ? { subplans: new Map([...subplans].map(([folder, inner]) => [folder, inner.graph])) } : {},
  )
  const trace = options.records && {
    header: { run: options.folder ? `sub-${options.folder}` : 'run1', format: 2, query: 'q', started: 't0', ...(options.source && { source: options.source }) },
    records: options.records,
  }
  return { folder: options.folder ?? '', graph, issues: graph.check().issues, trace, pending: undefined, subplans }
}

/** A hop record of visit 1 (unless `extra` says), to `next` or the terminal's. */
export const hop = (step: number, node: string, next: string | null, extra: Partial<TraceRecord> = {}): TraceRecord =>
  ({
    kind: 'hop',
    step,
    node,
    visit: 1,
    edge: next === null ? null : { label: '', target: next, conditional: false },
    decidedBy: next === null ? 'terminal' : 'unconditional',
    next,
    output: `outputs/${String(step).padStart(4, '0')}-${node}.md`,
    ...extra,
  }) as TraceRecord
