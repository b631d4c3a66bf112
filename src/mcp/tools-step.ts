import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { decideNote } from '../run/decide/decide.js'
import { completeStep, nextStep } from '../run/entry/stepping.js'
import type { Step, StepCallOptions } from '../run/entry/stepping.js'

import { readTrace } from '../store/trace.js'
import { toolArgs, vaultArg, WRITES } from './args.js'
import { vaultPath } from './paths.js'
import { readRunStatus } from '../run/read/run-status.js'
import { afterDecision } from './next-words.js'
import { guarded, ok, refusal } from './results.js'
import { viewStep } from './step-view.js'
import { earlierSession, readyBeside } from './beside-step.js'
import { askInClient, type Answered } from './elicit.js'
import type { ToolContext } from './tools-plan.js'

/** Registers the tools that walk a plan one note at a time: plan_next, plan_finish, plan_decide. */
export function registerStepTools(server: McpServer, context: ToolContext): void {
  // The waits this session asked a person about in the client: each is asked once.
  const askedOnce = new Set<string>()
  server.registerTool(
    'plan_next',
    {
      description:
        'Returns { step }: kind "work" is your note to work (step.node: title, body, tools, role) with `key`, `conditions` (the valid `choice` values) and earlier outputs; asking again returns the same step; `ready` lists the other notes ready now. Else "waiting" (plan_decide), "busy" (other agents hold all ready work), "completed" or "stopped". A new run needs `query`.',
      inputSchema: toolArgs('plan_next', {
        vault: vaultArg,
        query: z.string().optional().describe('what the run is for; needed to start a run'),
        fresh: z.boolean().optional().describe('start a new run; the old one is archived'),
        maxSteps: z.number().int().min(1).max(1_000_000).optional().describe('step budget of the run, recorded with it'),
        agent: agentArg,
      }),
      annotations: { ...WRITES, idempotentHint: true },
    },
    async ({ vault, query, fresh, maxSteps, agent }, extra) =>
      guarded(context.root, { tool: 'plan_next', vault }, async () => {
        const path = await vaultPath(context.root, vault)
        const options: StepCallOptions = {
          ...stepOptions(context, agent),
          // The call cancelled or its session ended: what it runs (a judge's call) ends with it.
          signal: extra.signal,
          ...(query !== undefined && { query }),
          ...(fresh !== undefined && { fresh }),
          ...(maxSteps !== undefined && { maxSteps }),
        }
        let step
        try {
          step = await nextStep(path, options)
        } catch (error) {
          // nextStep throws a TypeError (a programmer's mistake in code) for a new run without a query; here it is the client's.
          if (error instanceof TypeError && query === undefined && (fresh === true || !(await readTrace(path)))) {
            return refusal(
              'query-needed',
              `\`${vault}\` has not run yet${fresh ? ' (`fresh: true` starts a new one)' : ''}, so a run starts here and needs \`query\`.`,
            )
          }
          throw error
        }
        const answered = await askInClient(server.server, extra.requestId, path, step, options, askedOnce)
        context.session?.took(path, options.agent, answered.step)
        // Asked again for a step it was handed, the agent lost it (its context): the whole view. A new step (after a
        // person's decision) leaves out, as plan_finish does, what the session handed already.
        if (answered.step.kind === 'work' && context.handed?.has(vault, `step\n${answered.step.key}`)) context.handed.forget(vault)
        const view = await viewStep(answered.step, vault, path, context.checks, context.handed)
        // A session that was killed left its claim to wait for its lease: its client's next session is told how to take it back.
        if (view.step.kind === 'busy') view.step.todo += earlierSession(view.step.claims, options.agent)
        // The frontier beside the step: what else is ready now, ids only.
        const ready = await readyBeside(path, answered.step, options.agent)
        return ok({ ...view, ...(ready.length > 0 && { ready }), ...agentOnce(context, vault, options.agent), ...decidedOf(answered) })
      }),
  )

  server.registerTool(
    'plan_finish',
    {
      description:
        "Saves `output` for step `key`, marks the note done, follows an edge and returns { step }, the next one, claimed. `choice`: one of the step's `conditions`; without it a configured model judges. Repeating a saved call answers the current step.",
      inputSchema: toolArgs('plan_finish', {
        vault: vaultArg,
        key: z.string().describe('step.key of the step worked'),
        output: z.string().describe('what you produced'),
        choice: z.string().optional().describe("one of the step's conditions"),
        agent: agentArg,
      }),
      annotations: WRITES,
    },
    async ({ vault, key, output, choice, agent }, extra) =>
      guarded(context.root, { tool: 'plan_finish', vault }, async () => {
        const path = await vaultPath(context.root, vault)
        // The call cancelled or its session ended: its checks' process groups are killed, its model calls stopped.
        const options = { ...stepOptions(context, agent), signal: extra.signal }
        const step: Step = await completeStep(path, key, choice === undefined ? { output } : { output, choice }, options)
        context.session?.took(path, options.agent, step)
        if (step.saved) {
          // The answer to a call that was saved got lost (a dropped connection, a lost context): the same call answers where the run is now.
          context.handed?.forget(vault)
          const now = await viewStep(step, vault, path, context.checks, context.handed)
          return ok({
            ...now,
            ...agentOnce(context, vault, options.agent),
            saved: true,
            note: 'This output of `key` was saved by an earlier call: the step above is where the run is now.',
          })
        }
        const answered = await askInClient(server.server, extra.requestId, path, step, options, askedOnce)
        context.session?.took(path, options.agent, answered.step)
        const result = {
          ...(await viewStep(answered.step, vault, path, context.checks, context.handed)),
          ...agentOnce(context, vault, options.agent),
          ...decidedOf(answered),
        }
        const node = key.slice(key.indexOf(':') + 1, key.lastIndexOf(':'))
        const waits = step.kind === 'waiting' && step.waiting.some((note) => note.node === node || note.node.endsWith(`/${node}`))
        if (choice !== undefined && waits) return ok({ ...result, note: `\`choice\` was ignored: a person decides \`${node}\` (judge: human).` })
        return ok(result)
      }),
  )

  server.registerTool(
    'plan_decide',
    {
      description:
        "Records a person's decision on a waiting note, as ticking its box would: `edge` is one of its choices; `feedback` (their words) goes on to the next note. Only for a decision a person made. Claims nothing: returns the run's `next` item, which plan_next hands out.",
      inputSchema: toolArgs('plan_decide', {
        vault: vaultArg,
        node: z.string().describe('step.waiting[].node'),
        edge: z.string().describe("one of the note's choices"),
        feedback: z.string().optional().describe("the person's words"),
      }),
      annotations: WRITES,
    },
    async ({ vault, node, edge, feedback }) =>
      guarded(context.root, { tool: 'plan_decide', vault }, async () => {
        const path = await vaultPath(context.root, vault)
        const { unticked } = await decideNote(path, node, feedback === undefined ? { edge } : { edge, feedback })
        // Boxes a person ticked by hand beside this one: said, so the agent can tell them which it unticked.
        const decided = unticked.length > 0 ? { node, edge, unticked } : { node, edge }
        // A person's decision claims nothing (no session's agent works it because it relayed the decision): the run's
        // next item, as the snapshot says it, for whichever agent asks next.
        const status = await readRunStatus(path, { hops: 0 })
        return ok({ vault, decided, next: status.next, todo: afterDecision(status, vault) })
      }),
  )
}

/** A decision a person made in the client, named in the result as `decided`. */
function decidedOf(answered: Answered): { decided?: Answered['decided'] } {
  return answered.decided ? { decided: answered.decided } : {}
}

/**
 * The agent a session works as, named in its first result in a vault (and
 * again after plan_next gave an agent that lost its context the whole view):
 * a client that reconnects passes it as `agent` to take its claims back.
 */
export function agentOnce(context: ToolContext, vault: string, agent: string | undefined): { agent?: string } {
  if (agent === undefined) return {}
  return context.handed === undefined || context.handed.once(vault, `agent\n${agent}`) ? { agent } : {}
}

/** The `agent` argument of the calls that claim: a name of your own, to take a claim back from an earlier session. */
export const agentArg = z.string().min(1).optional().describe("default: this session's")

/**
 * What every step call of the server runs with: the checks its operator
 * defined, and none else, as the session's agent (or the one named); the
 * server's `--max-steps` for a run that records no budget.
 */
export function stepOptions(context: ToolContext, agent?: string): StepCallOptions {
  const name = agent ?? context.agent?.()
  return {
    ...(context.checks && { checks: context.checks }),
    ...(name !== undefined && { agent: name }),
    ...(context.leaseMs !== undefined && { leaseMs: context.leaseMs }),
    ...(context.maxSteps !== undefined && { fallbackMaxSteps: context.maxSteps }),
  }
}
