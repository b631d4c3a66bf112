import { join, sep } from 'node:path'
import { formatIssue, PictureTooLargeError, PlanValidationError, RunStateError, VaultPathError } from '../core/errors.js'
import { LLMError, ModelConfigError } from '../models/llm-client.js'
import type { PlanIssue } from '../core/types.js'
import { PathRefusal } from './paths.js'
import { writingIn } from './own-writes.js'
import { runStateWords, type Where } from './refusals.js'

/** A tool's answer as MCP carries it: the JSON as text (some clients read only that) and as `structuredContent`. */
export interface ToolResult {
  [key: string]: unknown
  content: { type: 'text'; text: string }[]
  structuredContent?: Record<string, unknown>
  isError?: boolean
}

/**
 * Characters of a note's body, an output or a picture a result carries before it is clipped; an earlier output is
 * shown by its resource and a preview of `preview` characters; a long file is read in parts of `part` characters.
 */
export const LIMITS = { body: 8_000, output: 20_000, preview: 200, olderOutputs: 5, issues: 50, picture: 60_000, part: 20_000 } as const

/** A successful result: `value` as `structuredContent`, and the same as compact JSON in the text block (some clients read only that). */
export function ok(value: Record<string, unknown>): ToolResult {
  return { content: [{ type: 'text', text: JSON.stringify(value) }], structuredContent: value }
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
 * What to do after a refusal that is not a run's state, by its code: the
 * message says what went wrong, this line which call goes on.
 */
const ADVICE: Record<string, string> = {
  'outside-root': 'Pass a path relative to the root, without `..`; plan_list shows the vaults.',
  'not-found': 'plan_list shows the vaults under the root; plan_create writes a new one.',
  exists: 'Pick a folder name that is not taken yet; to change the plan in that folder, call plan_edit on it.',
  'bad-path': 'Pass a path relative to the root, like `plans/release`; plan_list shows the vaults.',
  'not-a-vault': 'Pass one of the vaults plan_list shows, or write a plan there with plan_create.',
  'plan-invalid': 'Fix these notes (plan_validate lists every problem), then call again; nothing was changed.',
  'query-needed': 'Call plan_next again with `query`: what the run is for (the run keeps it for every later call).',
  'model-not-configured':
    "Pass `choice` (one of the step's `conditions`), or ask a person to configure a model for the judge (LLM_MODEL, LLM_BASE_URL) where the server runs.",
  'llm-failed': 'Call again, or pass `choice` to decide without the model.',
}

/**
 * The result of a tool call that failed because of the caller or the notes:
 * `isError: true`, the problem and what to do in the text, in the tools'
 * words (a run's state from the error's data, see `runStateWords`), paths
 * under `root` shown relative to it (as the client names vaults). Errors of
 * another kind (a bug, a disk failure) are thrown on, and the SDK reports
 * them as a failed tool call too.
 */
export function failure(error: unknown, root: string, where: Where): ToolResult {
  const relative = (message: string) => relativeTo(root, message)
  if (error instanceof PlanValidationError) {
    const errors = error.issues.filter((issue) => issue.severity === 'error')
    // A document refused writes nothing: what to fix is the document, not notes.
    const todo = DOCUMENT_TOOLS.has(where.tool) ? `Fix the document as these lines say and call ${where.tool} again; nothing was written.` : undefined
    return refusal('plan-invalid', describeIssues(error.issues), { errors: errors.length, issues: errors.slice(0, LIMITS.issues) }, todo)
  }
  if (error instanceof RunStateError) {
    const data = mapStrings(error.data, relative)
    const words = runStateWords(error.code, data as never, where)
    return refusal(error.code, words.message, data, words.todo)
  }
  if (error instanceof PathRefusal || error instanceof VaultPathError) return refusal(error.code, relative(error.message))
  if (error instanceof ModelConfigError) return refusal('model-not-configured', relative(error.message))
  if (error instanceof LLMError) return refusal('llm-failed', relative(error.message))
  if (error instanceof PictureTooLargeError) return refusal(error.code, error.message, { notes: error.notes, timeoutMs: error.timeoutMs })
  throw error
}

/** `text` with every path under `root` relative to it, as the client names vaults. */
export function relativeTo(root: string, text: string): string {
  return text.split(`${root}${sep}`).join('').split(root).join('.')
}

/** Runs a tool's body; a user's mistake becomes an error result (see `failure`), anything else is thrown on. */
export async function guarded(root: string, where: Where, body: () => Promise<ToolResult>): Promise<ToolResult> {
  try {
    // A call that may write in its vault: subscribers are told its changes are the server's own.
    if (where.vault !== undefined && !READ_ONLY.has(where.tool)) return await writingIn(join(root, where.vault), body)
    return await body()
  } catch (error) {
    return failure(error, root, where)
  }
}

/** The tools that take a plan document: an invalid one is refused before anything is written. */
const DOCUMENT_TOOLS = new Set(['plan_create', 'plan_edit', 'plan_propose'])

/** The tools that never write in the vault they name. */
const READ_ONLY = new Set(['plan_validate', 'plan_status', 'plan_graph', 'plan_ledger'])

/**
 * A refusal with its code, the reason, and what to do (`todo`, else the
 * advice for the code): in words as the text block, and as
 * `structuredContent` `{ error }` (see {@link Refusal}).
 */
export function refusal(code: string, message: string, data?: object, todo: string | undefined = ADVICE[code]): ToolResult {
  const error: Refusal = { code, message, ...(data !== undefined && { data }), ...(todo !== undefined && { todo }) }
  return { content: [{ type: 'text', text: `Error (${code}): ${message}${todo ? `\n${todo}` : ''}` }], structuredContent: { error }, isError: true }
}

/** `value` with `map` applied to every string in it (the paths under the root in an error's data, as the client names them). */
export function mapStrings<T>(value: T, map: (text: string) => string): T {
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
