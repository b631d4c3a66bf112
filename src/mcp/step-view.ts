import type { CheckDefinition } from '../run/core/checks.js'
import { join } from 'node:path'
import { waitsForPerson } from '../core/knobs.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import type { Step, StopInfo, WaitingNote } from '../run/entry/stepping.js'
import type { WorkItem } from '../run/core/claims.js'
import type { StepOutput } from '../core/types.js'
import { resourceUri } from './paths.js'
import { clipped, type Clipped } from './parts.js'
import { LIMITS } from './results.js'
import { retryAfterOf } from './beside-step.js'
import { personChoices } from '../core/knobs.js'

/** An output of the run as a step shows it: the newest hop's (and new feedback) in full, older ones by `uri` and a preview. */
export interface OutputView {
  node: string
  visit: number
  /** Set on what a person wrote under the note's `## Feedback` at their decision (not a worker's output). */
  feedback?: true
  /** The whole text (clipped at a part, see `more`). */
  output?: string
  /** An older output's start; read the rest at `uri`. */
  preview?: string
  uri?: string
  more?: string
}

/** The note of a `work` step as an agent works it: the library's `PlanNode`, trimmed (its file is in `uri`; `judge` and `terminal` only when they matter). */
export interface NodeView {
  id: string
  /** Left out when it is the note's id (a note with no `# Title`). */
  title?: string
  /** The note's resource, when its body is clipped (`more` names it too). */
  uri?: string
  body: string
  more?: string
  tools?: string[]
  role?: string
  /** Set when a person decides where the note goes. */
  judge?: 'human'
  /** Set on the note whose work ends the whole run: its output is the final answer. */
  terminal?: true
}

/** A `Step` as the MCP tools hand it on, with the `vault` it is of and a `todo` naming the next call. */
export type StepView =
  | {
      kind: 'work'
      vault: string
      key: string
      step: number
      visit: number
      maxVisits: number
      plan?: string
      /** The run's query: in plan_next's answer, and once a session after. */
      query?: string
      node: NodeView
      /** The valid `choice` values, when the agent chooses (not for a single way out, a last note or a person's). */
      conditions?: string[]
      checks?: { name: string; command: string[] }[]
      outputs: OutputView[]
      /** Older outputs not listed: read them in the trace (`trace` resource). */
      earlierOutputs?: number
      todo: string
    }
  | { kind: 'waiting'; vault: string; runId?: string; waiting: (Omit<WaitingNote, 'file'> & { uri: string })[]; reason: string; todo: string }
  | { kind: 'completed'; vault: string; runId?: string; node: string; output: string; more?: string; todo: string }
  | { kind: 'stopped'; vault: string; runId?: string; stop: StopInfo; reason: string; todo: string }
  | {
      kind: 'busy'
      vault: string
      runId?: string
      claims: WorkItem[]
      /** Seconds until the earliest lease of `claims` ends: a claim whose lease ended can be taken. */
      retryAfter?: number
      todo: string
    }

/** What `plan_next`, `plan_finish` and `plan_decide` answer. */
export interface StepResult {
  [key: string]: unknown
  step: StepView
}

/**
 * What one MCP session has handed its agent: an older output is listed
 * (by `uri` and a preview) once, and a run's query is said once, so a walk
 * does not pay for them again at every hop. `plan_next` is where an agent
 * that lost its context starts again: it forgets what was handed for its
 * vault and answers the whole view.
 */
export class Handed {
  private readonly handed = new Set<string>()

  /** Whether `what` of the vault's run is new to the session; it is handed from now on. */
  once(vault: string, what: string): boolean {
    if (this.has(vault, what)) return false
    this.handed.add(`${vault}\n${what}`)
    return true
  }

  /** Whether `what` of the vault's run was handed already. */
  has(vault: string, what: string): boolean {
    return this.handed.has(`${vault}\n${what}`)
  }

  /** Forgets what was handed for the vault: the next view is whole. */
  forget(vault: string): void {
    for (const key of this.handed) if (key.startsWith(`${vault}\n`)) this.handed.delete(key)
  }
}

/**
 * A `Step` as the MCP tools hand it on, under the library's field names
 * (`step.node.id`, `step.conditions`): everything needed to work the note
 * without another call (title, body, tools, role, visit and budget, the
 * conditions to choose from, the key), the previous hop's output and new
 * feedback in full, older outputs by resource `uri` with a preview (with
 * `handed`, only those the session has not handed yet), long texts clipped
 * at a part with the URI of the next part, and a `todo` sentence naming
 * the next call. Defaults are left out: `judge` unless a person decides,
 * `terminal` unless the note is the last, `conditions` unless the agent
 * chooses.
 *
 * @param vault - the vault as the client named it (relative to the root)
 * @param path - the vault's real path
 * @param handed - what this session already handed its agent; without it, the whole view
 */
export async function viewStep(
  step: Step,
  vault: string,
  path: string,
  checks: Record<string, CheckDefinition> = {},
  handed: Handed = new Handed(),
): Promise<StepResult> {
  switch (step.kind) {
    case 'work': {
      const { node } = step
      const inPlan = step.plan === undefined ? '' : `${step.plan}/`
      const file = `${inPlan}${node.file ?? `${node.id}.md`}`
      const uri = resourceUri(vault, file)
      // The run of the step's own vault (a subplan's is in its key): a new visit of a subplan's note starts a new one.
      const own = step.key.slice(0, step.key.indexOf(':'))
      const { outputs, earlier } = await viewOutputs(step.outputs, vault, path, inPlan, {
        handed,
        key: (output) => `${own}\n${inPlan}${output.node}\n${output.visit}\n${output.feedback}`,
      })
      // The run's last note: a subplan's last note is not, when the run goes on above it.
      const terminal = step.terminal
      const person = waitsForPerson(node)
      const labels = step.conditions.filter((label) => label !== 'next')
      const todo = person
        ? 'Work it, then plan_finish with `key` and `output`: a person decides where it goes.'
        : terminal
          ? 'The last note: work it, then plan_finish with `key` and `output` (the final answer).'
          : labels.length === 0
            ? 'Work it, then plan_finish with `key` and `output`.'
            : `Work it, then plan_finish with \`key\`, \`output\` and \`choice\`: the condition that holds${step.conditions.includes('next') ? ' ("next" when none does)' : ''}.`
      // The checks the server runs after plan_finish: said up front, so the agent knows what decides `passed` / `failed`.
      const checking = (node.check ?? []).map((name) => ({ name, command: checks[name]?.command ?? [] }))
      const checked =
        checking.length === 0
          ? ''
          : ` Then the server runs ${checking.map((check) => `\`${check.command.join(' ')}\``).join(', ')}: they decide \`passed\` / \`failed\`, not your choice.`
      const body = await clipped(node.body, LIMITS.body, uri, join(path, file))
      // Handed to this session: asked for again, it is the whole view (the agent lost it).
      handed.once(vault, `step\n${step.key}`)
      const view: StepView = {
        kind: 'work',
        vault,
        key: step.key,
        step: step.step,
        visit: step.visit,
        maxVisits: node.maxVisits,
        ...(step.plan === undefined ? {} : { plan: step.plan }),
        // Said once a session: a subplan's run has a query of its own (what its note asks), the top run's is said again after it.
        ...(handed.once(vault, `query\n${step.query}`) ? { query: step.query } : {}),
        node: {
          id: node.id,
          ...(node.title === node.id || node.title === `${inPlan}${node.id}` ? {} : { title: node.title }),
          ...(body.more === undefined ? {} : { uri, more: body.more }),
          body: body.text,
          ...(node.tools ? { tools: node.tools } : {}),
          ...(node.role === undefined ? {} : { role: node.role }),
          ...(person ? { judge: 'human' as const } : {}),
          ...(terminal ? { terminal: true as const } : {}),
        },
        ...(labels.length === 0 ? {} : { conditions: step.conditions }),
        ...(checking.length === 0 ? {} : { checks: checking }),
        outputs,
        ...(earlier === 0 ? {} : { earlierOutputs: earlier }),
        todo: todo + checked,
      }
      return { step: view }
    }
    case 'waiting':
      return {
        step: {
          kind: 'waiting',
          vault,
          ...runIdOf(step),
          // A person's choices: a deadline takes the `timeout` edge, nobody ticks it.
          waiting: step.waiting.map(({ file, ...note }) => ({ ...note, choices: personChoices(note), uri: resourceUri(vault, file) })),
          ...waitingWords(step.waiting),
        },
      }
    case 'completed': {
      const final = `${TRACE_FOLDER}/final.md`
      const output = await clipped(step.output, LIMITS.output, resourceUri(vault, final), join(path, final))
      return {
        step: {
          kind: 'completed',
          vault,
          ...runIdOf(step),
          node: step.node,
          output: output.text,
          ...moreOf(output),
          todo: 'Nothing to do: the run is complete.',
        },
      }
    }
    case 'stopped': {
      const { stop } = step
      const words =
        stop.budget === 'maxSteps'
          ? {
              reason: `The run used its step budget (\`maxSteps\`) at \`${stop.node}\`.`,
              todo: 'Call plan_next with a larger `maxSteps` to go on.',
            }
          : {
              reason: `\`${stop.node}\` used its visits (its \`max_visits\`)${stop.loop.length > 1 ? `, going round ${stop.loop.map((id) => `\`${id}\``).join(' -> ')}` : ''}.`,
              todo: `Ask a person to raise \`max_visits\` in the note \`${stop.node}\`, then call plan_next.`,
            }
      return { step: { kind: 'stopped', vault, ...runIdOf(step), stop, ...words } }
    }
    case 'busy': {
      const retryAfter = retryAfterOf(step.claims, Date.now())
      return {
        step: {
          kind: 'busy',
          vault,
          runId: step.runId,
          claims: step.claims.map((item) => ({ ...item })),
          ...(retryAfter === undefined ? {} : { retryAfter }),
          todo:
            retryAfter === undefined
              ? 'Other agents hold every note ready now: call plan_next again once one of them finishes.'
              : `Other agents hold every note ready now: call plan_next again in ${retryAfter} s, when the first lease ends (or sooner, once one of them finishes).`,
        },
      }
    }
  }
}

/**
 * Why a step waits and the call that goes on, by what it waits for: a
 * proposal sent back to the agent (plan_propose), a step an agent blocked
 * (unblock), a person's decision (plan_decide).
 */
function waitingWords(waiting: readonly WaitingNote[]): { reason: string; todo: string } {
  const sentBack = waiting.find((note) => note.kind === 'proposal' && note.choices.length === 0)
  if (sentBack)
    return {
      reason: `A person sent the proposal back for a revision${sentBack.reason ? `: ${sentBack.reason.replace(/\.$/, '')}` : ''}.`,
      todo: 'Call plan_propose on this vault with the same `query` and your next document: it becomes the next version, for the person to decide again.',
    }
  const names = waiting.map((note) => `\`${note.node}\`${note.kind === 'blocked' ? ` (blocked${note.reason ? `: ${note.reason}` : ''})` : ''}`).join(', ')
  const blocked = waiting.some((note) => note.kind === 'blocked')
  return {
    reason: `${names} ${waiting.length === 1 ? 'waits' : 'wait'} for a person to decide.`,
    todo:
      'Ask the person, then plan_decide with `node`, `edge` (one of its `choices`) and their words as `feedback`.' +
      (blocked ? ' A blocked step has the one choice `unblock`.' : ''),
  }
}

/** The run's id, left out while no run exists yet (a proposal waiting for a person). */
function runIdOf(step: Step): { runId?: string } {
  return step.runId === '' ? {} : { runId: step.runId }
}

function moreOf(clip: Clipped): { more?: string } {
  return clip.more === undefined ? {} : { more: clip.more }
}

/**
 * The outputs of a step, newest first: the previous hop's output and the
 * feedback handed on with it in full (clipped at a part), then at most
 * `LIMITS.olderOutputs` older ones that are `fresh` to the session, by
 * `uri` with a preview; `earlier` counts the older ones not listed.
 */
async function viewOutputs(
  outputs: readonly StepOutput[],
  vault: string,
  path: string,
  inPlan: string,
  session: { handed: Handed; key: (output: { node: string; visit: number; feedback: boolean }) => string },
): Promise<{ outputs: OutputView[]; earlier: number }> {
  const { handed, key } = session
  // A person's feedback (a decision's, an unblock's) is labelled so by the library.
  const labelled = outputs.map((output) => ({ ...output, feedback: output.feedback === true }))
  let newest = labelled.length - 1
  while (newest > 0 && labelled[newest]!.feedback) newest--
  const recent = labelled.slice(Math.max(0, newest))
  const older = labelled
    .slice(0, Math.max(0, newest))
    .filter((output) => !handed.has(vault, key(output)))
    .slice(-LIMITS.olderOutputs)
  for (const output of [...recent, ...older]) handed.once(vault, key(output))
  const where = (output: { node: string; visit: number; feedback: boolean; file?: string | undefined }) => {
    // Feedback stands in the decided note; an output in its output note (the library names it: the trace is not read again).
    if (output.feedback) return { uri: resourceUri(vault, `${inPlan}${output.node}.md`), file: join(path, `${inPlan}${output.node}.md`) }
    const file = `${inPlan}${TRACE_FOLDER}/${output.file ?? 'trace.md'}`
    return { uri: resourceUri(vault, file), file: join(path, file) }
  }
  const shown: OutputView[] = []
  for (const output of recent.reverse()) {
    const label = output.feedback ? { feedback: true as const } : {}
    const { uri, file } = where(output)
    const clip = await clipped(output.output, LIMITS.output, uri, file)
    shown.push({ node: output.node, visit: output.visit, ...label, output: clip.text, ...moreOf(clip) })
  }
  for (const output of older.reverse()) {
    const label = output.feedback ? { feedback: true as const } : {}
    const preview = output.output.length <= LIMITS.preview ? output.output : `${output.output.slice(0, LIMITS.preview)}…`
    shown.push({ node: output.node, visit: output.visit, ...label, preview, uri: where(output).uri })
  }
  return { outputs: shown, earlier: Math.max(0, newest - older.length) }
}
