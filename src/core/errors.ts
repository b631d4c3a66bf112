import type { NodeStatus, PlanIssue, WorkItem } from './types.js'

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
  /**
   * The folder the issues' files are in, as the caller named it, when the plan
   * was read from one: a template, or the run vault a run copied it into
   * (`runs/announce`). The message names the files inside it.
   */
  readonly vault?: string

  constructor(issues: PlanIssue[], options?: { cause?: unknown; vault?: string }) {
    const errors = issues.filter((issue) => issue.severity === 'error')
    const lines = errors.slice(0, 10).map((issue) => `  ${formatIssue(inFolder(issue, options?.vault))}`)
    if (errors.length > 10) lines.push(`  ... and ${errors.length - 10} more`)
    super('plan-invalid', `The plan has ${errors.length} error${errors.length === 1 ? '' : 's'}:\n${lines.join('\n')}`, options)
    this.issues = issues
    if (options?.vault !== undefined) this.vault = options.vault
  }
}

/** `error` as thrown for a plan in the folder `vault`: a `PlanValidationError` that names no folder yet gets this one; anything else is returned as it is. */
export function namingVault(error: unknown, vault: string): unknown {
  return error instanceof PlanValidationError && error.vault === undefined ? new PlanValidationError(error.issues, { cause: error.cause, vault }) : error
}

/** An issue with its file as found from where the caller stands: `runs/announce/review.md` for `review.md` in `runs/announce`. */
export function inFolder(issue: PlanIssue, vault: string | undefined): PlanIssue {
  if (vault === undefined || issue.file === undefined) return issue
  return { ...issue, file: `${vault.replace(/[\\/]+$/, '')}/${issue.file}` }
}

/** Every `code` a {@link RunStateError} can carry: one table for the type and the docs. */
export const RUN_STATE_ERROR_CODES = [
  'ambiguous-decision',
  'bad-choice',
  'busy',
  'checks-in-vault',
  'claimed',
  'declined',
  'ledger-too-new',
  'ledger-unreadable',
  'no-run',
  'no-start',
  'node-missing',
  'not-revising',
  'not-waiting',
  'note-busy',
  'note-in-use',
  'proposal-unreadable',
  'query-mismatch',
  'run-vault-not-empty',
  'run-vault-other-plan',
  'stale-decision',
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
  'visited-note',
] as const

/** Why a run's state needs a person (or the caller) before it can go on. */
export type RunStateErrorCode = (typeof RUN_STATE_ERROR_CODES)[number]

/** The runner that holds a vault's lock: its process, its machine, and since when. */
export interface LockHolder {
  pid: number
  host: string
  since: string
}

/** The step a run waits to have completed: what `nextStep` returns again, by its key. */
export interface PendingStep {
  key: string
  node: string
  visit: number
  step: number
  /** The subplan folder, relative to the top vault, for a note inside a subplan. */
  plan?: string
}

/**
 * What a {@link RunStateError} carries besides its message, per `code`: the
 * facts the message states, as fields, so a caller never parses English.
 * A note is named by its id (`node`) or its file relative to its vault
 * (`file`, `files`, as in `Step`); a run's own files and folders by the path
 * the message names (`file`, `path`, `folder`, `vault`).
 */
export interface RunStateErrorData extends Record<RunStateErrorCode, object> {
  /** More than one box is ticked: `ticked` lists the boxes in the way, as choices (`label`, or `next`). */
  'ambiguous-decision': { node: string; file: string; ticked: string[] }
  /** A choice outside `choices`, the valid ones (none at a terminal). */
  'bad-choice': { node: string; choices: string[] }
  /** Agents hold every visit ready now: who holds each, and until when. */
  busy: { claims: WorkItem[] }
  /** The runner's checks came from `config`, which lies in the run's `vault` (a queue worker started inside it). */
  'checks-in-vault': { config: string; vault: string }
  /** Another agent's live claim holds the visit of `key`: only that agent completes, defers or blocks it until `until`. */
  claimed: { claim: { agent: string; key: string; until: string } }
  /** The proposal was declined at `version`. */
  declined: { version: number }
  /** The ledger was written in `format`; this version reads `supported`. */
  'ledger-too-new': { file: string; format: number; supported: number }
  /** The ledger has no vaultplan header, or an entry at `line` this version does not know. */
  'ledger-unreadable': { file: string; line?: number }
  /** The vault holds no run (no trace). */
  'no-run': { vault: string }
  /** The plan has no start note. */
  'no-start': { vault: string }
  /** The run is at `node`, and its note (`file`, when known) is gone; or `editPlan` was asked to remove a note the vault does not hold. */
  'node-missing': { node: string; file?: string }
  /** `node` is not waiting for a person: its `status`, `null` when the vault has no such note; `waiting` lists the notes that are. */
  'not-waiting': { node: string; status: NodeStatus | null; waiting: string[] }
  /** These notes kept changing (an editor saving them); `kept` is where a save caught mid-replace was kept. */
  'note-busy': { files: string[]; kept?: string }
  /** An agent proposed a next version, but the proposal at `version` is `status`, with `ticked` boxes, not sent back with `revise` alone. */
  'not-revising': { version: number; status: 'pending' | 'approved' | 'revised' | 'declined'; ticked: string[] }
  /** These notes are worked (`status: active`, claimed) or wait for a person (`waiting`): an edit neither replaces nor removes them. */
  'note-in-use': { nodes: string[] }
  /** The proposal note cannot be read. */
  'proposal-unreadable': { file: string }
  /** The query the run (or the approved proposal) recorded. */
  'query-mismatch': { recorded: string }
  /** The folder a run or a fork would go into holds other files. */
  'run-vault-not-empty': { folder: string }
  /** The run vault holds a run of the plan at `source`. */
  'run-vault-other-plan': { folder: string; source: string }
  /** A decision made on what `node` was (`madeOn`: the proposal's version, or the waiting note's visit), which is `current` now. */
  'stale-decision': { node: string; madeOn: number; current: number }
  /** The pending step, or `null` when none is (the run waits, stopped or completed). */
  'stale-step': { pending: PendingStep | null }
  /** `status` could not be written into the note. */
  'status-unwritable': { file: string; status: NodeStatus }
  /** The trace has a record at `line` this version does not know. */
  'trace-format': { file: string; line: number }
  /** A file stands where a run folder goes. */
  'trace-not-folder': { path: string }
  /** A symlink stands where a run writes. */
  'trace-outside-vault': { path: string }
  /** The trace was written in `format`; this version reads `supported`. */
  'trace-too-new': { file: string; format: number; supported: number }
  /** The trace has no vaultplan header, or is not a regular file. */
  'trace-unreadable': { file: string }
  /** These notes are all `status: active`. */
  'two-active': { nodes: string[] }
  /** The runner's lock of `vault` was taken over, by `holder` when its name is readable. */
  'vault-lock-lost': { vault: string; holder: LockHolder | null }
  /** `vault` (the one asked for, or one inside or around it) is held by `holder`, `null` when its name is unreadable. */
  'vault-locked': { vault: string; holder: LockHolder | null }
  /** These notes have visits in the run: an edit does not remove them (their outputs name them). */
  'visited-note': { nodes: string[] }
}

/** A {@link RunStateError} of any code, as a union: checking `code` narrows `data`. */
export type AnyRunStateError = { [Code in RunStateErrorCode]: RunStateError<Code> }[RunStateErrorCode]

/**
 * Thrown when the state of a run vault cannot be continued without a person:
 * two `active` nodes, a trace written by a newer vaultplan, a vault held by
 * another runner, ambiguous human decisions. `data` holds the facts the
 * message states, typed per `code` ({@link RunStateErrorData}); after
 * `error instanceof RunStateError`, checking `error.code` narrows `error.data`.
 */
export class RunStateError<Code extends RunStateErrorCode = RunStateErrorCode> extends VaultplanError<Code> {
  override readonly name = 'RunStateError'
  readonly data: RunStateErrorData[Code]

  constructor(code: Code, message: string, data: RunStateErrorData[Code], options?: { cause?: unknown }) {
    super(code, message, options)
    this.data = data
  }

  // `instanceof` narrows to the union of every code's error, not to `RunStateError<any>`, so `code` narrows `data`.
  static override [Symbol.hasInstance](value: unknown): value is AnyRunStateError {
    return Function.prototype[Symbol.hasInstance].call(this, value)
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

/**
 * Thrown when the caller's `signal` aborts a run (`runPlan`) or a step
 * (`nextStep`, `completeStep`). Nothing is lost: the note being worked
 * stays `active`, so running the vault again goes on at the same visit,
 * with the same key. `cause` is the signal's `reason` (for a plain
 * `controller.abort()`, a `DOMException` named `AbortError`).
 */
export class RunAbortedError extends VaultplanError<'run-aborted'> {
  override readonly name = 'RunAbortedError'
  /** The vault whose run was aborted. */
  readonly vault: string

  constructor(vault: string, options?: { cause?: unknown }) {
    const reason = options?.cause
    // A caller's own reason says why; the default one ("This operation was aborted") says nothing more.
    const why =
      reason instanceof Error && reason.name !== 'AbortError' ? ` (${reason.message})` : typeof reason === 'string' && reason !== '' ? ` (${reason})` : ''
    super('run-aborted', `The run of \`${vault}\` was aborted${why}; the vault is resumable: run it again to go on.`, options)
    this.vault = vault
  }
}

/** Why a vault path cannot be used. */
export type VaultPathErrorCode = 'vault-missing' | 'vault-not-folder' | 'vault-not-empty' | 'vault-unreadable'

/** Thrown when a vault path does not exist, is not a folder, or cannot be read. */
export class VaultPathError extends VaultplanError<VaultPathErrorCode> {
  override readonly name = 'VaultPathError'
}

/**
 * Thrown when a plan is too large to lay out as SVG in time: the layout
 * (Graphviz, in a worker thread) was stopped after `timeoutMs`. The DOT,
 * mermaid and canvas pictures have no such bound.
 */
export class PictureTooLargeError extends VaultplanError<'picture-too-large'> {
  override readonly name = 'PictureTooLargeError'
  /** The notes of the plan. */
  readonly notes: number
  readonly timeoutMs: number

  constructor(notes: number, timeoutMs: number, options?: { cause?: unknown }) {
    super(
      'picture-too-large',
      `The plan (${notes} notes) is too large to lay out as SVG within ${timeoutMs / 1000} s; draw it as mermaid, dot or canvas instead, or lay the DOT text out with Graphviz's own \`dot -Tsvg\`.`,
      options,
    )
    this.notes = notes
    this.timeoutMs = timeoutMs
  }
}

/** Why a model could not be used: not configured for a role, or the call failed. */
export type ModelErrorCode = 'model-not-configured' | 'llm-request-failed'

/** Every `code` a {@link VaultplanError} can carry. */
export type VaultplanErrorCode =
  'plan-invalid' | RunStateErrorCode | 'worker-failed' | 'run-aborted' | VaultPathErrorCode | ModelErrorCode | 'picture-too-large'
