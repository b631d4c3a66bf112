import { mkdir, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { createLLM } from '../../models/llm-client.js'
import { listNotes } from '../../vault/read-vault.js'
import { savePlan } from '../../plan/save-plan.js'
import { planGraph } from '../../plan/plan-document.js'
import { checkPlace, intoPlace } from './run-vault.js'
import { subplanFoldersOf } from '../../vault/subplan-folders.js'
import { TRACE_FOLDER } from '../../vault/run-folder.js'
import type { CallLLM, PlanNode } from '../../core/types.js'
import { DECOMPOSITION_FILE } from '../read/planner-calls.js'
import { plannerCallDue } from '../core/tree-rules.js'

/** What a decomposition did: `reused` a folder holding notes, `refused` the planner call (no step left), or `planned` the folder. */
export type Decomposition = { kind: 'reused' } | { kind: 'refused' } | { kind: 'planned'; degraded: string | undefined }

/**
 * Decomposition (`plan: generate`): on the note's first
 * visit, asks the planning role for a subplan of the note's title and body
 * and writes it as notes into the folder named like the note
 * (`research.md` -> `research/`), whole or not at all. A folder that holds
 * notes already (written earlier, maybe edited by a person) is used as it
 * is: the planner is not called.
 *
 * @param options.run - the top run's id, kept beside the written subplan so later calls count this planner call
 * @param options.claim - asked just before the planner call, which counts against `maxSteps`; `false` refuses it
 * @returns `planned` with why the planner's reply fell back to a path graph, when it did (for the subplan's trace header)
 */
export async function decompose(
  vault: string,
  node: PlanNode,
  options: { llm?: CallLLM | undefined; signal?: AbortSignal | undefined; fsync: boolean; run: string; claim: () => boolean },
): Promise<Decomposition> {
  const folder = subplanFoldersOf(node)[0]!.folder
  const target = join(vault, folder)
  const notes = await listNotes(target, []).catch(() => [])
  if (!plannerCallDue(node, notes.length > 0)) return { kind: 'reused' }
  // Refused before the planner call it would waste: the plan could not be written there.
  await checkPlace(target)
  if (!options.claim()) return { kind: 'refused' }
  const task = [node.title, node.body].filter((part) => part.trim() !== '').join('\n\n')
  const graph = await planGraph(task, options.llm ?? createLLM(), options.signal ? { signal: options.signal } : {})
  await intoPlace(
    target,
    async (temp) => {
      await savePlan(graph, temp, { fsync: options.fsync })
      await mkdir(join(temp, TRACE_FOLDER), { recursive: true })
      const text = `---\nvaultplan: decomposition\nrun: ${JSON.stringify(options.run)}\nnode: ${JSON.stringify(node.id)}\n---\nThe planning role wrote this subplan for \`${node.id}\`.\n`
      await writeFile(join(temp, DECOMPOSITION_FILE), text)
    },
    options,
  )
  return { kind: 'planned', degraded: graph.degraded }
}
