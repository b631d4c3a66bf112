import type { PlanIssue } from './types.js'

/**
 * Thrown when a plan has errors. `issues` lists every problem found (errors
 * and warnings), each with a code, the node, the file and a position.
 */
export class PlanValidationError extends Error {
  override name = 'PlanValidationError' as const
  readonly code = 'PLAN_INVALID' as const
  readonly issues: PlanIssue[]

  constructor(issues: PlanIssue[], options?: { cause?: unknown }) {
    const errors = issues.filter((issue) => issue.severity === 'error')
    const lines = errors.slice(0, 10).map((issue) => `  ${formatIssue(issue)}`)
    if (errors.length > 10) lines.push(`  ... and ${errors.length - 10} more`)
    super(
      `The plan has ${errors.length} error${errors.length === 1 ? '' : 's'}:\n${lines.join('\n')}`,
      options,
    )
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
export class RunStateError extends Error {
  override name = 'RunStateError' as const
  readonly code: RunStateErrorCode

  constructor(code: RunStateErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
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
export class StepError extends Error {
  override name = 'StepError' as const
  readonly code = 'WORKER_FAILED' as const
  readonly node: string
  readonly visit: number

  constructor(node: string, visit: number, cause: unknown) {
    const why = cause instanceof Error ? cause.message : String(cause)
    super(`The worker failed at \`${node}\`, visit ${visit}: ${why}. The note stays active; run the vault again to retry this visit.`, { cause })
    this.node = node
    this.visit = visit
  }
}

/** Why a vault path cannot be used. */
export type VaultPathErrorCode = 'vault-missing' | 'vault-not-folder' | 'vault-not-empty' | 'vault-unreadable'

/** Thrown when a vault path does not exist, is not a folder, or cannot be read. */
export class VaultPathError extends Error {
  override name = 'VaultPathError' as const
  readonly code: VaultPathErrorCode

  constructor(code: VaultPathErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options)
    this.code = code
  }
}
