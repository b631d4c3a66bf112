import { join } from 'node:path'
import { statOrNothingSync } from './stat-or-nothing.js'

/**
 * The names of a run's folder inside a vault, in one place: the folder itself, never part of the plan,
 * and what a run writes into it.
 */
export const TRACE_FOLDER = '00_plan-trace'
/** The run's trace, inside {@link TRACE_FOLDER}. */
export const TRACE_FILE = 'trace.md'
/** The folder of the steps' output notes, inside {@link TRACE_FOLDER}. */
export const OUTPUTS_FOLDER = 'outputs'
/** The run's final answer, inside {@link TRACE_FOLDER}. */
export const FINAL_FILE = 'final.md'
/** Where `fresh: true` keeps earlier runs, inside {@link TRACE_FOLDER}. */
export const ARCHIVE_FOLDER = 'archive'
/** The ledger of facts and decisions, relative to the vault: it stays in place when a run starts over. */
export const LEDGER_FILE = `${TRACE_FOLDER}/ledger.md`
/** The plan a person approves, revises or declines before it runs (`proposePlan`), relative to the vault. */
export const PROPOSAL_FILE = `${TRACE_FOLDER}/proposal.md`
/** Where a proposal's earlier versions are kept (`v<n>/`), relative to the vault. */
export const PROPOSALS_FOLDER = `${TRACE_FOLDER}/proposals`
/** The pictures `vaultplan graph --write` keeps, relative to the vault. */
export const GRAPH_FILES = { note: `${TRACE_FOLDER}/plan-graph.md`, svg: `${TRACE_FOLDER}/plan-graph.svg`, canvas: `${TRACE_FOLDER}/plan.canvas` } as const

/** Whether a vault has its run folder (a real folder, not a symlink): a run has begun in it. */
export function hasTraceFolder(root: string): boolean {
  return statOrNothingSync(join(root, TRACE_FOLDER), { link: true })?.isDirectory() === true
}
