import { z } from 'zod'
import { extractJson, parseGridReply } from './judge-reply.js'
import { ledgerAsText, ledgerTools } from '../memory/ledger-tools.js'
import { clip, dataFence, recentOutputs, type DataFence } from '../core/text.js'
import type { CallLLM, StepInput, Tool } from '../core/types.js'

/** Options of the built-in worker. */
export interface WorkerOptions {
  /**
   * Tools the worker may call; a node's `tools:` list scopes them.
   *
   * @default []
   */
  tools?: Tool[]
  /**
   * Tool calls allowed in one visit.
   *
   * @default 5
   */
  maxToolCalls?: number
  /**
   * Offer the ledger tools (`record_fact`, `record_assumption`,
   * `record_decision`, `invalidate_assumption`) when the step names its
   * `vault`; a node's `tools:` scopes them like the others.
   *
   * @default true
   */
  ledgerTools?: boolean
}

/** One tool call of a visit, as the worker saw it. */
interface ToolCall {
  tool: string
  args: unknown
  result: string
}

const DEFAULTS = { maxToolCalls: 5, ledgerTools: true }
/** How much of the earlier outputs and tool results the worker passes on. */
const RECENT_OUTPUTS = 3
const OUTPUT_CHARS = 8_000
const RESULT_CHARS = 4_000
const LEDGER_CHARS = 4_000
/** Attempts at arguments that pass the tool's schema, the error fed back each time. */
const ARGUMENT_ATTEMPTS = 2

/**
 * The built-in worker: the node's body is the instruction, with the run's
 * query and the freshest outputs as context, sent to the node's `role:`
 * model (or the `action` role). With tools, it first asks a YES/NO grid
 * (one row per tool in the node's scope: does this step need it now?), then
 * for the chosen tool's arguments as JSON, validated with the tool's zod
 * schema, at most `maxToolCalls` times per visit and never the same call
 * twice; the final answer sees every result. When the step names its
 * `vault`, the ledger tools are among the tools, and the prompts show the
 * step's `ledger` (facts, valid assumptions, decisions).
 *
 * @throws `TypeError` on a bad option.
 */
export function createWorker(llm: CallLLM, options: WorkerOptions = {}): (step: StepInput) => Promise<string> {
  const { tools = [], maxToolCalls, ledgerTools: withLedger } = { ...DEFAULTS, ...options }
  if (!Number.isInteger(maxToolCalls) || maxToolCalls < 0) {
    throw new TypeError(`Expected \`maxToolCalls\` to be an integer from 0 up, got \`${maxToolCalls}\``)
  }
  return async (step) => {
    const call = (prompt: string, system: string) => {
      const callOptions: { role: string; system: string; signal?: AbortSignal } = { role: step.node.role ?? 'action', system }
      if (step.signal) callOptions.signal = step.signal
      return llm(prompt, callOptions)
    }
    const vault = step.vault
    // The caller's tools win over a built-in of the same name.
    const builtIn = withLedger && vault !== undefined ? ledgerTools({ ...step, vault }).filter((tool) => !tools.some((own) => own.name === tool.name)) : []
    const all = [...tools, ...builtIn]
    // The ledger tools are offered where a note asks for them by name (`tools: [record_fact]`), so a plain note costs no tool grid.
    const inScope = step.node.tools === undefined ? tools : all.filter((tool) => step.node.tools!.includes(tool.name))
    const calls: ToolCall[] = []
    const seen = new Set<string>()
    while (inScope.length > 0 && calls.length < maxToolCalls) {
      const fence = dataFence()
      const grid = await call(toolChoicePrompt(step, inScope, calls, fence), `${TOOL_CHOICE_SYSTEM} ${fence.rule}`)
      const tool = inScope.find((_, index) => parseGridReply(grid, inScope.length)[index])
      if (!tool) break
      const args = await chooseArguments(call, step, tool, calls)
      if (!args.ok) {
        calls.push({ tool: tool.name, args: args.raw, result: `not called: ${args.error}` })
        continue
      }
      const signature = `${tool.name}:${JSON.stringify(args.value)}`
      if (seen.has(signature)) break
      seen.add(signature)
      calls.push({ tool: tool.name, args: args.value, result: await runTool(tool, args.value) })
    }
    return call(workPrompt(step, calls), WORK_SYSTEM)
  }
}

const WORK_SYSTEM = 'You carry out one step of a plan at a time and reply with the result of that step.'
const TOOL_CHOICE_SYSTEM = 'You decide which tools a plan step needs next. Reply only with one numbered YES/NO line per tool.'
const ARGUMENTS_SYSTEM = 'You write the arguments of one tool call as a single JSON object matching the schema, and nothing else.'

/**
 * What every prompt of a visit shows: the task, the step, the freshest
 * outputs. With a `fence` (the prompts that choose tool calls), each is
 * fenced as data, so text in an output cannot ask for a tool call.
 */
function context(step: StepInput, fence?: DataFence): string[] {
  const part = (title: string, text: string, limit: number, separator = '\n') =>
    fence ? fence.wrap(title, text, limit) : `${title}${separator}${clip(text, limit)}`
  const ledger = step.ledger ? ledgerAsText(step.ledger) : ''
  return [
    part('The overall task:', step.query, Number.POSITIVE_INFINITY),
    fence
      ? fence.wrap(`This step: ${oneLine(step.node.title)}`, step.node.body, Number.POSITIVE_INFINITY)
      : `This step: ${step.node.title}\n\n${step.node.body}`,
    ...(ledger === '' ? [] : [part("Recorded in the plan's ledger so far:", ledger, LEDGER_CHARS)]),
    ...recentOutputs(step.outputs, RECENT_OUTPUTS).map((entry) =>
      part(`Output of an earlier step (${oneLine(entry.node)}, visit ${entry.visit}):`, entry.output, OUTPUT_CHARS),
    ),
  ]
}

function describeCalls(calls: ToolCall[], fence?: DataFence): string[] {
  return calls.map((entry, index) => {
    const title = `Tool call ${index + 1}: ${entry.tool}`
    const text = `Arguments: ${JSON.stringify(entry.args)}\nResult:\n${clip(entry.result, RESULT_CHARS)}`
    return fence
      ? fence.wrap(`${title}, its arguments and result:`, text, Number.POSITIVE_INFINITY)
      : `${title}(${JSON.stringify(entry.args)})\nResult:\n${clip(entry.result, RESULT_CHARS)}`
  })
}

function workPrompt(step: StepInput, calls: ToolCall[]): string {
  return [...context(step), ...describeCalls(calls), 'Do this step now and reply with its result only.'].join('\n\n')
}

function toolChoicePrompt(step: StepInput, tools: Tool[], calls: ToolCall[], fence: DataFence): string {
  return [
    ...context(step, fence),
    ...describeCalls(calls, fence),
    `Tools:\n${tools.map((tool, index) => `${index + 1}. ${tool.name}: ${tool.description.replace(/\s+/g, ' ')}`).join('\n')}`,
    'Does this step need to call each tool now, given the results so far? Answer every tool on its own line as "<number>: YES" or "<number>: NO".',
  ].join('\n\n')
}

function oneLine(text: string): string {
  return text.replace(/\s+/g, ' ').trim()
}

async function chooseArguments(
  call: (prompt: string, system: string) => Promise<string>,
  step: StepInput,
  tool: Tool,
  calls: ToolCall[],
): Promise<{ ok: true; value: unknown } | { ok: false; raw: unknown; error: string }> {
  let schema = '{}'
  try {
    schema = JSON.stringify(z.toJSONSchema(tool.schema))
  } catch {
    // a schema JSON Schema cannot express: the description has to do
  }
  let feedback = ''
  let raw: unknown
  for (let attempt = 0; attempt < ARGUMENT_ATTEMPTS; attempt++) {
    const fence = dataFence()
    const prompt = [
      ...context(step, fence),
      ...describeCalls(calls, fence),
      `Call the tool \`${tool.name}\` (${tool.description}). Its arguments' JSON Schema:\n${schema}`,
      feedback,
      'Reply with the arguments as one JSON object.',
    ]
    const reply = await call(prompt.filter(Boolean).join('\n\n'), `${ARGUMENTS_SYSTEM} ${fence.rule}`)
    raw = extractJson(reply)
    const parsed = tool.schema.safeParse(raw)
    if (parsed.success) return { ok: true, value: parsed.data }
    feedback =
      `Your previous arguments ${JSON.stringify(raw)?.slice(0, 500)} were rejected: ${parsed.error.issues.map((issue) => `${issue.path.join('.') || '(root)'}: ${issue.message}`).join('; ')}. ` +
      `Fix them.`
  }
  return { ok: false, raw, error: feedback }
}

async function runTool(tool: Tool, args: unknown): Promise<string> {
  try {
    const result = await tool.execute(args)
    return typeof result === 'string' ? result : (JSON.stringify(result) ?? String(result))
  } catch (error) {
    return `error: ${error instanceof Error ? error.message : String(error)}`
  }
}
