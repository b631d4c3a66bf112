import { join } from 'node:path'
import { z } from 'zod'
import { RunStateError } from '../core/errors.js'
import { parseFrontmatter } from '../vault/frontmatter.js'
import { LEDGER_FILE } from '../vault/run-folder.js'
import { LEDGER_KINDS, type Assumption, type LedgerEntry, type LedgerKind, type LedgerView, type StandingChange } from '../core/ledger-types.js'

/*
 * The ledger's file format: how an entry is written into `00_plan-trace/ledger.md` (a heading and
 * quoted text for a person, a marker line with the record for vaultplan) and how the file is read back.
 */

/** The ledger format this version writes and reads. */
export const LEDGER_FORMAT = 1
const MARKER = '<!-- vaultplan:ledger '
const END = ' -->'

const place = { at: z.string(), node: z.string().optional(), step: z.number().int().min(0).optional(), run: z.string().optional() }
const recordSchema = z.discriminatedUnion('op', [
  z.object({
    op: z.literal('record'),
    kind: z.enum(['fact', 'assumption', 'decision']),
    id: z.string(),
    text: z.string(),
    reason: z.string().optional(),
    ...place,
  }),
  z.object({ op: z.literal('invalidate'), id: z.string(), reason: z.string(), ...place }),
  z.object({ op: z.literal('revalidate'), id: z.string(), reason: z.string().optional(), ...place }),
])
export type LedgerRecord = z.infer<typeof recordSchema>

/** The file's first lines: its frontmatter and a heading that says what it holds. */
export function header(): string {
  return `---\nvaultplan: ledger\nformat: ${LEDGER_FORMAT}\n---\n# Ledger\n\nFacts, assumptions and decisions this plan's runs rest on, appended as they are recorded. Ids are never reused.\n`
}

export function firstIds(): Record<LedgerKind, bigint> {
  return { fact: 1n, assumption: 1n, decision: 1n }
}

/** The next id's number once `seen` (digits) is taken: exact at any length, where a float would round. */
function after(next: bigint, seen: string): bigint {
  const taken = BigInt(seen) + 1n
  return taken > next ? taken : next
}

const HEADING = /^## ([FAD])([1-9]\d*) · (fact|assumption|decision)$/

/** Replays a ledger's text; `next` counts the headings of torn entries too, so an id seen once is never given again. */
export function replayLedger(text: string, vault: string): { view: LedgerView; next: Record<LedgerKind, bigint> } {
  const data = parseFrontmatter(text).data
  const format = Number(data.format)
  if (data.vaultplan !== 'ledger' || !Number.isInteger(format)) {
    throw new RunStateError('ledger-unreadable', `The ledger \`${join(vault, LEDGER_FILE)}\` has no vaultplan header; move it away to start a new one`, {
      file: join(vault, LEDGER_FILE),
    })
  }
  if (format > LEDGER_FORMAT) {
    throw new RunStateError(
      'ledger-too-new',
      `The ledger of \`${vault}\` was written in format ${format} by a newer vaultplan; this version reads format ${LEDGER_FORMAT}. Upgrade vaultplan to use it.`,
      { file: join(vault, LEDGER_FILE), format, supported: LEDGER_FORMAT },
    )
  }
  const view = emptyView()
  const next = firstIds()
  const byId = new Map<string, Assumption>()
  const seen = new Set<string>()
  const lines = text.split('\n')
  lines.forEach((raw, index) => {
    // An editor may have turned the line ends into CRLF; the entries stay readable.
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    const heading = HEADING.exec(line)
    if (heading) {
      const kind = heading[3] as LedgerKind
      next[kind] = after(next[kind], heading[2]!)
      return
    }
    if (!line.startsWith(MARKER) || !line.endsWith(END)) return
    let json: unknown
    try {
      json = JSON.parse(line.slice(MARKER.length, -END.length))
    } catch {
      return // an entry torn by a crash
    }
    const bad = (why: string) =>
      new RunStateError(
        'ledger-unreadable',
        `Line ${index + 1} of the ledger \`${join(vault, LEDGER_FILE)}\` ${why}; this version cannot read it. Move the ledger away or fix that line.`,
        { file: join(vault, LEDGER_FILE), line: index + 1 },
      )
    const parsed = recordSchema.safeParse(json)
    if (!parsed.success)
      throw bad(`is no entry this version knows (${parsed.error.issues.map((issue) => `${issue.path.join('.') || 'entry'}: ${issue.message}`).join('; ')})`)
    const record = parsed.data
    if (record.op === 'record') {
      const match = /^([FAD])([1-9]\d*)$/.exec(record.id)
      if (!match || match[1] !== LEDGER_KINDS[record.kind]) throw bad(`gives the ${record.kind} the id \`${record.id}\``)
      if (seen.has(record.id)) throw bad(`records \`${record.id}\` a second time`)
      seen.add(record.id)
      next[record.kind] = after(next[record.kind], match[2]!)
      const entry: LedgerEntry = { id: record.id, text: record.text, ...placeOf(record), at: record.at }
      if (record.reason !== undefined) entry.reason = record.reason
      if (record.run !== undefined) entry.run = record.run
      if (record.kind === 'fact') view.facts.push(entry)
      else if (record.kind === 'decision') view.decisions.push(entry)
      else {
        const assumption: Assumption = { ...entry, valid: true, changes: [] }
        view.assumptions.push(assumption)
        byId.set(record.id, assumption)
      }
      return
    }
    const assumption = byId.get(record.id)
    if (!assumption) throw bad(`changes \`${record.id}\`, which is no assumption recorded before it`)
    const change: StandingChange = { valid: record.op === 'revalidate', ...placeOf(record), at: record.at }
    if (record.reason !== undefined) change.reason = record.reason
    assumption.valid = change.valid
    assumption.changes.push(change)
  })
  return { view, next }
}

function placeOf(record: { node?: string | undefined; step?: number | undefined }): { node?: string; step?: number } {
  const out: { node?: string; step?: number } = {}
  if (record.node !== undefined) out.node = record.node
  if (record.step !== undefined) out.step = record.step
  return out
}

/** One entry as it is appended: heading, quoted text and reason, where, and the marker line. */
export function renderRecord(record: LedgerRecord): string {
  const lines = ['']
  if (record.op === 'record') {
    lines.push(`## ${record.id} · ${record.kind}`, '', ...quote(record.text))
  } else {
    lines.push(`## ${record.id} · ${record.op === 'invalidate' ? 'invalidated' : 'valid again'}`)
  }
  if (record.reason !== undefined) lines.push('', 'Because:', ...quote(record.reason))
  const where = [
    record.node === undefined ? '' : `[[${oneLine(record.node)}]]`,
    record.step === undefined ? '' : `step ${record.step}`,
    record.run === undefined ? '' : `run \`${oneLine(record.run).replace(/`/g, "'")}\``,
    record.at,
  ]
  lines.push('', `- ${record.op === 'record' ? 'Recorded' : 'Changed'}: ${where.filter(Boolean).join(', ')}`)
  // `<` and `>` escaped: nothing in the JSON can end the comment early.
  const json = JSON.stringify(record).replace(/</g, '\\u003c').replace(/>/g, '\\u003e')
  lines.push('', `${MARKER}${json}${END}`, '')
  return lines.join('\n')
}

/** Every line of a person's or a model's text quoted, so none can pass for a heading or a marker line. */
function quote(text: string): string[] {
  return text.split(/\r\n|\r|\n/).map((line) => `> ${line}`)
}

function oneLine(text: string): string {
  return text.replace(/[\r\n]+/g, ' ')
}

/** A ledger with nothing recorded. */
export function emptyView(): LedgerView {
  return { facts: [], assumptions: [], decisions: [] }
}
