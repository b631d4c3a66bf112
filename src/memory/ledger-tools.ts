import { z } from 'zod'
import { invalidate, recordEntry, type LedgerEntry, type LedgerKind, type LedgerView } from './ledger.js'
import type { StepInput, Tool } from '../core/types.js'

/** The names of the built-in worker's ledger tools (a note's `tools:` may name them). */
export const LEDGER_TOOL_NAMES = ['record_fact', 'record_assumption', 'record_decision', 'invalidate_assumption'] as const

const TEXT = z.string().trim().min(1).max(2_000)
/** How much of one entry a prompt shows. */
const ENTRY_CHARS = 500

/**
 * The ledger tools of one visit: they record into `step.vault`, naming the
 * step's note and number. `invalidate_assumption` is offered only while an
 * assumption is valid.
 */
export function ledgerTools(step: StepInput & { vault: string }, options: { fsync?: boolean } = {}): Tool[] {
  const where = { node: step.node.id, step: step.step }
  const write = options.fsync === undefined ? {} : { fsync: options.fsync }
  const record = (
    kind: LedgerKind,
    name: string,
    description: string,
    schema: z.ZodObject<{ text: typeof TEXT; reason: z.ZodType<string | undefined> }>,
  ): Tool => ({
    name,
    description,
    schema,
    async execute(args) {
      const { text, reason } = schema.parse(args)
      const id = await recordEntry(step.vault, { kind, text, ...(reason === undefined ? {} : { reason }), ...where }, write)
      return `recorded as ${id}`
    },
  })
  const tools = [
    record(
      'fact',
      'record_fact',
      'Record a fact this step established (checked, not guessed), so later steps and runs can rely on it.',
      z.object({ text: TEXT, reason: TEXT.optional() }),
    ),
    record(
      'assumption',
      'record_assumption',
      'Record an assumption this step rests on without having checked it; it can be invalidated later.',
      z.object({ text: TEXT, reason: TEXT.optional() }),
    ),
    record('decision', 'record_decision', 'Record a decision taken in this step, with its reason.', z.object({ text: TEXT, reason: TEXT })),
  ]
  if (step.ledger === undefined || step.ledger.assumptions.some((entry) => entry.valid)) {
    const schema = z.object({ id: z.string().regex(/^A[1-9]\d*$/, 'an assumption id such as A2'), reason: TEXT })
    tools.push({
      name: 'invalidate_assumption',
      description: 'Mark a recorded assumption (by its id, such as A2) as no longer valid, with the reason.',
      schema,
      async execute(args) {
        const { id, reason } = schema.parse(args)
        await invalidate(step.vault, id, reason, { ...where, ...write })
        return `${id} is now invalid`
      },
    })
  }
  return tools
}

/**
 * The ledger as a prompt shows it: facts and valid assumptions (and
 * decisions unless `decisions: false`), one line each with its id, clipped.
 * Empty when there is nothing to show.
 */
export function ledgerAsText(view: LedgerView, options: { decisions?: boolean } = {}): string {
  const line = (entry: LedgerEntry) => `${entry.id}: ${oneLine(entry.text)}${entry.reason === undefined ? '' : ` (because: ${oneLine(entry.reason)})`}`
  const groups: [string, LedgerEntry[]][] = [
    ['Facts', view.facts],
    ['Assumptions (valid)', view.assumptions.filter((entry) => entry.valid)],
  ]
  if (options.decisions ?? true) groups.push(['Decisions', view.decisions])
  return groups
    .filter(([, entries]) => entries.length > 0)
    .map(([title, entries]) => `${title}:\n${entries.map(line).join('\n')}`)
    .join('\n\n')
}

function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim()
  return flat.length <= ENTRY_CHARS ? flat : `${flat.slice(0, ENTRY_CHARS)}...`
}
