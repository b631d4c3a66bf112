import { PROPOSAL_NODE } from '../../vault/proposal-note.js'
import type { VaultStand } from './vault-stand.js'
import type { WaitingNote } from './run-options.js'
import type { WorkItem } from './claims.js'

/**
 * What the next call does, as data (the CLI words it): `work` names exactly
 * the note, visit and step the next `nextStep` claims or `runPlan` works;
 * `judge`: an output is saved and its transition is judged first; `plan`: a
 * planner call is due (a decomposition, a proposal to revise); `fresh`: no
 * run yet (`node` is where it starts); `waiting`, `stopped`, `completed` as
 * the phase says; `two-active`: a person must set all but one of `nodes`
 * back; `invalid`: the plan has errors; `declined`: the proposal was.
 */
export interface RunNext {
  kind: 'fresh' | 'work' | 'judge' | 'plan' | 'waiting' | 'stopped' | 'completed' | 'invalid' | 'two-active' | 'declined'
  /** The note, by its path from the top vault (`research/find`). */
  node?: string
  visit?: number
  step?: number
  /** The subplan folder, relative to the top vault, when the next thing happens inside one. */
  plan?: string
  /** `two-active`: the notes that are `active`, by their paths from the top vault. */
  nodes?: string[]
  /** `work`: the note is missing from the vault (the run cannot go on until it is restored or the run moved). */
  missing?: boolean
}

/** The phase of a run, as every surface names it. */
export type RunPhase = 'fresh' | 'ready' | 'waiting' | 'stopped' | 'completed' | 'declined' | 'invalid'

/**
 * What the next call does, from where the run stands (pure): the first item
 * of the frontier, else the first note waiting for a person, else the stop
 * or the result; `known` tells whether a note (by its path) is in the vault.
 */
export function nextOf(phase: RunPhase, stand: VaultStand, known: (path: string) => boolean): RunNext {
  const item: WorkItem | undefined = stand.items[0]
  switch (phase) {
    case 'invalid':
      return stand.twoActive ? { kind: 'two-active', nodes: stand.twoActive.nodes } : { kind: 'invalid' }
    case 'declined':
      return { kind: 'declined', node: PROPOSAL_NODE }
    case 'fresh':
      return item ? { kind: 'fresh', node: item.node } : { kind: 'fresh' }
    case 'ready': {
      const next: RunNext = { kind: item!.kind, node: item!.node, visit: item!.visit, step: item!.step }
      if (item!.plan !== undefined) next.plan = item!.plan
      if (item!.kind === 'work' && !known(item!.node)) next.missing = true
      return next
    }
    case 'waiting':
      return waitingNext(stand.waiting[0])
    case 'stopped':
      return { kind: 'stopped', node: stand.stop!.node, visit: stand.stop!.visit }
    case 'completed':
      return { kind: 'completed', node: stand.position?.kind === 'completed' ? stand.position.hop.node : '' }
  }
}

/** A wait as what comes next: a proposal sent back to the agent that wrote it waits for its next version (`plan`). */
function waitingNext(note: WaitingNote | undefined): RunNext {
  if (!note) return { kind: 'waiting' }
  const plan = note.kind === 'proposal' && note.choices.length === 0
  return { kind: plan ? 'plan' : 'waiting', node: note.node }
}
