import type { CheckDefinition } from '../run/core/checks.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { serveResources } from './resources.js'
import { registerPlanTools } from './tools-plan.js'
import { randomBytes } from 'node:crypto'
import { registerStepTools } from './tools-step.js'
import { registerHandsTools } from './tools-hands.js'
import { registerMemoryTools } from './tools-memory.js'
import { registerProposeTools } from './tools-propose.js'
import { registerForkTool } from './tools-fork.js'
import { Handed } from './step-view.js'
import { SessionClaims } from './session-claims.js'

/** Options of `createMcpServer`. */
export interface McpServerOptions {
  /** The folder whose vaults are served, as a real path; nothing outside it is read or written. */
  root: string
  /** The version the server reports in `initialize`. */
  version: string
  /**
   * How long `plan_graph`'s SVG layout may take before the call is refused with `picture-too-large`.
   *
   * @default 10_000 (`toSvg`'s default)
   */
  svgTimeoutMs?: number
  /**
   * The checks a note's `check:` may name (see `RunOptions.checks`), defined by whoever runs the server, never by a
   * vault it serves. A note naming another check is refused at `plan_validate` and `plan_next`.
   *
   * @default none: a note with `check:` does not run
   */
  checks?: Record<string, CheckDefinition>
  /**
   * The step budget of a run when `plan_next` names none and the run recorded none (`vaultplan mcp --max-steps`).
   *
   * @default the library's (`runPlan`'s `maxSteps`)
   */
  maxSteps?: number
  /**
   * The agent every session works as when a call names none (`vaultplan mcp --agent`).
   *
   * @default the client's name plus the session's id: one agent per session
   */
  agent?: string
  /**
   * How long a session's claim lasts unless it calls again (`StepOptions.leaseMs`).
   *
   * @default the library's: 30 minutes
   */
  leaseMs?: number
}

const INSTRUCTIONS = `vaultplan serves plans written as folders of markdown notes (vaults): one note per step, the edges under each note's "## Next".
Walk a plan one note at a time: plan_next gives the note to work (step.node) and a key; plan_finish hands in the output (and a choice among step.conditions) and returns the next note. A note with judge: human waits for a person: plan_decide records their choice, then plan_next returns the next note.
People may edit the notes while you work; every call reads the vault again. The prompt run_plan explains the walk.`

/**
 * An MCP server for the vaults under `options.root`: the plan tools
 * (plan_list, plan_validate, plan_create, plan_status, plan_next,
 * plan_finish, plan_decide, plan_graph, plan_fork), the ledger's and
 * plan_search, every note and trace as a
 * subscribable resource, and the prompt `run_plan`. It keeps no state but
 * its subscriptions and what it handed the session's agent (so a step
 * result lists an older output once, and the claims it took): every call
 * reads the vault. Connect it to one transport; `close()` ends the
 * connection, stops the file watchers and releases the session's live
 * claims (as the transport closing does), so the next session takes them.
 */
export function createMcpServer(options: McpServerOptions): { server: McpServer; close(): Promise<void> } {
  const server = new McpServer({ name: 'vaultplan', version: options.version }, { capabilities: { logging: {} }, instructions: INSTRUCTIONS })
  const resources = serveResources(server.server, options.root)
  registerPlanTools(server, { root: options.root, svgTimeoutMs: options.svgTimeoutMs, checks: options.checks })
  // One agent per session (docs/stepping.md, several agents): two sessions of one program are two agents, each with its own claims.
  const id = randomBytes(3).toString('hex')
  const agent = () => options.agent ?? `${server.server.getClientVersion()?.name ?? 'client'}-${id}`
  // What the session was handed: an older output once, and the claims its end lets go of.
  const session = new SessionClaims()
  const claims = { agent, ...(options.leaseMs !== undefined && { leaseMs: options.leaseMs }), handed: new Handed(), session }
  registerStepTools(server, { root: options.root, checks: options.checks, maxSteps: options.maxSteps, ...claims })
  registerHandsTools(server, { root: options.root, checks: options.checks, ...claims })
  registerMemoryTools(server, { root: options.root })
  registerProposeTools(server, { root: options.root })
  registerForkTool(server, { root: options.root })
  // The SDK lists each tool with `execution: { taskSupport: 'forbidden' }`, which a client assumes when it is absent: left out,
  // as every turn pays for tools/list. (A private field: on an SDK without it, the tools keep the field.)
  const registered: Record<string, { execution?: unknown }> = server['_registeredTools'] ?? {}
  for (const tool of Object.values(registered)) delete tool.execution
  server.registerPrompt(
    'run_plan',
    {
      title: 'Walk a plan vault',
      description: 'How to walk the plan in a vault with plan_next and plan_finish, one note at a time, and plan_decide for notes a person decides.',
      argsSchema: { vault: z.string().describe('the vault folder, relative to the root (plan_list shows them)') },
    },
    ({ vault }) => ({ messages: [{ role: 'user', content: { type: 'text', text: runPlanPrompt(vault) } }] }),
  )
  // The session ends (the client closed it, stdin ended, SIGTERM): its claims are let go of, so the next session takes them at once.
  let released: Promise<void> | undefined
  const release = () => (released ??= session.release())
  const previous = server.server.onclose
  server.server.onclose = () => {
    resources.close()
    void release()
    previous?.()
  }
  return {
    server,
    close: async () => {
      resources.close()
      // The connection first: a call under way (a check plan_finish runs) is ended with it, and lets go of the vault's lock.
      await server.close()
      await release()
    },
  }
}

/** The text of the `run_plan` prompt for a vault. */
export function runPlanPrompt(vault: string): string {
  const name = JSON.stringify(vault)
  return `Walk the plan in the vault ${name} to its end, one note at a time.

1. Call plan_next with {"vault": ${name}} (add "query": what the run is for, when the plan has not run yet). It answers { step }.
2. While step.kind is "work":
   - Do what step.node.body asks (step.node.title says the goal; use only step.node.tools when it lists any). step.outputs holds the previous hop's output and a person's new feedback (marked "feedback") in full, and older outputs by "uri" with a preview, each listed once in a session (plan_next lists them again): read a resource when you need it; a "more" field names the part of a long text to read next.
   - Call plan_finish with {"vault": ${name}, "key": step.key, "output": what you produced}. When step has conditions, add "choice": the one condition that holds for your output, exactly as written there ("next" means the plain way on). plan_finish answers with the next step, already claimed: go on with it.
3. step.kind "waiting": a person decides the note (its judge is human). Show them the note and its choices, then call plan_decide with {"vault": ${name}, "node", "edge": their choice, "feedback": their words, if any}, and plan_next to take the note that follows. Do not decide for them.
4. step.kind "completed": the run is done; report step.output. "stopped": a budget ran out; report step.reason and step.todo, and stop.

If a call answers an error, read its todo: it names the call that goes on (a stale key: the pending step is in the error's data; a bad choice: pick one of the listed ones). If you lost an answer, repeat the call: plan_next returns the same step, and plan_finish with an output it saved answers the current step. The notes are the plan: a person may edit them in their notes app while you work, and every call reads them again.`
}
