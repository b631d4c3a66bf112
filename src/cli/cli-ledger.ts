import { parseArgs } from 'node:util'
import {
  count,
  displayPath,
  EXIT,
  onlyPositional,
  painter,
  printable,
  printableJson,
  vaultFolder,
  vaultReadFailure,
  type Io,
  type Paint,
} from './cli-support.js'
import type { LedgerEntry, LedgerView } from '../memory/ledger.js'

export const LEDGER_HELP = `Usage: vaultplan ledger <vault> [--json]

Shows the ledger of the plan vault in <vault> (00_plan-trace/ledger.md):
the facts, assumptions (valid or invalidated, with the reason) and decisions
its runs recorded, each with its id, the note and step that recorded it.
Reads only; changes nothing.

Options:
  --json         print {"facts":[...],"assumptions":[...],"decisions":[...]} on stdout and nothing else
  -h, --help     show this help

Exit codes: 0 the ledger was read (an empty one included), 1 the ledger is
unreadable or of a newer format, 2 bad usage or a vault path that is not a
folder, 70 internal error.`

/** `vaultplan ledger`: a vault's facts, assumptions and decisions, as a list or as JSON. */
export async function ledgerCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { json: { type: 'boolean' } }, allowPositionals: true, strict: true })
  const dir = onlyPositional(positionals, 'the vault folder')
  const vault = await vaultFolder(dir, io)
  const { readLedger } = await import('../memory/ledger.js')
  let view: LedgerView
  try {
    view = await readLedger(vault)
  } catch (error) {
    return vaultReadFailure(dir, error, io, values.json === true)
  }
  if (values.json) {
    io.stdout.write(`${printableJson(view, 2)}\n`)
    return EXIT.ok
  }
  io.stdout.write(render(view, displayPath(io.cwd, vault), painter(io)))
  return EXIT.ok
}

function render(view: LedgerView, shown: string, paint: Paint): string {
  const valid = view.assumptions.filter((entry) => entry.valid).length
  const out = [
    `${shown}: ${count(view.facts.length, 'fact')}, ${count(view.assumptions.length, 'assumption')} (${valid} valid), ${count(view.decisions.length, 'decision')}`,
  ]
  if (view.facts.length + view.assumptions.length + view.decisions.length === 0) {
    out.push('', 'Nothing recorded yet: workers record with the tools record_fact, record_assumption and record_decision.')
    return `${out.join('\n')}\n`
  }
  if (view.facts.length > 0) out.push('', 'Facts:', ...view.facts.flatMap((entry) => lines(entry)))
  if (view.assumptions.length > 0) {
    out.push('', 'Assumptions:')
    for (const entry of view.assumptions) {
      const last = entry.changes.at(-1)
      const standing = entry.valid ? paint('valid', 'green') : paint('invalid', 'red')
      out.push(...lines(entry, standing))
      if (last?.reason !== undefined) out.push(`      ${entry.valid ? 'valid again' : 'invalidated'}: ${indent(last.reason)}${where(last)}`)
    }
  }
  if (view.decisions.length > 0) out.push('', 'Decisions:', ...view.decisions.flatMap((entry) => lines(entry)))
  return `${out.join('\n')}\n`
}

/** An entry: its id, text (continuation lines indented), reason and where it was recorded. */
function lines(entry: LedgerEntry, standing?: string): string[] {
  const head = `  ${entry.id.padEnd(4)}${standing === undefined ? '' : `[${standing}] `}${indent(entry.text)}${where(entry)}`
  return entry.reason === undefined ? [head] : [head, `      because: ${indent(entry.reason)}`]
}

function where(entry: { node?: string; step?: number }): string {
  const parts = [entry.node === undefined ? undefined : printable(entry.node), entry.step === undefined ? undefined : `step ${entry.step}`].filter(
    (part) => part !== undefined,
  )
  return parts.length === 0 ? '' : `  (${parts.join(', ')})`
}

function indent(text: string): string {
  return printable(text).replace(/\r?\n/g, '\n      ')
}
