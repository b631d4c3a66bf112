import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import type { PlanGraph } from '../../plan/plan-graph.js'
import { subplanTree } from '../../plan/subplan-tree.js'
import { isGenerate, subplanFoldersOf } from '../../vault/subplan-folders.js'
import { TRACE_FOLDER } from '../../vault/run-folder.js'

/*
 * The planner calls a run made, as the notes its decompositions left say.
 */

/**
 * The note a decomposition leaves in the subplan's run folder, relative to
 * the subplan's folder: which run's planner wrote the plan. Planner calls
 * count against `maxSteps` across restarts; a later `fresh` start archives
 * the subplan's trace, not this note.
 */
export const DECOMPOSITION_FILE = `${TRACE_FOLDER}/decomposition.md`

/**
 * The planner calls the run `run` made to write the subplans of `graph`
 * (the top vault's, loaded with its subplans) and of theirs, as the notes
 * its decompositions left say.
 */
export async function plannerCallsOf(vault: string, graph: PlanGraph, run: string): Promise<number> {
  let calls = 0
  for (const { folder, vault: plan } of subplanTree(graph)) {
    for (const node of plan.nodes.values()) {
      if (!isGenerate(node.plan)) continue
      const text = await readFile(join(vault, folder, subplanFoldersOf(node)[0]!.folder, DECOMPOSITION_FILE), 'utf8').catch(() => '')
      if (/^run: (".*")$/m.exec(text)?.[1] === JSON.stringify(run)) calls++
    }
  }
  return calls
}
