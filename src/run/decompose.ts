import { join } from 'node:path'
import { createLLM } from '../models/llm-client.js'
import { listNotes } from '../vault/read-vault.js'
import { savePlan } from '../plan/save-plan.js'
import { planGraph } from '../plan/plan-document.js'
import { intoPlace } from './run-vault.js'
import { subplanFoldersOf } from '../vault/subplan-folders.js'
import type { CallLLM, PlanNode } from '../core/types.js'

/**
 * Decomposition (`plan: generate`, SPEC section 11): on the note's first
 * visit, asks the planning role for a subplan of the note's title and body
 * and writes it as notes into the folder named like the note
 * (`research.md` -> `research/`), whole or not at all. A folder that holds
 * notes already (written earlier, maybe edited by a person) is used as it
 * is: the planner is not called.
 *
 * @returns why the planner's reply fell back to a path graph, when it did (for the subplan's trace header)
 */
export async function decompose(
  vault: string,
  node: PlanNode,
  options: { llm?: CallLLM | undefined; signal?: AbortSignal | undefined; fsync: boolean },
): Promise<string | undefined> {
  const folder = subplanFoldersOf(node)[0]!.folder
  const target = join(vault, folder)
  const notes = await listNotes(target, []).catch(() => [])
  if (notes.length > 0) return undefined
  const task = [node.title, node.body].filter((part) => part.trim() !== '').join('\n\n')
  const graph = await planGraph(task, options.llm ?? createLLM(), options.signal ? { signal: options.signal } : {})
  await intoPlace(target, (temp) => savePlan(graph, temp, { fsync: options.fsync }).then(() => undefined), options)
  return graph.degraded
}
