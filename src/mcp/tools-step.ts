import type { McpServer } from '@modelcontextprotocol/sdk/server/mcp.js'
import { z } from 'zod'
import { decide } from '../run/decide.js'
import { completeStep, nextStep } from '../run/stepping.js'
import type { StepOptions } from '../run/stepping.js'
import { readTrace } from '../store/trace.js'
import { vaultPath } from './paths.js'
import { guarded, ok, orRefusal, refusal } from './results.js'
import { stepResultSchema, viewStep } from './step-view.js'
import { vaultArg, type ToolContext } from './tools-plan.js'

/** Registers the tools that walk a plan one note at a time: plan_next, plan_finish, plan_decide. */
export function registerStepTools(server: McpServer, context: ToolContext): void {
  server.registerTool(
    'plan_next',
    {
      title: 'The note to work now',
      description: [
        'Returns { step }: what the plan in the vault asks of you now. kind "work": the note to work, ' +
          'claimed for you, with everything to work it: note.title and note.body (the task), note.tools ' +
          'and note.role, visit and maxVisits (its budget), conditions (the valid `choice` values for ' +
          'plan_finish), the freshest outputs of the run, and `key`.',
        'Work it, then call plan_finish with the key. Until then plan_next returns the same step and counts nothing again, so call it whenever you lost track.',
        'Other kinds: "waiting" (a person decides a note: plan_decide), "completed" (the final output), "stopped" (a budget ran out).',
        'The first call on a vault that has not run needs `query`: what the run is for.',
      ].join('\n'),
      inputSchema: { vault: vaultArg, query: z.string().optional().describe('what the run is for; needed to start a run, left out to go on with one') },
      outputSchema: orRefusal(stepResultSchema),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: true, openWorldHint: false },
    },
    async ({ vault, query }) =>
      guarded(context.root, async () => {
        const path = await vaultPath(context.root, vault)
        const options: StepOptions = query === undefined ? stepOptions(context) : { ...stepOptions(context), query }
        let step
        try {
          step = await nextStep(path, options)
        } catch (error) {
          // nextStep throws a TypeError (a programmer's mistake in code) for a new run without a query; here it is the client's.
          if (error instanceof TypeError && query === undefined && !(await readTrace(path))) {
            return refusal('query-needed', `\`${vault}\` has not run yet, so a run starts here and needs \`query\`.`)
          }
          throw error
        }
        return ok(await viewStep(step, vault, path, context.checks))
      }),
  )

  server.registerTool(
    'plan_finish',
    {
      title: 'Hand in the work of a note',
      description: [
        'Completes the step plan_next returned: saves `output` in the vault, marks the note done and follows an edge, then returns { step }, the next note, already claimed (so one call per hop).',
        "`choice` picks the edge: one of the step's `conditions` (a condition label as written, `next` " +
          'for the plain way on, or a target note). Give it when conditions are listed; without it a ' +
          'configured model judges. A terminal note takes no choice. A note decided by a person ends ' +
          'up waiting for them.',
        '`key` must be the key of the pending step; an old key is refused and nothing is written.',
      ].join('\n'),
      inputSchema: {
        vault: vaultArg,
        key: z.string().describe('step.key from plan_next or the previous plan_finish'),
        output: z.string().describe('what you produced for the note'),
        choice: z.string().optional().describe("one of the step's conditions"),
      },
      outputSchema: orRefusal(stepResultSchema),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async ({ vault, key, output, choice }) =>
      guarded(context.root, async () => {
        const path = await vaultPath(context.root, vault)
        const result = choice === undefined ? { output } : { output, choice }
        return ok(await viewStep(await completeStep(path, key, { ...result }, stepOptions(context)), vault, path, context.checks))
      }),
  )

  server.registerTool(
    'plan_decide',
    {
      title: "Record a person's decision",
      description: [
        'Decides a note that waits for a person (judge: human), as ticking a box under its ## Next ' +
          'would: `edge` names one of its edges by condition label, target note, or `next`; `feedback` ' +
          "is added under the note's ## Feedback and handed to the next note.",
        'Only for a decision a person made: ask them first. Then call plan_next to go on.',
      ].join('\n'),
      inputSchema: {
        vault: vaultArg,
        node: z.string().describe('the waiting note, as step.waiting[].node names it'),
        edge: z.string().describe("one of the note's choices"),
        feedback: z.string().optional().describe("the person's words, if any"),
      },
      outputSchema: orRefusal(z.object({ vault: z.string(), node: z.string(), edge: z.string(), feedback: z.string().optional(), todo: z.string() })),
      annotations: { readOnlyHint: false, destructiveHint: false, idempotentHint: false, openWorldHint: false },
    },
    async ({ vault, node, edge, feedback }) =>
      guarded(context.root, async () => {
        const path = await vaultPath(context.root, vault)
        await decide(path, node, feedback === undefined ? { edge } : { edge, feedback })
        return ok({
          vault,
          node,
          edge,
          ...(feedback === undefined ? {} : { feedback }),
          todo: 'Call plan_next to go on along the chosen edge.',
        })
      }),
  )
}

/** What every step call of the server runs with: the checks its operator defined, and none else. */
function stepOptions(context: ToolContext): StepOptions {
  return context.checks ? { checks: context.checks } : {}
}
