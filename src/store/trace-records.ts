import { z } from 'zod'
import { DECIDED_BY } from '../core/types.js'

/*
 * The records of a run's trace, defined once: format 2 strictly (an unknown
 * field is `trace-format`, never a torn entry), format 1 as it was written.
 */

/** The trace format this version writes (3: claims; 4: the step budget on waits too); formats 1 to 3 are still read. */
export const TRACE_FORMAT = 4

const edgeSchema = z.object({ label: z.string(), target: z.string(), conditional: z.boolean() })

/** A budget stop and a wait for a person: the same fields in both formats. */
const stopFields = {
  kind: z.literal('stop'),
  step: z.number().int().min(0),
  node: z.string(),
  visit: z.number().int().min(1),
  budget: z.enum(['max_visits', 'maxSteps']),
  reason: z.string(),
  /** The step budget of the call that stopped (format 3). */
  maxSteps: z.number().int().min(1).optional(),
}
const waitingFields = { kind: z.literal('waiting'), step: z.number().int().min(1), node: z.string(), visit: z.number().int().min(1) }
/** The step budget of the call that began a wait (format 4): a run that left its subplans to wait for a person keeps the budget a call gave inside them. */
const budgetField = { maxSteps: z.number().int().min(1).optional() }

/**
 * Format 1, read as it was written: unknown fields are ignored and a record
 * that does not fit is passed over.
 */
export const recordSchemaV1 = z.discriminatedUnion('kind', [
  z.object({
    kind: z.literal('hop'),
    step: z.number().int().min(1),
    node: z.string(),
    visit: z.number().int().min(1),
    edge: edgeSchema.nullable(),
    decidedBy: z.enum(['predicate', 'llm', 'human', 'unconditional', 'rework', 'terminal']),
    next: z.string().nullable(),
    output: z.string(),
    feedback: z.string().optional(),
  }),
  z.object(stopFields),
  z.object(waitingFields),
])

/** What every format-2 record may carry: when it happened and, inside a subplan, the subplan's folder. */
const common = {
  /** ISO time the record's work (or wait, or stop) began. */
  at: z.string().optional(),
  /** The subplan folder relative to the top vault, for a record written by a subplan's run. */
  plan: z.string().optional(),
  /** A subplan note's record: the works its subplans did (counted against `maxSteps` instead of the note itself). */
  works: z.number().int().min(0).optional(),
}
const tokensSchema = z.strictObject({ input: z.number().int().min(0), output: z.number().int().min(0) })

/**
 * Format 2: every record and field this release writes, and nothing else.
 * A complete marker line whose record does not fit is a format error, never
 * taken for an entry torn by a crash.
 */
export const recordSchemaV2 = z.discriminatedUnion('kind', [
  z.strictObject({
    kind: z.literal('hop'),
    step: z.number().int().min(1),
    node: z.string(),
    visit: z.number().int().min(1),
    edge: edgeSchema.strict().nullable(),
    decidedBy: z.enum(DECIDED_BY),
    next: z.string().nullable(),
    output: z.string(),
    /** What a person wrote under `## Feedback` at the decision, as it stood then. */
    feedback: z.string().optional(),
    /** The caller's choice (`decidedBy: 'agent'`), as given. */
    choice: z.string().optional(),
    /** A person's decision (`decide`) along one of several boxes ticked by hand: the labels of the others, which it unticked. */
    unticked: z.array(z.string()).min(1).optional(),
    /** Milliseconds from the start of the work to the recorded transition. */
    ms: z.number().min(0).optional(),
    /** The role and model of the LLM calls of the hop, and the tokens the endpoint reported. */
    role: z.string().optional(),
    model: z.string().optional(),
    tokens: tokensSchema.optional(),
    /** The judge's answers, one per condition asked. */
    answers: z.array(z.strictObject({ condition: z.string(), answer: z.enum(['YES', 'NO']) })).optional(),
    /** The note's checks (`check:`): each one's exit code (`null`: killed or not started) and time; their output's end is in the output note. */
    checks: z
      .array(z.strictObject({ name: z.string(), exit: z.number().int().nullable(), ms: z.number().min(0), timedOut: z.literal(true).optional() }))
      .optional(),
    /** The worker's error, when it failed after its retries and the `failed` edge was taken (`decidedBy: 'failure'`). */
    error: z.string().optional(),
    ...common,
  }),
  z.strictObject({ ...stopFields, ...common }),
  z.strictObject({ ...waitingFields, ...budgetField, ...common }),
])

/**
 * A claim (format 3): the whole run's step number a visit was given when it
 * was claimed, so that working it again after a crash keeps the number.
 * Written on a marker line of its own (`<!-- vaultplan:claim ... -->`), which
 * readers of older formats pass over; not one of the trace's entries.
 * An agent's claim (docs/stepping.md, several agents) names the agent and how long its lease
 * lasts; the same visit may be released by a `defer` (worked later) or a
 * `block` (handed to a person), each on a marker line of its own kind.
 */
export const claimSchema = z.strictObject({
  kind: z.enum(['claim', 'defer', 'block']),
  step: z.number().int().min(1),
  node: z.string(),
  visit: z.number().int().min(1),
  at: z.string().optional(),
  /** The step budget of the call that claimed: a snapshot not told one decides for the budget the run last ran with. */
  maxSteps: z.number().int().min(1).optional(),
  /** The agent that claimed, deferred or blocked the visit. */
  agent: z.string().optional(),
  /** An agent's claim: when its lease ends, ISO 8601. */
  until: z.string().optional(),
  /** A defer or a block: why, in the agent's words. */
  reason: z.string().optional(),
})

/**
 * An edit of the plan (format 3, `editPlan`): who made it and which notes it
 * wrote and removed, by their paths from the vault. On a marker line of its
 * own (`<!-- vaultplan:edit ... -->`), which readers of older formats pass
 * over; not one of the trace's entries.
 */
export const editSchema = z.strictObject({
  kind: z.literal('edit'),
  at: z.string(),
  agent: z.string().optional(),
  written: z.array(z.string()),
  removed: z.array(z.string()),
  /** The folder `00_plan-trace/edits/<n>/` the replaced notes were copied into first. */
  copies: z.number().int().min(1).optional(),
  /** A hash of the edit asked for: a call repeated after a kill knows its record is written already. */
  input: z.string(),
})

/** An edit of the plan, as the trace records it. */
export type EditRecord = z.infer<typeof editSchema>

/** A visit's claim (or its release by a defer or a block), as the trace records it. */
export type ClaimRecord = z.infer<typeof claimSchema>

/** The kinds of marker line a visit's claim and its releases are written on. */
export const CLAIM_KINDS = claimSchema.shape.kind.options

/** One entry of the trace: a hop, a budget stop or a wait for a person. */
export type TraceRecord = z.infer<typeof recordSchemaV2>
/** A hop entry of the trace: a node worked and the edge it took. */
export type HopRecord = Extract<TraceRecord, { kind: 'hop' }>
