import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import { decide } from '../run/decide/decide.js'
import { nextStep, type Step, type StepOptions } from '../run/entry/stepping.js'
import { personChoices } from '../core/knobs.js'

/** How long a person is asked in the client: clients time a tool call out at 60 s. */
const ASK_MS = 50_000

/** What asking in the client decided: the decision as `decide` recorded it, and the step after it. */
export interface Answered {
  step: Step
  decided?: { node: string; edge: string; feedback?: string }
}

/**
 * Asks the person in the client (MCP elicitation), where the client declares
 * it, about the first note a waiting step waits on for a person (a
 * `judge: human` note, a blocked step): its choices and a feedback field.
 * Their answer is recorded as `decide` records it, and the step after it is
 * returned, so a person decides without leaving their coding agent. Each
 * wait is asked once (`asked` remembers it for the session); without
 * elicitation, a declined or unanswered question, or anything else to wait
 * for, the step is returned as it is.
 */
export async function askInClient(
  server: Server,
  requestId: string | number,
  path: string,
  step: Step,
  options: StepOptions,
  asked: Set<string>,
): Promise<Answered> {
  if (step.kind !== 'waiting' || !server.getClientCapabilities()?.elicitation) return { step }
  const note = step.waiting.find((each) => (each.kind === 'human' || each.kind === 'blocked') && each.choices.length > 0)
  const wait = note && `${step.runId}\n${note.node}\n${note.since ?? ''}`
  if (!note || !wait || asked.has(wait)) return { step }
  asked.add(wait)
  const question =
    note.kind === 'blocked'
      ? `An agent is stuck on \`${note.node}\`${note.reason ? `: ${note.reason}` : ''}. Unblock it (your feedback goes to the agent)?`
      : `\`${note.node}\` waits for your decision: choose one of ${personChoices(note)
          .map((choice) => `\`${choice}\``)
          .join(', ')}.`
  let answer
  try {
    answer = await server.elicitInput(
      {
        mode: 'form',
        message: question,
        requestedSchema: {
          type: 'object',
          properties: {
            choice: { type: 'string', title: 'Choice', enum: personChoices(note) },
            feedback: { type: 'string', title: 'Feedback', description: 'your words for the next step (optional)' },
          },
          required: ['choice'],
        },
      },
      { relatedRequestId: requestId, timeout: ASK_MS },
    )
  } catch {
    // No answer in time, a client that cannot show the form: the step waits, as without elicitation.
    return { step }
  }
  const choice = answer.action === 'accept' ? answer.content?.choice : undefined
  if (typeof choice !== 'string') return { step }
  const feedback = typeof answer.content?.feedback === 'string' && answer.content.feedback.trim() !== '' ? answer.content.feedback : undefined
  await decide(path, note.node, feedback === undefined ? { edge: choice } : { edge: choice, feedback })
  return { step: await nextStep(path, options), decided: { node: note.node, edge: choice, ...(feedback !== undefined && { feedback }) } }
}
