import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { editPlan } from '../run/edits/edit-plan.js'
import { blockStep, deferStep } from '../run/entry/stepping.js'
import { toolArgs, vaultArg, WRITES } from './args.js'
import { vaultPath } from './paths.js'
import { guarded, ok, refusal } from './results.js'
import { viewStep } from './step-view.js'
import { agentArg, stepOptions } from './tools-step.js'
import type { ToolContext } from './tools-plan.js'

/** Registers the tools of many hands on one plan (section 16): plan_defer, plan_block, plan_edit. */
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
          return ok({ ...(await viewStep(step, vault, path, context.checks, context.handed)), agent: options.agent })
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
        "Changes the plan: `document` (plan_create's format) adds notes or replaces existing ones (status kept); `remove` deletes unvisited notes (into .trash/). Notes being worked or waiting are left alone; an invalid result writes nothing.",
      inputSchema: toolArgs('plan_edit', {
        vault: vaultArg,
        document: z.string().optional().describe('sections to add or replace'),
        remove: z.array(z.string()).optional().describe('note ids to remove'),
        agent: agentArg,
      }),
      annotations: { ...WRITES, idempotentHint: true },
    },
    async ({ vault, document, remove, agent }) =>
      guarded(context.root, { tool: 'plan_edit', vault }, async () => {
        if (document === undefined && (remove === undefined || remove.length === 0)) return refusal('nothing-to-edit', 'Pass `document`, `remove`, or both.')
        const path = await vaultPath(context.root, vault)
        const name = agent ?? context.agent?.()
        const done = await editPlan(
          path,
          { ...(document !== undefined && { document }), ...(remove !== undefined && { remove }) },
          name === undefined ? {} : { agent: name },
        )
        return ok({ vault, ...done, todo: 'The run follows the edited plan from its next hop: call plan_next.' })
      }),
  )
}
