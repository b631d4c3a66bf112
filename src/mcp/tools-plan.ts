import type { Handed } from './step-view.js'
import type { SessionClaims } from './session-claims.js'
import type { CheckDefinition } from '../run/core/checks.js'
import { mkdir, rm } from 'node:fs/promises'
import { dirname, join, relative, sep } from 'node:path'
import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { loadPlan } from '../plan/load-plan.js'
import type { PlanGraph } from '../plan/plan-graph.js'
import { subplanTree } from '../plan/subplan-tree.js'
import { savePlan } from '../plan/save-plan.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import { parsePlanDocument } from '../plan/plan-document.js'
import { toCanvas } from '../plan/plan-canvas.js'
import { toDot, toMermaid } from '../plan/plan-picture.js'
import { toSvg } from '../plan/plan-svg.js'
import { readRunStatus } from '../run/read/run-status.js'
import { viewStatus } from './status-view.js'
import { proposalVersions } from './proposal-versions.js'
import { budgetOf, readRecords } from '../run/read/observe-run.js'
import { snapshotOf, visitsOfSnapshot } from '../run/core/run-snapshot.js'
import type { PlanIssue } from '../core/types.js'
import { confine, PathRefusal, refuseInsideVault, vaultName, vaultPath } from './paths.js'
import { guarded, LIMITS, mapStrings, ok, relativeTo, type ToolResult } from './results.js'
import { toolArgs, vaultArg, WRITES } from './args.js'
import { findVaults, isPlanFolder } from './vaults.js'
import { statOrNothing } from '../vault/stat-or-nothing.js'

/** What every tool works from: the root it serves, as a real path. */
export interface ToolContext {
  root: string
  /** The checks the server's operator defined (flags, `vaultplan.config.json`); a vault never defines one. */
  checks?: Record<string, CheckDefinition> | undefined
  /** How long an SVG layout may take (`toSvg`'s `timeoutMs`); its default when not set. */
  svgTimeoutMs?: number | undefined
  /** The step budget of a run started over MCP when `plan_next` names none (`vaultplan mcp --max-steps`); the library's default when not set. */
  maxSteps?: number | undefined
  /** The agent a call works as when it names none (docs/stepping.md, several agents): one per MCP session, the client's name plus the session's id. */
  agent?: (() => string) | undefined
  /** How long a session's claim lasts (`McpServerOptions.leaseMs`). */
  leaseMs?: number | undefined
  /** What this session already handed its agent, so a step result does not repeat it (docs/mcp.md). */
  handed?: Handed | undefined
  /** The claims this session was handed, released when it ends. */
  session?: SessionClaims | undefined
}

const PICTURES = ['mermaid', 'dot', 'svg', 'canvas'] as const
const readOnly = { readOnlyHint: true, openWorldHint: false } as const

/** Registers the tools that read and write plans as a whole: list, validate, create, status, graph. */
export function registerPlanTools(server: McpServer, context: ToolContext): void {
  server.registerTool(
    'plan_list',
    {
      description:
        "Lists the plan vaults under the root: each `vault` (pass it to the other tools), its run's phase, query and current note, a proposal with its versions.",
      inputSchema: toolArgs('plan_list', {}),
      annotations: readOnly,
    },
    async () => guarded(context.root, { tool: 'plan_list' }, () => listVaults(context)),
  )

  server.registerTool(
    'plan_validate',
    {
      description: 'Every problem of the plan at once (code, severity, message, file, line); errors stop a run, warnings do not. Reads only.',
      inputSchema: toolArgs('plan_validate', { vault: vaultArg }),
      annotations: readOnly,
    },
    async ({ vault }) => guarded(context.root, { tool: 'plan_validate', vault }, () => validateVault(context, vault)),
  )

  server.registerTool(
    'plan_create',
    {
      description:
        'Writes a new vault from `document` into a new folder, one `## <id>` section per note: knob lines (`type: start`, `max_visits: 3`, `judge: human`), the task, then edges under `### Next`: `- [[target]]` or `- <condition> -> [[target]]`. `## web/search` is a note of the subplan `web` (its note has `plan: web`). An invalid document writes nothing and lists every problem.',
      inputSchema: toolArgs('plan_create', {
        vault: vaultArg.describe('the new folder, relative to the root'),
        document: z.string().describe('the plan document'),
      }),
      annotations: WRITES,
    },
    async ({ vault, document }) => guarded(context.root, { tool: 'plan_create', vault }, () => createVault(context, vault, document)),
  )

  server.registerTool(
    'plan_status',
    {
      description:
        "Where the run stands, changing nothing: the phase and what comes next, each note's status and visits, the last hops, waits, claims, the plan's issues.",
      inputSchema: toolArgs('plan_status', { vault: vaultArg }),
      annotations: readOnly,
    },
    async ({ vault }) => guarded(context.root, { tool: 'plan_status', vault }, () => statusOf(context, vault)),
  )

  server.registerTool(
    'plan_graph',
    {
      description: "The plan as a picture: `mermaid` (default), `dot`, `svg` or `canvas` (Obsidian); with a run, each note's visits and status.",
      inputSchema: toolArgs('plan_graph', { vault: vaultArg, format: z.enum(PICTURES).optional().describe('default mermaid') }),
      annotations: readOnly,
    },
    async ({ vault, format }, { signal }) => guarded(context.root, { tool: 'plan_graph', vault }, () => pictureOf(context, vault, format ?? 'mermaid', signal)),
  )
}

async function listVaults(context: ToolContext): Promise<ToolResult> {
  const { vaults, truncated } = await findVaults(context.root)
  const rows = await Promise.all(
    vaults.map(async (path) => {
      const vault = vaultName(context.root, path)
      try {
        const status = await readRunStatus(path, { hops: 0 })
        return {
          vault,
          phase: status.phase,
          ...(status.run ? { query: status.run.query } : {}),
          ...(status.next.node !== undefined ? { node: status.next.node } : {}),
          // Who holds the run, beside its phase: a live runner, or agents' claims.
          ...(status.holder ? { holder: status.holder } : {}),
          ...(status.claims.length > 0 ? { claims: status.claims.map((item) => ({ node: item.node, agent: item.claim!.agent })) } : {}),
          // A proposal with its versions: what a person said of each earlier one.
          ...(status.proposal ? { proposal: await proposalVersions(path, vault, status.proposal) } : {}),
        }
      } catch (error) {
        return { vault, phase: 'unreadable' as const, problem: relativeTo(context.root, error instanceof Error ? error.message : String(error)) }
      }
    }),
  )
  // A root that is itself a plan serves nothing: a vault is a folder inside the root.
  const note = (await isPlanFolder(context.root))
    ? { note: 'The root itself holds a plan, and a vault is a folder inside the root: start the server with --root set to the folder above it.' }
    : {}
  return ok({ vaults: rows, truncated, ...note })
}

async function validateVault(context: ToolContext, vault: string): Promise<ToolResult> {
  const graph = await loadPlan(await vaultPath(context.root, vault))
  // The checks a walk here would have: a note naming another is an error, as plan_next would refuse it.
  const checked = graph.check({ checks: Object.keys(context.checks ?? {}) })
  const issues: PlanIssue[] = checked.issues
  const errors = checked.errors.length
  const shown = issues.slice(0, LIMITS.issues)
  const more = issues.length > shown.length ? { more: `${issues.length - shown.length} more issues: \`vaultplan validate ${vault}\` lists them all` } : {}
  return ok({ vault, valid: errors === 0, errors, warnings: issues.length - errors, issues: shown, ...more })
}

async function createVault(context: ToolContext, vault: string, document: string): Promise<ToolResult> {
  const { path, exists } = await confine(context.root, vault, 'the vault')
  if (exists) throw new PathRefusal('exists', `\`${vault}\` exists already`)
  // Parsed before any folder is made: an invalid document writes nothing.
  const graph = parsePlanDocument(document)
  await refuseInsideVault(context.root, path, vault, 'exists')
  await mkdir(dirname(path), { recursive: true })
  try {
    await mkdir(path)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'EEXIST') throw new PathRefusal('exists', `\`${vault}\` exists already`)
    throw error
  }
  let saved: PlanGraph
  let warnings: PlanIssue[]
  try {
    // Checked again now that it exists: a folder on the way may have been swapped for a symlink.
    const again = await confine(context.root, vault, 'the vault')
    if (again.path !== path) throw new PathRefusal('bad-path', `\`${vault}\` changed while it was written`)
    await savePlan(graph, path)
    saved = await loadPlan(path)
    warnings = saved.validate()
  } catch (error) {
    // Nothing stays of a document that did not become a valid vault: a retry finds no folder in its way.
    await rm(path, { recursive: true, force: true })
    throw error
  }
  // By id: each is the resource vaultplan://<vault>/<id>.md.
  const notes = [...subplanTree(saved)].flatMap(({ folder, vault: plan }) =>
    [...plan.nodes.values()].map((node) => `${folder === '' ? '' : `${folder}/`}${node.id}`),
  )
  const start = saved.startNode().id
  return ok({
    vault: relative(context.root, path).split(sep).join('/'),
    start,
    notes,
    warnings,
    todo: `Call plan_next with \`vault\` and a \`query\` (what the run is for) to start at \`${start}\`.`,
  })
}

async function statusOf(context: ToolContext, vault: string): Promise<ToolResult> {
  const path = await vaultPath(context.root, vault)
  const status = await readRunStatus(path)
  // Paths inside the vault (its subplans' folders) relative to it, as every other path of a result.
  const inside = (text: string) =>
    text === path
      ? '.'
      : text.startsWith(path + sep)
        ? text
            .slice(path.length + 1)
            .split(sep)
            .join('/')
        : text
  return ok(viewStatus(mapStrings(status, inside), vault))
}

async function pictureOf(context: ToolContext, vault: string, format: (typeof PICTURES)[number], signal: AbortSignal): Promise<ToolResult> {
  const path = await vaultPath(context.root, vault)
  // Visits as the run's snapshot counts them, the notes of subplans included.
  const records = await readRecords(path)
  const { graph } = records
  const snapshot = snapshotOf(path, records, { maxSteps: budgetOf(records), hops: 0 })
  const state = snapshot.run ? { visits: visitsOfSnapshot(snapshot) } : undefined
  let picture: string
  // Laid out in a worker, bounded in time: a large plan never stops the server's other sessions.
  if (format === 'svg') picture = await toSvg(graph, state, { signal, ...(context.svgTimeoutMs !== undefined && { timeoutMs: context.svgTimeoutMs }) })
  else if (format === 'canvas') picture = `${JSON.stringify(toCanvas(graph, state, { folder: await folderInObsidian(context.root, path) }), null, '\t')}\n`
  else picture = format === 'dot' ? toDot(graph, state) : toMermaid(graph, state)
  if (picture.length <= LIMITS.picture) return ok({ vault, format, picture })
  const more = `${picture.length - LIMITS.picture} more characters: \`vaultplan graph ${vault} --format ${format} --write\` writes the whole picture into ${vault}/${TRACE_FOLDER}/`
  return ok({ vault, format, picture: picture.slice(0, LIMITS.picture), more })
}

/**
 * The vault's folder inside the Obsidian vault that holds it (the nearest
 * folder with `.obsidian/`, the vault itself included), for the canvas's
 * file paths; `''` when there is none. Looks no higher than the root.
 */
async function folderInObsidian(root: string, vault: string): Promise<string> {
  for (let folder = vault; folder === root || folder.startsWith(root + sep); folder = dirname(folder)) {
    const info = await statOrNothing(join(folder, '.obsidian'))
    if (info?.isDirectory()) return relative(folder, vault).split(sep).join('/')
  }
  return ''
}
