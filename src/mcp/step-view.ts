import type { CheckDefinition } from '../run/checks.js'
import { readdir } from 'node:fs/promises'
import { waitsForPerson } from '../core/knobs.js'
import { z } from 'zod'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import type { Step } from '../run/stepping.js'
import { readOutput } from '../store/output-note.js'
import { tracePaths } from '../store/trace.js'
import { resourceUri } from './paths.js'
import { LIMITS } from './results.js'

/** The folder of the output notes, inside the trace folder. */
const OUTPUTS = 'outputs'

const clippedText = {
  /** Set when the text was cut to keep the result small: how many characters are left and where to read them. */
  more: z.string().optional(),
}

const workView = z.object({
  kind: z.literal('work'),
  runId: z.string(),
  key: z.string().describe('pass it to plan_finish'),
  step: z.number().int(),
  visit: z.number().int(),
  maxVisits: z.number().int().describe('the visit budget of the note (max_visits)'),
  plan: z.string().optional().describe('the subplan folder the note belongs to, relative to the vault'),
  query: z.string(),
  note: z.object({
    id: z.string(),
    title: z.string(),
    file: z.string().describe('the note, relative to the vault'),
    uri: z.string().describe('the note as a resource'),
    body: z.string(),
    ...clippedText,
    tools: z.array(z.string()).optional().describe('the only tools to use here; absent means any'),
    role: z.string().optional(),
    judge: z.enum(['llm', 'human']),
    terminal: z.boolean(),
  }),
  conditions: z.array(z.string()).describe('the valid values of `choice` for plan_finish'),
  checks: z
    .array(z.object({ name: z.string(), command: z.array(z.string()) }))
    .optional()
    .describe('the commands the server runs after plan_finish; they decide `passed` / `failed`'),
  outputs: z
    .array(z.object({ node: z.string(), visit: z.number().int(), output: z.string(), ...clippedText }))
    .describe('the freshest outputs of the run, newest first'),
  earlierOutputs: z.number().int().describe('outputs of the run not shown'),
  todo: z.string(),
})

const waitingView = z.object({
  kind: z.literal('waiting'),
  runId: z.string(),
  waiting: z.array(
    z.object({
      node: z.string(),
      file: z.string(),
      uri: z.string(),
      choices: z.array(z.string()),
      since: z.string().optional(),
      deadline: z.string().optional().describe('when the `timeout` edge is taken, if nobody decides'),
      overdue: z.boolean().optional(),
    }),
  ),
  reason: z.string(),
  todo: z.string(),
})

const completedView = z.object({ kind: z.literal('completed'), runId: z.string(), node: z.string(), output: z.string(), ...clippedText, todo: z.string() })

const stoppedView = z.object({
  kind: z.literal('stopped'),
  runId: z.string(),
  stop: z.object({ budget: z.enum(['max_visits', 'maxSteps']), node: z.string(), visit: z.number().int(), loop: z.array(z.string()) }),
  reason: z.string(),
  todo: z.string(),
})

/**
 * The output schema of `plan_next` and `plan_finish`: `{ step }`, the step as
 * an agent works it (a top-level union as an output schema fails at call
 * time in SDK 1.32, so the union sits one level down).
 */
const busyView = z.object({
  kind: z.literal('busy'),
  runId: z.string(),
  claims: z.array(z.object({ node: z.string(), visit: z.number().int(), step: z.number().int(), plan: z.string().optional() }).passthrough()),
  todo: z.string(),
})

export const stepResultSchema = z.object({ step: z.discriminatedUnion('kind', [workView, waitingView, completedView, stoppedView, busyView]) })

/** What `plan_next` and `plan_finish` answer. */
export type StepResult = z.infer<typeof stepResultSchema>

/**
 * A `Step` as the MCP tools hand it on: everything needed to work the note
 * without another call (title, body, tools, role, visit and budget, the
 * conditions to choose from, the freshest outputs, the key), long texts
 * clipped with a pointer to the resource that holds the rest, and a `todo`
 * sentence naming the next call.
 *
 * @param vault - the vault as the client named it (relative to the root)
 * @param path - the vault's real path
 */
export async function viewStep(step: Step, vault: string, path: string, checks: Record<string, CheckDefinition> = {}): Promise<StepResult> {
  switch (step.kind) {
    case 'work': {
      const { node } = step
      const inPlan = step.plan === undefined ? '' : `${step.plan}/`
      const file = `${inPlan}${node.file ?? `${node.id}.md`}`
      const uri = resourceUri(vault, file)
      const shown = LIMITS.outputs
      const outputs = await Promise.all(
        step.outputs
          .slice(-shown)
          .reverse()
          .map(async (output) => ({ node: output.node, visit: output.visit, ...(await clipOutput(output.output, vault, path, output.node, output.visit)) })),
      )
      const terminal = node.edges.length === 0
      const labels = step.conditions.filter((label) => label !== 'next')
      const choose =
        labels.length === 0
          ? ' (it goes on along the only way out; no `choice` needed)'
          : `, and \`choice\`: the one of ${step.conditions.map((label) => JSON.stringify(label)).join(', ')} that holds${step.conditions.includes('next') ? ' ("next" when none does)' : ''}`
      const todo = waitsForPerson(node)
        ? `Work the note, then call plan_finish with \`key\` and your \`output\`; a person then decides where it goes (plan_decide, or a ticked box in the note).`
        : terminal
          ? `This is the last note: work it, then call plan_finish with \`key\` and your \`output\` (the final answer).`
          : `Work the note as its body says, then call plan_finish with \`key\`, your \`output\`${choose}.`
      // The checks the server runs after plan_finish: said up front, so the agent knows what decides `passed` / `failed`.
      const checking = (node.check ?? []).map((name) => ({ name, command: checks[name]?.command ?? [] }))
      const checked =
        checking.length === 0
          ? ''
          : ` Then the server runs ${checking.map((check) => `\`${check.command.join(' ')}\``).join(', ')}: they decide \`passed\` / \`failed\`, not your choice.`
      const view = {
        kind: 'work' as const,
        runId: step.runId,
        key: step.key,
        step: step.step,
        visit: step.visit,
        maxVisits: node.maxVisits,
        ...(step.plan === undefined ? {} : { plan: step.plan }),
        query: step.query,
        note: {
          id: node.id,
          title: node.title,
          file,
          uri,
          ...renamed(clipText(node.body, LIMITS.body, `read the note ${uri}`), 'body'),
          ...(node.tools ? { tools: node.tools } : {}),
          ...(node.role === undefined ? {} : { role: node.role }),
          judge: node.judge ?? 'llm',
          terminal,
        },
        conditions: step.conditions,
        ...(checking.length === 0 ? {} : { checks: checking }),
        outputs,
        earlierOutputs: Math.max(0, step.outputs.length - shown),
        todo: todo + checked,
      }
      return { step: view }
    }
    case 'waiting':
      return {
        step: {
          kind: 'waiting',
          runId: step.runId,
          waiting: step.waiting.map((note) => ({ ...note, uri: resourceUri(vault, note.file) })),
          reason: step.reason,
          todo: `A person decides now: ask them, then call plan_decide with \`vault\`, \`node\` and \`edge\` (one of \`choices\`), or let them tick a box in the note; then plan_next.`,
        },
      }
    case 'completed': {
      const final = resourceUri(vault, `${TRACE_FOLDER}/final.md`)
      return {
        step: {
          kind: 'completed',
          runId: step.runId,
          node: step.node,
          ...renamed(clipText(step.output, LIMITS.body, `read ${final}`), 'output'),
          todo: 'Nothing to do: the run is complete.',
        },
      }
    }
    case 'stopped':
      return {
        step: {
          kind: 'stopped',
          runId: step.runId,
          stop: step.stop,
          reason: step.reason,
          todo: `A budget ran out. A person may raise \`max_visits\` in the note (or the plan's \`maxSteps\`); plan_status says what to do.`,
        },
      }
    case 'busy':
      return {
        step: {
          kind: 'busy',
          runId: step.runId,
          claims: step.claims.map((item) => ({ ...item })),
          todo: 'Other agents hold every note ready now: call plan_next again later (a claim whose lease ended can be taken).',
        },
      }
  }
}

/** `text` cut to `limit` characters, with `more` saying how much is left and `where` to read it. */
function clipText(text: string, limit: number, where: string): { text: string; more?: string } {
  if (text.length <= limit) return { text }
  return { text: text.slice(0, limit), more: `${text.length - limit} more characters: ${where}` }
}

function renamed<K extends string>(clipped: { text: string; more?: string }, key: K): Record<K, string> & { more?: string } {
  const { text, ...more } = clipped
  return { [key]: text, ...more } as Record<K, string> & { more?: string }
}

async function clipOutput(output: string, vault: string, path: string, node: string, visit: number): Promise<{ output: string; more?: string }> {
  if (output.length <= LIMITS.output) return { output }
  const file = await findOutputNote(path, node, visit)
  const where = file
    ? `read ${resourceUri(vault, `${TRACE_FOLDER}/${file}`)}`
    : `the trace ${resourceUri(vault, `${TRACE_FOLDER}/trace.md`)} names the output note of each step`
  return renamed(clipText(output, LIMITS.output, where), 'output')
}

/** The saved output note of a visit, relative to the trace folder, newest run's first. */
async function findOutputNote(vault: string, node: string, visit: number): Promise<string | undefined> {
  const names = (await readdir(tracePaths(vault).outputs).catch(() => [] as string[]))
    .filter((name) => name.endsWith('.md'))
    .sort()
    .reverse()
  for (const name of names) {
    const file = `${OUTPUTS}/${name}`
    const saved = await readOutput(vault, file)
    if (saved?.node === node && saved.visit === visit) return file
  }
  return undefined
}
