import { join } from 'node:path'
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
import { formatIssue } from '../core/errors.js'
import { runnerChecks } from './cli-checks.js'
import type { PlanIssue } from '../core/types.js'

export const VALIDATE_HELP = `Usage: vaultplan validate <dir> [--json] [--tools a,b] [--check ...]

Checks the plan vault in <dir> and prints every problem, one per line, as
<file>:<line>:<column> <severity> <code> <message>, then a summary line.

Options:
  --json         print {"valid":bool,"issues":[...]} on stdout and nothing else
  --tools a,b    the tools your agent supplies (comma-separated, may be
                 repeated); a note naming another one gets a warning
  --check NAME='CMD'
                 define the check a note's \`check: NAME\` names (may be
                 repeated); else the \`checks\` of vaultplan.config.json in
                 the working folder (refused when that folder is in the
                 vault); a note naming another is an error
  -h, --help     show this help

Exit codes: 0 valid (warnings allowed), 1 the plan has errors,
2 bad usage or a vault path that is not a folder, 70 internal error.`

/** `vaultplan validate <dir>`: every problem of the plan, one line each, then a summary; exit 1 on errors. */
export async function validateCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { json: { type: 'boolean' }, tools: { type: 'string', multiple: true }, check: { type: 'string', multiple: true } },
    allowPositionals: true,
    strict: true,
  })
  const dir = onlyPositional(positionals, 'the vault folder')
  const tools = values.tools
    ?.flatMap((list) => list.split(','))
    .map((tool) => tool.trim())
    .filter(Boolean)
  const vault = await vaultFolder(dir, io)
  // The checks a run from here would have: a note naming another is an error, as it would be for the run.
  const checks = Object.keys((await runnerChecks({ check: values.check }, io.cwd, { folders: [vault], as: 'vault' })).checks)
  // Each command imports what it needs, so `--help` and the other commands do not pay for it.
  const { loadPlan } = await import('../plan/load-plan.js')
  let graph
  try {
    graph = await loadPlan(vault)
  } catch (error) {
    return vaultReadFailure(dir, error, io, values.json === true)
  }

  const checked = graph.check(tools ? { tools, checks } : { checks })
  const issues: PlanIssue[] = checked.issues
  const errors = checked.errors.length
  const code = errors > 0 ? EXIT.invalid : EXIT.ok

  if (values.json) {
    io.stdout.write(`${printableJson({ valid: errors === 0, issues }, 2)}\n`)
    return code
  }
  const paint = painter(io)
  const shown = displayPath(io.cwd, vault)
  for (const issue of issues) io.stdout.write(`${formatLine(issue, shown, paint)}\n`)
  const warnings = issues.length - errors
  const summary = `${shown}: ${count(graph.nodes.size, 'note')}, ${count(errors, 'error')}, ${count(warnings, 'warning')}`
  io.stdout.write(`${paint(summary, errors > 0 ? 'red' : 'green')}\n`)
  return code
}

/** One diagnostic line, its file shown from the working directory so editors can jump to it; note text made printable. */
function formatLine(unsafe: PlanIssue, vault: string, paint: Paint): string {
  const issue: PlanIssue = { ...unsafe, message: printable(unsafe.message) }
  if (unsafe.file !== undefined) issue.file = printable(unsafe.file)
  if (unsafe.node !== undefined) issue.node = printable(unsafe.node)
  const shown: PlanIssue = { ...issue }
  if (issue.file !== undefined) shown.file = join(vault, issue.file)
  else if (issue.node === undefined) shown.file = vault
  const line = formatIssue(shown)
  const tail = ` ${issue.severity} ${issue.code} ${issue.message}`
  if (!line.endsWith(tail)) return line
  const place = line.slice(0, line.length - tail.length)
  return `${place} ${paint(issue.severity, issue.severity === 'error' ? 'red' : 'yellow')} ${issue.code} ${issue.message}`
}
