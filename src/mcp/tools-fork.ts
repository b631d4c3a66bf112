import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { forkRun } from '../run/forks/fork.js'
import { readTrace } from '../store/trace.js'
import { toolArgs, vaultArg, WRITES } from './args.js'
import { confine, PathRefusal, refuseInsideVault, vaultPath } from './paths.js'
import { guarded, ok, refusal } from './results.js'
import type { ToolContext } from './tools-plan.js'

/** Registers plan_fork: a new vault that goes on from a step of a vault's run. */
export function registerForkTool(server: McpServer, context: ToolContext): void {
  server.registerTool(
    'plan_fork',
    {
      description:
        'Copies the plan and its run up to `step` (0: only the query) into the new vault `into`, to go on from there with plan_next; the original untouched.',
      inputSchema: toolArgs('plan_fork', {
        vault: vaultArg,
        step: z.number().int().min(0).max(1_000_000).describe('the last step kept (plan_status lists the hops)'),
        into: z.string().describe('the new vault, relative to the root; it must not exist'),
      }),
      annotations: WRITES,
    },
    async ({ vault, step, into }) =>
      guarded(context.root, { tool: 'plan_fork', vault }, async () => {
        const path = await vaultPath(context.root, vault)
        const target = await confine(context.root, into, 'the new vault')
        if (target.exists) throw new PathRefusal('exists', `\`${into}\` exists already; \`into\` names a new folder`)
        await refuseInsideVault(context.root, target.path, into, 'exists')
        if (!(await readTrace(path)))
          return refusal('no-run', `\`${vault}\` holds no run to fork.`, { vault }, 'Call plan_next with `vault` and a `query` to start one.')
        try {
          await forkRun(path, { step, into: target.path })
        } catch (error) {
          // forkRun checks `step` against the run as a programmer's argument; here it is the client's.
          if (error instanceof TypeError)
            return refusal(
              'bad-step',
              `\`step\` ${step} is no step of the run of \`${vault}\`.`,
              { step },
              "plan_status lists the run's hops and their steps; 0 keeps none.",
            )
          throw error
        }
        return ok({ vault: into, from: { vault, step }, todo: `Call plan_next with \`vault\` \`${into}\` to go on from step ${step}.` })
      }),
  )
}
