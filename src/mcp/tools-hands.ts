import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { editPlanThen } from '../run/edits/edit-plan.js'
import { blockStep, deferStep, stepUnderLock } from '../run/entry/stepping.js'
import { toolArgs, vaultArg, WRITES } from './args.js'
import { vaultPath } from './paths.js'
import { guarded, ok, refusal } from './results.js'
import { viewStep } from './step-view.js'
import { agentArg, agentOnce, stepOptions } from './tools-step.js'
import type { ToolContext } from './tools-plan.js'

/** Registers the tools of many hands on one plan (docs/stepping.md, several agents): plan_defer, plan_block, plan_edit. */
export function registerHandsTools(server: McpServer, context: ToolContext): void {
  const release = (tool: 'plan_defer' | 'plan_block', description: string) =>
    server.registerTool(
      tool,
      {
        description,
        inputSchema: toolArgs(tool, {
          vault: vaultArg,
          key: z.string().describe('step.key of your step'),
          reason: z.string().min(1).describe('why, in a sentence'),
          agent: agentArg,
        }),
        annotations: WRITES,
      },
      async ({ vault, key, reason, agent }) =>
        guarded(context.root, { tool, vault }, async () => {
          const path = await vaultPath(context.root, vault)
          const options = stepOptions(context, agent)
          const letGo = tool === 'plan_defer' ? deferStep : blockStep
          const step = await letGo(path, key, { reason }, options)
          context.session?.took(path, options.agent, step)
          return ok({ ...(await viewStep(step, vault, path, context.checks, context.handed)), ...agentOnce(context, vault, options.agent) })
        }),
    )
  release(
    'plan_defer',
    'Not now: releases your step (its visit not counted again, `reason` recorded); it comes back after the other ready work. Returns { step }, your next.',
  )
  release(
    'plan_block',
    'Stuck: hands your step to a person (waiting, kind "blocked", `reason` shown); once they unblock it, its next claim has the same key and their feedback. Returns { step }, your next.',
  )

  server.registerTool(
    'plan_edit',
    {
      description:
        "Changes the plan: `document` (plan_create's format) adds notes or changes existing ones (what a section names; status kept); `after` puts its notes in a row after that note (add to a queue, move a note); `remove` deletes unvisited notes. To split your claimed step, give its note `plan: <folder>` and write `## <folder>/<id>` notes: you get their first. An invalid result writes nothing.",
      inputSchema: toolArgs('plan_edit', {
        vault: vaultArg,
        document: z.string().optional().describe('sections to add or change'),
        after: z.string().optional().describe('note id'),
        remove: z.array(z.string()).optional().describe('note ids to remove'),
        agent: agentArg,
      }),
      annotations: { ...WRITES, idempotentHint: true },
    },
    async ({ vault, document, after, remove, agent }, extra) =>
      guarded(context.root, { tool: 'plan_edit', vault }, async () => {
        if (document === undefined && (remove === undefined || remove.length === 0)) return refusal('nothing-to-edit', 'Pass `document`, `remove`, or both.')
        if (after !== undefined && document === undefined) return refusal('nothing-to-edit', 'Pass `document`: the notes to put after `after`.')
        const path = await vaultPath(context.root, vault)
        const options = { ...stepOptions(context, agent), signal: extra.signal }
        const edit = { ...(document !== undefined && { document }), ...(remove !== undefined && { remove }), ...(after !== undefined && { after }) }
        return editPlanThen(path, edit, options.agent === undefined ? {} : { agent: options.agent }, async ({ written, removed, decomposed }, lock) => {
          const split = decomposed[0]
          if (!split) return ok({ vault, written, removed, todo: 'The run follows the edited plan from its next hop.' })
          // The step in hand was decomposed: its claim moves to the subplan's first note, under the lock the edit wrote with.
          const step = await stepUnderLock(path, lock, options, (tree) => tree.nextWithin(split.folder))
          context.session?.took(path, options.agent, step)
          return ok({
            vault,
            written,
            removed,
            ...(await viewStep(step, vault, path, context.checks, context.handed)),
            ...agentOnce(context, vault, options.agent),
          })
        })
      }),
  )
}
