import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { invalidate, LEDGER_KINDS, readLedger, recordEntry, revalidate } from '../memory/ledger.js'
import { queryTooLong, searchRuns } from '../memory/search-runs.js'
import { observeRun } from '../run/read/observe-run.js'
import { snapshotNodes, type SnapshotNode } from '../run/core/run-snapshot.js'
import { toolArgs, vaultArg, WRITES } from './args.js'
import { resourceUri, vaultName, vaultPath } from './paths.js'
import { guarded, ok, refusal } from './results.js'
import type { ToolContext } from './tools-plan.js'
import { findVaults } from './vaults.js'

/** How many search hits a call returns at most. */
const MAX_HITS = 50

/**
 * Registers the tools of a plan's memory: the ledger's plan_fact,
 * plan_assume, plan_decision, plan_invalidate, plan_revalidate and
 * plan_ledger, and plan_search over past runs under the root.
 */
export function registerMemoryTools(server: McpServer, context: ToolContext): void {
  const record = (name: string, kind: 'fact' | 'assumption' | 'decision', what: string) =>
    server.registerTool(
      name,
      {
        description: `${what} It goes into the vault's ledger with a new id (${LEDGER_KINDS[kind]}<n>) and survives fresh runs; later judges see it.`,
        inputSchema: toolArgs(name, {
          vault: vaultArg,
          text: z.string().min(1).describe('one or a few sentences'),
          reason: z.string().optional().describe('its source, or why'),
          node: z.string().min(1).optional().describe('its note; default: the step handed out'),
        }),
        annotations: WRITES,
      },
      async ({ vault, text, reason, node }) =>
        guarded(context.root, { tool: name, vault }, async () => {
          const path = await vaultPath(context.root, vault)
          const where = { ...(await pendingVisit(path)), ...(node !== undefined && { node }) }
          const id = await recordEntry(path, { kind, text, ...(reason !== undefined && { reason }), ...where })
          return ok({ vault, id, todo: kind === 'assumption' ? `If it turns out wrong, call plan_invalidate with id ${id}.` : 'Go on with the step.' })
        }),
    )
  record('plan_fact', 'fact', 'Records a fact the plan rests on (its source as `reason`).')
  record('plan_assume', 'assumption', 'Records an assumption, taken as true until plan_invalidate withdraws it.')
  record('plan_decision', 'decision', 'Records a decision with its reason.')

  const standing = (name: 'plan_invalidate' | 'plan_revalidate', valid: boolean, description: string) =>
    server.registerTool(
      name,
      {
        description,
        inputSchema: toolArgs(name, {
          vault: vaultArg,
          id: z.string().describe('the assumption, A<n>'),
          reason: valid ? z.string().min(1).optional().describe('why it holds again') : z.string().min(1).describe('why it no longer holds'),
        }),
        annotations: { ...WRITES, idempotentHint: true },
      },
      async ({ vault, id, reason }) =>
        guarded(context.root, { tool: name, vault }, async () => {
          const path = await vaultPath(context.root, vault)
          const { assumptions } = await readLedger(path)
          const assumption = assumptions.find((entry) => entry.id === id)
          if (!assumption) {
            const known = assumptions.map((entry) => entry.id)
            return refusal(
              'unknown-assumption',
              `The ledger of \`${vault}\` has no assumption \`${id}\`; it has ${known.length === 0 ? 'none' : known.map((each) => `\`${each}\``).join(', ')}.`,
              { id, assumptions: known },
              'Pass `id` as one of those; plan_ledger lists the entries.',
            )
          }
          // Asked twice, it is done once: the ledger keeps one change per decision.
          if (assumption.valid === valid)
            return ok({ vault, id, valid, note: `\`${id}\` was ${valid ? 'valid' : 'invalidated'} already; nothing was written.` })
          const where = await pendingVisit(path)
          if (valid) await revalidate(path, id, reason, where)
          else await invalidate(path, id, reason ?? '', where)
          return ok({ vault, id, valid })
        }),
    )
  standing(
    'plan_invalidate',
    false,
    'Marks an assumption (A<n>) invalid, with the reason: later judges no longer see it. The entry stays in the ledger with its history.',
  )
  standing('plan_revalidate', true, 'Makes an invalidated assumption (A<n>) valid again, with the reason if any.')

  server.registerTool(
    'plan_ledger',
    {
      description: "The vault's ledger: its facts, assumptions (each with `valid` and its changes) and decisions, in the order recorded.",
      inputSchema: toolArgs('plan_ledger', { vault: vaultArg }),
      annotations: { readOnlyHint: true, openWorldHint: false },
    },
    async ({ vault }) =>
      guarded(context.root, { tool: 'plan_ledger', vault }, async () => {
        const ledger = await readLedger(await vaultPath(context.root, vault))
        return ok({ vault, ...ledger })
      }),
  )

  server.registerTool(
    'plan_search',
    {
      description:
        "Searches what every run under the root produced (outputs, final answers, ledgers, judges' reasons), best first, to reuse an outcome. Each hit names its vault, run, note, step and a readable `uri`.",
      inputSchema: toolArgs('plan_search', {
        query: z.string().min(1).describe('words: at most 64 and 1,000 characters'),
        limit: z.number().int().min(1).max(MAX_HITS).optional().describe('hits at most, default 10'),
      }),
      annotations: { readOnlyHint: true, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ query, limit }) =>
      guarded(context.root, { tool: 'plan_search' }, async () => {
        const tooLong = queryTooLong(query)
        if (tooLong !== undefined) return refusal('query-too-long', tooLong)
        const hits = await searchRuns(context.root, query, limit === undefined ? {} : { limit })
        const { vaults } = await findVaults(context.root)
        const names = vaults.map((path) => vaultName(context.root, path))
        return ok({ hits: hits.map((hit) => ({ ...hit, ...hitUri(names, hit.file) })) })
      }),
  )
}

/** The resource URI of a hit's file (relative to the root), by the vault that holds it; none for a file of no vault. */
function hitUri(vaults: readonly string[], file: string): { uri?: string } {
  const vault = vaults.find((name) => file.startsWith(`${name}/`))
  return vault === undefined ? {} : { uri: resourceUri(vault, file.slice(vault.length + 1)) }
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
