import { sep } from 'node:path'
import { z } from 'zod'
import { formatIssue, PictureTooLargeError, PlanValidationError, RunStateError, VaultPathError } from '../core/errors.js'
import { LLMError, ModelConfigError } from '../models/llm-client.js'
import type { PlanIssue } from '../core/types.js'
import { PathRefusal } from './paths.js'

/** A tool's answer as MCP carries it: the JSON as text (some clients read only that) and as `structuredContent`. */
export interface ToolResult {
  [key: string]: unknown
  content: { type: 'text'; text: string }[]
  structuredContent?: Record<string, unknown>
  isError?: boolean
}

/** Characters of a note's body, an output or a picture a result carries before it is clipped. */
export const LIMITS = { body: 8_000, output: 2_000, outputs: 3, issues: 50, picture: 60_000 } as const

/** A successful result: `value` as `structuredContent` and the same JSON as a text block. */
export function ok(value: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value, null, 2) }], structuredContent: value }
}

/**
 * What a refused call's `structuredContent` holds under `error`: the code to
 * branch on, the message, the error's data (a `RunStateError`'s, typed per
 * code; the issues of an invalid plan) and what to do, so a client never
 * parses the text.
 */
export interface Refusal {
  code: string
  message: string
  data?: object
  todo?: string
}

/**
 * A tool's output schema that admits a refusal too (`{ error }`, see
 * `refusal`). The SDK's client checks an error result's `structuredContent`
 * against the tool's schema as well, so a refusal that did not fit would
 * reach the agent as a protocol error instead of its advice. The server
 * still checks every successful result against `schema` whole.
 */
export function orRefusal<Shape extends z.core.$ZodLooseShape>(schema: z.ZodObject<Shape>) {
  const required = z.toJSONSchema(schema, { io: 'output' }).required ?? []
  // What clients read (JSON Schema): the result's fields, or the error, its other fields left open (tools/list is paid for on
  // every turn). The fields stay required in the zod schema the server checks.
  return schema.extend({ error: z.looseObject({ code: z.string() }).optional() }).meta({ required: undefined, anyOf: [{ required }, { required: ['error'] }] })
}

/**
 * What to do after a mistake, by error code: the error's own message says
 * what went wrong, this line says which call goes on.
 */
const ADVICE: Record<string, string> = {
  'stale-step': 'Call plan_next: it returns the pending step with its key (it counts nothing again), then plan_finish that step.',
  'bad-choice':
    'Pass `choice` as one of the valid choices above (they are the `conditions` of the step plan_next returned), or leave it out at a terminal note.',
  'not-waiting': 'Only a note waiting for a person can be decided; plan_status says where the run stands.',
  'ambiguous-decision': 'A box is ticked in the note already: untick it in the note (or decide along it), then call plan_decide again.',
  'vault-locked': 'Another process is running this vault now; wait for it (plan_status shows it as running) and call again.',
  'query-mismatch': 'Leave `query` out (the run keeps the query it started with), or start over in a new vault.',
  'outside-root': 'Pass a path relative to the root, without `..`; plan_list shows the vaults.',
  'not-found': 'plan_list shows the vaults under the root.',
  exists: 'Pick a folder name that is not taken yet; plan_create writes only new vaults.',
  'bad-path': 'Pass a path relative to the root, like `plans/release`.',
  'plan-invalid': 'Fix these notes (plan_validate lists every problem), then call again; nothing was changed.',
  'query-needed': 'Call plan_next again with `query`: what the run is for (the trace keeps it for every later call).',
  'two-active': 'A person sets all but one of the active notes back to `done` or `pending`, then plan_next.',
  'model-not-configured': "Pass `choice` (one of the step's `conditions`), or configure a model for the judge (LLM_MODEL, LLM_BASE_URL) where the server runs.",
}

/**
 * The result of a tool call that failed because of the caller or the notes:
 * `isError: true`, the problem and what to do in the text, paths under
 * `root` shown relative to it (as the client names vaults). Errors of
 * another kind (a bug, a disk failure) are thrown on, and the SDK reports
 * them as a failed tool call too.
 */
export function failure(error: unknown, root: string): ToolResult {
  const relative = (message: string) => message.split(`${root}${sep}`).join('')
  if (error instanceof PlanValidationError) {
    const errors = error.issues.filter((issue) => issue.severity === 'error')
    return refusal('plan-invalid', describeIssues(error.issues), { errors: errors.length, issues: errors.slice(0, LIMITS.issues) })
  }
  if (error instanceof RunStateError) return refusal(error.code, relative(error.message), mapStrings(error.data, relative))
  if (error instanceof PathRefusal || error instanceof VaultPathError) return refusal(error.code, relative(error.message))
  if (error instanceof ModelConfigError) return refusal('model-not-configured', error.message)
  if (error instanceof LLMError) return refusal('llm-failed', `${error.message} Call again, or pass \`choice\` to decide without the model.`)
  if (error instanceof PictureTooLargeError) return refusal(error.code, error.message, { notes: error.notes, timeoutMs: error.timeoutMs })
  throw error
}

/** Runs a tool's body; a user's mistake becomes an error result (see `failure`), anything else is thrown on. */
export async function guarded(root: string, body: () => Promise<ToolResult>): Promise<ToolResult> {
  try {
    return await body()
  } catch (error) {
    return failure(error, root)
  }
}

/**
 * A refusal with its code, the reason, and the advice for the code when
 * there is one: in words as the text block, and as `structuredContent`
 * `{ error }` (see {@link Refusal}).
 */
export function refusal(code: string, message: string, data?: object): ToolResult {
  const advice = ADVICE[code]
  const error: Refusal = { code, message, ...(data !== undefined && { data }), ...(advice !== undefined && { todo: advice }) }
  return { content: [{ type: 'text', text: `Error (${code}): ${message}${advice ? `\n${advice}` : ''}` }], structuredContent: { error }, isError: true }
}

/** `value` with `map` applied to every string in it (the paths under the root in an error's data, as the client names them). */
function mapStrings<T>(value: T, map: (text: string) => string): T {
  if (typeof value === 'string') return map(value) as T
  if (Array.isArray(value)) return value.map((each: unknown) => mapStrings(each, map)) as T
  if (value !== null && typeof value === 'object') return Object.fromEntries(Object.entries(value).map(([key, each]) => [key, mapStrings(each, map)])) as T
  return value
}

/** The errors of a plan, one per line as compilers print them, clipped to `LIMITS.issues`. */
export function describeIssues(issues: readonly PlanIssue[]): string {
  const errors = issues.filter((issue) => issue.severity === 'error')
  const lines = errors.slice(0, LIMITS.issues).map((issue) => `  ${formatIssue(issue)}`)
  if (errors.length > LIMITS.issues) lines.push(`  ... and ${errors.length - LIMITS.issues} more`)
  return `The plan has ${errors.length} error${errors.length === 1 ? '' : 's'}:\n${lines.join('\n')}`
}
