import { mkdir } from 'node:fs/promises'
import { dirname } from 'node:path'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { durationMs } from '../core/durations.js'
import { knobExpects } from '../core/knobs.js'
import { proposePlan } from '../run/proposals/propose-plan.js'
import { readProposal } from '../vault/proposal-note.js'
import { PROPOSAL_FILE } from '../vault/run-folder.js'
import { confine, refuseInsideVault, resourceUri, vaultPath } from './paths.js'
import { guarded, ok, refusal, type ToolResult } from './results.js'
import { toolArgs, vaultArg, WRITES } from './args.js'
import type { ToolContext } from './tools-plan.js'

const TODO =
  'A person decides now: show them the plan and ask them to approve, revise (saying what must change) or decline; record their ' +
  'choice with plan_decide {vault, node: "proposal", edge, feedback}: its answer says what follows (after a revise, plan_propose ' +
  'again on this vault with the next document).'

/** Registers plan_propose: an agent proposes a plan (or its next version) for a person to approve, as `proposePlan` with a `document`. */
export function registerProposeTools(server: McpServer, context: ToolContext): void {
  server.registerTool(
    'plan_propose',
    {
      description:
        'Writes your plan document (plan_create\'s format) into a new vault as a proposal a person approves, revises or declines. Sent back (plan_next: waiting, kind "proposal", feedback as reason), call it again on that vault with the same query and your next document: the next version.',
      inputSchema: toolArgs('plan_propose', {
        vault: vaultArg.describe('a new folder, or the vault sent back'),
        query: z.string().describe('what the plan is for'),
        document: z.string().describe('the plan document'),
        wait: z.string().optional().describe('time a person may take: 30m, 4h, 2d'),
      }),
      annotations: WRITES,
    },
    async ({ vault, query, document, wait }) =>
      guarded(context.root, { tool: 'plan_propose', vault }, () => propose(context, { vault, query, document, wait })),
  )
}

async function propose(context: ToolContext, call: { vault: string; query: string; document: string; wait: string | undefined }): Promise<ToolResult> {
  const { vault, query, document, wait } = call
  if (query.trim() === '') return refusal('query-needed', 'Pass `query`: what the plan is for.')
  if (wait !== undefined && durationMs(wait) === undefined)
    return refusal('bad-wait', `\`${wait}\` is no duration a proposal takes; \`wait\` must be ${knobExpects('wait')}.`)
  const { path, exists } = await confine(context.root, vault, 'the vault')
  if (exists) {
    // A folder there already: a vault strictly inside the root (an empty folder, or a proposal to revise), not one of another vault's.
    await vaultPath(context.root, vault)
  } else {
    await refuseInsideVault(context.root, path, vault, 'exists')
    await mkdir(dirname(path), { recursive: true })
    // Checked again now that the folders on the way exist: one may have been swapped for a symlink.
    await confine(context.root, vault, 'the vault')
  }
  await proposePlan(query, { into: path, document, ...(wait !== undefined && { wait }) })
  const info = await readProposal(path)
  return ok({
    vault,
    version: info?.version ?? 1,
    proposal: resourceUri(vault, PROPOSAL_FILE),
    ...(info?.parent !== undefined && { parent: resourceUri(vault, info.parent) }),
    todo: TODO,
  })
}
