import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { invalidate, readLedger, recordEntry } from '../memory/ledger.js'
import { queryTooLong, searchRuns } from '../memory/search-runs.js'
import { observeRun } from '../run/observe-run.js'
import { snapshotNodes, type SnapshotNode } from '../run/run-snapshot.js'
import { vaultPath } from './paths.js'
import { guarded, ok, orRefusal, refusal } from './results.js'
import { vaultArg, type ToolContext } from './tools-plan.js'

/** How many search hits a call returns at most. */
const MAX_HITS = 50

const entryArgs = {
  vault: vaultArg,
  text: z.string().min(1).describe('the entry, one or a few sentences'),
  reason: z.string().optional().describe('why: the source of a fact, the reason of a decision'),
  node: z.string().optional().describe('the note it was found at; by default the note of the step plan_next handed out'),
}
const entryOut = { vault: z.string(), id: z.string(), todo: z.string() }

/**
 * Registers the tools of a plan's memory: the ledger's
 * plan_fact, plan_assume, plan_decision and plan_invalidate, and
 * plan_search over past runs under the root.
 */
export function registerMemoryTools(server: McpServer, context: ToolContext): void {
  const record = (name: string, kind: 'fact' | 'assumption' | 'decision', title: string, what: string) =>
    server.registerTool(
      name,
      {
        title,
        description:
          `${what} It goes into the vault's ledger (00_plan-trace/ledger.md, readable in Obsidian), gets ` +
          `an id (${kind === 'fact' ? 'F' : kind === 'assumption' ? 'A' : 'D'}<n>, never reused) and ` +
          `survives fresh runs; the judge of later hops sees facts and valid assumptions.`,
        inputSchema: entryArgs,
        outputSchema: orRefusal(z.object(entryOut)),
        annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
      },
      async ({ vault, text, reason, node }) =>
        guarded(context.root, async () => {
          const path = await vaultPath(context.root, vault)
          const where = { ...(await pendingVisit(path)), ...(node !== undefined && { node }) }
          const id = await recordEntry(path, { kind, text, ...(reason !== undefined && { reason }), ...where })
          return ok({ vault, id, todo: kind === 'assumption' ? `If it turns out wrong, call plan_invalidate with id ${id}.` : 'Go on with the step.' })
        }),
    )
  record('plan_fact', 'fact', 'Record a fact', 'Records a fact the plan rests on (something found out, with its source as `reason`).')
  record('plan_assume', 'assumption', 'Record an assumption', 'Records an assumption: something taken as true for now, which plan_invalidate can withdraw.')
  record('plan_decision', 'decision', 'Record a decision', 'Records a decision with its reason.')

  server.registerTool(
    'plan_invalidate',
    {
      title: 'Withdraw an assumption',
      description:
        'Marks an assumption of the ledger (id A<n>) as invalid, with the reason; the judge no longer sees it. The entry stays in the ledger, with its history.',
      inputSchema: { vault: vaultArg, id: z.string().describe('the assumption, A<n>'), reason: z.string().min(1).describe('why it no longer holds') },
      outputSchema: orRefusal(z.object({ vault: z.string(), id: z.string(), valid: z.boolean() })),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ vault, id, reason }) =>
      guarded(context.root, async () => {
        const path = await vaultPath(context.root, vault)
        await invalidate(path, id, reason, await pendingVisit(path))
        const assumption = (await readLedger(path)).assumptions.find((entry) => entry.id === id)
        return ok({ vault, id, valid: assumption?.valid ?? false })
      }),
  )

  server.registerTool(
    'plan_search',
    {
      title: 'Search past runs',
      description:
        "Searches what every run under the root produced (outputs, final answers, ledgers, the judges' " +
        'reasons; archived runs too), best first, so you can reuse an outcome instead of redoing it. ' +
        '`query` is plain words (quotes and operators are matched as text). Each hit names its vault, ' +
        'run, note, step and file (read it as the resource vaultplan://<vault>/<file>).',
      inputSchema: {
        query: z.string().min(1).describe('words to look for: at most 64 words and 1,000 characters'),
        limit: z.number().int().min(1).max(MAX_HITS).optional().describe(`hits at most (default 10, at most ${MAX_HITS})`),
      },
      outputSchema: orRefusal(
        z.object({
          hits: z.array(
            z.object({
              vault: z.string(),
              runId: z.string(),
              kind: z.string(),
              node: z.string().optional(),
              step: z.number().optional(),
              file: z.string(),
              snippet: z.string(),
              score: z.number(),
            }),
          ),
        }),
      ),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ query, limit }) =>
      guarded(context.root, async () => {
        const tooLong = queryTooLong(query)
        if (tooLong !== undefined) return refusal('query-too-long', tooLong)
        const hits = await searchRuns(context.root, query, limit === undefined ? {} : { limit })
        return ok({ hits: hits.map((hit) => ({ ...hit })) })
      }),
  )
}

/**
 * Where a ledger entry made now belongs: the visit `plan_next` handed out and
 * no `plan_finish` completed yet (its note `active`), by its step and its
 * path from the vault, as the ledger tools of a worker inside `runPlan` name
 * it; none between steps or once the run is over. Without the step, a fork
 * at a later step would drop the entry and give its id again.
 */
async function pendingVisit(vault: string): Promise<{ node?: string; step?: number }> {
  // A claimed visit is pending whatever budget the run was given: no budget may hide it.
  const snapshot = await observeRun(vault, { hops: 0, maxSteps: Number.MAX_SAFE_INTEGER }).catch(() => undefined)
  if (!snapshot) return {}
  const claimed = snapshot.frontier.find((item) => item.kind === 'work' && statusOf(snapshot.nodes, item.node) === 'active')
  return claimed ? { node: claimed.node, step: claimed.step } : {}
}

/** The status of the note `id` (a path from the top vault) among a snapshot's notes, subplans included. */
function statusOf(nodes: readonly SnapshotNode[], id: string): string | undefined {
  for (const node of snapshotNodes(nodes)) if (node.id === id) return node.status
  return undefined
}
