import { sep } from 'node:path'
import { formatIssue, PlanValidationError, RunStateError, VaultPathError } from '../core/errors.js'
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
 * What to do after a mistake, by error code: the error's own message says
 * what went wrong, this line says which call goes on. No `structuredContent`
 * on errors: clients check it against the tool's output schema.
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
  if (error instanceof PlanValidationError) return refusal('plan-invalid', describeIssues(error.issues))
  if (error instanceof RunStateError || error instanceof PathRefusal || error instanceof VaultPathError) return refusal(error.code, relative(error.message))
  if (error instanceof ModelConfigError) return refusal('model-not-configured', error.message)
  if (error instanceof LLMError) return refusal('llm-failed', `${error.message} Call again, or pass \`choice\` to decide without the model.`)
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

/** A refusal with its code, the reason, and the advice for the code when there is one. */
export function refusal(code: string, message: string): ToolResult {
  const advice = ADVICE[code]
  return { content: [{ type: 'text', text: `Error (${code}): ${message}${advice ? `\n${advice}` : ''}` }], isError: true }
}

/** The errors of a plan, one per line as compilers print them, clipped to `LIMITS.issues`. */
export function describeIssues(issues: readonly PlanIssue[]): string {
  const errors = issues.filter((issue) => issue.severity === 'error')
  const lines = errors.slice(0, LIMITS.issues).map((issue) => `  ${formatIssue(issue)}`)
  if (errors.length > LIMITS.issues) lines.push(`  ... and ${errors.length - LIMITS.issues} more`)
  return `The plan has ${errors.length} error${errors.length === 1 ? '' : 's'}:\n${lines.join('\n')}`
}
