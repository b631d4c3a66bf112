import type { CheckDefinition } from '../run/checks.js'
import { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { serveResources } from './resources.js'
import { registerPlanTools } from './tools-plan.js'
import { registerStepTools } from './tools-step.js'
import { registerMemoryTools } from './tools-memory.js'
import { registerProposeTools } from './tools-propose.js'

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
}

const INSTRUCTIONS = `vaultplan serves plans written as folders of markdown notes (vaults): one note per step, the edges under each note's "## Next".
Walk a plan one note at a time: plan_next gives the note to work and a key; plan_finish hands in the output (and a choice among the note's conditions) and returns the next note. A note with judge: human waits for a person: plan_decide records their choice.
People may edit the notes while you work; every call reads the vault again. The prompt run_plan explains the walk.`

/**
 * An MCP server for the vaults under `options.root`: the plan tools
 * (plan_list, plan_validate, plan_create, plan_status, plan_next,
 * plan_finish, plan_decide, plan_graph), every note and trace as a
 * subscribable resource, and the prompt `run_plan`. It keeps no state but
 * its subscriptions: every call reads the vault. Connect it to one
 * transport; `close()` ends the connection and stops the file watchers.
 */
export function createMcpServer(options: McpServerOptions): { server: McpServer; close(): Promise<void> } {
  const server = new McpServer({ name: 'vaultplan', version: options.version }, { capabilities: { logging: {} }, instructions: INSTRUCTIONS })
  const resources = serveResources(server.server, options.root)
  registerPlanTools(server, { root: options.root, svgTimeoutMs: options.svgTimeoutMs, checks: options.checks })
  registerStepTools(server, { root: options.root, checks: options.checks })
  registerMemoryTools(server, { root: options.root })
  registerProposeTools(server, { root: options.root })
  server.registerPrompt(
    'run_plan',
    {
      title: 'Walk a plan vault',
      description: 'How to walk the plan in a vault with plan_next and plan_finish, one note at a time, and plan_decide for notes a person decides.',
      argsSchema: { vault: z.string().describe('the vault folder, relative to the root (plan_list shows them)') },
    },
    ({ vault }) => ({ messages: [{ role: 'user', content: { type: 'text', text: runPlanPrompt(vault) } }] }),
  )
  const previous = server.server.onclose
  server.server.onclose = () => {
    resources.close()
    previous?.()
  }
  return {
    server,
    close: async () => {
      resources.close()
      await server.close()
    },
  }
}

/** The text of the `run_plan` prompt for a vault. */
export function runPlanPrompt(vault: string): string {
  const name = JSON.stringify(vault)
  return `Walk the plan in the vault ${name} to its end, one note at a time.

1. Call plan_next with {"vault": ${name}} (add "query": what the run is for, when the plan has not run yet). It answers { step }.
2. While step.kind is "work":
   - Do what step.note.body asks (its title says the goal; use only step.note.tools when it lists any). step.outputs holds the freshest outputs of earlier notes, newest first; read a resource named in a "more" field when you need the rest.
   - Call plan_finish with {"vault": ${name}, "key": step.key, "output": what you produced}. When step.conditions is not empty, add "choice": the one condition that holds for your output, exactly as written there ("next" means the plain way on). plan_finish answers with the next step, already claimed: go on with it.
3. step.kind "waiting": a person decides the note (its judge is human). Show them the note and its choices, then call plan_decide with {"vault": ${name}, "node", "edge": their choice, "feedback": their words, if any}, and plan_next again. Do not decide for them.
4. step.kind "completed": the run is done; report step.output. "stopped": a budget ran out; report step.reason and stop.

If a call answers an error, read it: it says what to do (a stale key: call plan_next for the current step; a bad choice: pick one of the listed ones). The notes are the plan: a person may edit them in their notes app while you work, and every call reads them again.`
}
