import type { PlanIssue } from './types.js'

/**
 * The base of every error vaultplan throws for a problem of the user's
 * world (a plan, a run's state, a model, a path): a stable `name`, a `code`
 * from {@link VaultplanErrorCode} and, when another error caused it, `cause`.
 * Programmer errors (a bad option value) are `TypeError`s instead.
 */
export abstract class VaultplanError<Code extends VaultplanErrorCode = VaultplanErrorCode> extends Error {
  abstract override readonly name: string
  readonly code: Code

  constructor(code: Code, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}

/**
 * Thrown when a plan has errors. `issues` lists every problem found (errors
 * and warnings), each with a code, the node, the file and a position.
 */
export class PlanValidationError extends VaultplanError<'plan-invalid'> {
  override readonly name = 'PlanValidationError'
  readonly issues: PlanIssue[]

  constructor(issues: PlanIssue[], options?: { cause?: unknown }) {
    const errors = issues.filter((issue) => issue.severity === 'error')
    const lines = errors.slice(0, 10).map((issue) => `  ${formatIssue(issue)}`)
    if (errors.length > 10) lines.push(`  ... and ${errors.length - 10} more`)
    super('plan-invalid', `The plan has ${errors.length} error${errors.length === 1 ? '' : 's'}:\n${lines.join('\n')}`, options)
    this.issues = issues
  }
}

/** Every `code` a {@link RunStateError} can carry: one table for the type and the docs. */
export const RUN_STATE_ERROR_CODES = [
  'ambiguous-decision',
  'bad-choice',
  'declined',
  'ledger-too-new',
  'ledger-unreadable',
  'no-run',
  'no-start',
  'node-missing',
  'not-waiting',
  'note-busy',
  'proposal-unreadable',
  'query-mismatch',
  'run-vault-not-empty',
  'run-vault-other-plan',
  'stale-step',
  'status-unwritable',
  'trace-format',
  'trace-not-folder',
  'trace-outside-vault',
  'trace-too-new',
  'trace-unreadable',
  'two-active',
  'vault-lock-lost',
  'vault-locked',
] as const

/** Why a run's state needs a person (or the caller) before it can go on. */
export type RunStateErrorCode = (typeof RUN_STATE_ERROR_CODES)[number]

/**
 * Thrown when the state of a run vault cannot be continued without a person:
 * two `active` nodes, a trace written by a newer vaultplan, a vault held by
 * another runner, ambiguous human decisions.
 */
export class RunStateError extends VaultplanError<RunStateErrorCode> {
  override readonly name = 'RunStateError'
}

/**
 * Formats an issue the way compilers do: `review.md:12:3 error dangling-edge message`. An issue of a
 * plan document (a line, no file) reads `review (line 12:3) error ...`.
 */
export function formatIssue(issue: PlanIssue): string {
  let place = issue.file ?? issue.node ?? '<plan>'
  if (issue.line !== undefined) {
    const at = issue.column !== undefined ? `${issue.line}:${issue.column}` : `${issue.line}`
    place += issue.file ? `:${at}` : ` (line ${at})`
  }
  return `${place} ${issue.severity} ${issue.code} ${issue.message}`
}

/**
 * Thrown when a worker fails. The node stays `active`, so running the vault
 * again works the same visit again, with the same key.
 */
export class StepError extends VaultplanError<'worker-failed'> {
  override readonly name = 'StepError'
  readonly node: string
  readonly visit: number

  constructor(node: string, visit: number, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause)
    super('worker-failed', `The worker failed at \`${node}\`, visit ${visit}: ${why}. The note stays active; run the vault again to retry this visit.`, {
      cause,
    })
    this.node = node
    this.visit = visit
  }
}

/** Why a vault path cannot be used. */
export type VaultPathErrorCode = 'vault-missing' | 'vault-not-folder' | 'vault-not-empty' | 'vault-unreadable'

/** Thrown when a vault path does not exist, is not a folder, or cannot be read. */
export class VaultPathError extends VaultplanError<VaultPathErrorCode> {
  override readonly name = 'VaultPathError'
}

/** Why a model could not be used: not configured for a role, or the call failed. */
export type ModelErrorCode = 'model-not-configured' | 'llm-request-failed'

/** Every `code` a {@link VaultplanError} can carry. */
export type VaultplanErrorCode = 'plan-invalid' | RunStateErrorCode | 'worker-failed' | VaultPathErrorCode | ModelErrorCode
