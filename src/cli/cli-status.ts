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
  shellWord,
  vaultFolder,
  vaultReadFailure,
  type Io,
  type Paint,
} from './cli-support.js'
import { formatIssue } from '../core/errors.js'
import type { HopSummary, RunStatus } from '../run/read/run-status.js'
import { FINAL_FILE, TRACE_FOLDER } from '../vault/run-folder.js'
import { reasonFor, stepBudgetKnob } from '../run/core/reason-for.js'

export const STATUS_HELP = `Usage: vaultplan status <vault> [--json]

Tells where the run of the plan vault in <vault> stands: fresh, running,
interrupted, waiting for a person, stopped by a budget, completed, or invalid;
each note's status and visits against its budget; the last hops and who
decided them; and what to do next. Reads only; changes nothing.

Options:
  --json         print the status as JSON on stdout and nothing else
  -h, --help     show this help

Exit codes: 0 the status was read, 1 the plan is invalid (or its trace
unreadable), 2 bad usage or a vault path that is not a folder, 70 internal error.`

/** `vaultplan status`: where a vault's run stands, as a table or as JSON. */
export async function statusCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({ args, options: { json: { type: 'boolean' } }, allowPositionals: true, strict: true })
  const dir = onlyPositional(positionals, 'the vault folder')
  const vault = await vaultFolder(dir, io)
  const shown = displayPath(io.cwd, vault)
  const { readRunStatus } = await import('../run/read/run-status.js')
  let status: RunStatus
  try {
    status = await readRunStatus(vault)
  } catch (error) {
    return vaultReadFailure(dir, error, io, values.json === true)
  }
  const code = status.phase === 'invalid' ? EXIT.invalid : EXIT.ok
  if (values.json) {
    io.stdout.write(`${printableJson(status, 2)}\n`)
    return code
  }
  io.stdout.write(render(status, shown, painter(io), io.self ?? 'vaultplan'))
  return code
}

/**
 * What to do next, as a sentence naming the commands to type, rendered from
 * `status.next` (the library gives data; the CLI words it).
 *
 * @param shown - the vault as the user typed it
 */
export function nextSentence(status: RunStatus, shown: string, self = 'vaultplan'): string {
  const run = `${self} run ${shellWord(shown)}`
  const next = status.next
  const fileOf = (id: string | undefined) => status.nodes.find((node) => node.id === id)?.file ?? `${id}.md`
  const at = next.plan === undefined ? next.node : `${next.plan}/${next.node}`
  switch (next.kind) {
    case 'invalid': {
      const errors = status.issues.filter((issue) => issue.severity === 'error')
      // An error at a line is usually the cause of those about the whole plan (a dangling edge leaves a loop without exit).
      const first = errors.find((issue) => issue.line !== undefined) ?? errors[0]
      const place = first?.file !== undefined ? `\`${join(shown, first.file)}\`${first.line !== undefined ? ` line ${first.line}` : ''}: ` : ''
      const where = first ? ` (start with ${place}${first.message})` : ''
      return (
        `Fix the plan's ${errors.length === 1 ? 'error' : `${errors.length} errors`}${where}, then ` +
        `check with \`${self} validate ${shellWord(shown)}\`; a run refuses an invalid plan, and ` +
        `the vault stays resumable.`
      )
    }
    case 'fresh':
      return `Start the run: \`${run} --query "..."\`.${next.node === undefined ? '' : ` It starts at \`${next.node}\`.`}`
    case 'two-active': {
      const files = (next.nodes ?? []).map((id) => `\`${fileOf(id)}\``).join(', ')
      return `Two notes are \`status: active\` (${files}); a run is at one node at a time. Set all but one to \`done\` or \`pending\`, then \`${run}\`.`
    }
    case 'work':
    case 'judge':
      // A waiting note with its box ticked: the sentence names the box the run goes on along.
      if (status.phase === 'waiting') return waitingSentence(status, shown, run)
      if (next.missing)
        return `The run is at \`${next.node}\`, but the vault has no such note any more. Restore it, or set another note \`status: active\` to move the run there, then \`${run}\`.`
      if (status.phase === 'stopped' && status.budget === 'max_visits') {
        return `\`max_visits\` of \`${status.node}\` is ${status.nodes.find((node) => node.id === status.node)?.maxVisits} now, enough for visit ${status.visit}: \`${run}\` to go on.`
      }
      if (status.phase === 'stopped') return stepBudgetSentence(status, run)
      if (status.phase === 'running')
        return `A run is working in the vault now, at \`${at}\` (visit ${next.visit}); watch it in your notes app, or ask for the status again later.`
      return `Resume the run: \`${run}\` (it goes on at \`${at}\`, visit ${next.visit}).`
    case 'waiting': {
      // Inside a subplan: the note waits in its folder.
      if (next.plan !== undefined)
        return `Tick one box under \`## Next\` in \`${join(shown, next.plan, `${next.node}.md`)}\` (write under \`## Feedback\` if you like), then \`${run}\`.`
      if (status.phase !== 'waiting') return `\`${run}\``
      return waitingSentence(status, shown, run)
    }
    case 'stopped':
      if (status.phase === 'waiting') return waitingSentence(status, shown, run)
      if (status.phase === 'stopped' && status.budget === 'maxSteps') return stepBudgetSentence(status, run)
      return `Raise \`max_visits\` in \`${join(shown, fileOf(next.node))}\` above ${(next.visit ?? 1) - 1} (or change the plan), then \`${run}\`.`
    case 'completed':
      return `Nothing to do: the run is complete. Read \`${join(shown, TRACE_FOLDER, FINAL_FILE)}\`, or start over with \`${run} --fresh\`.`
    case 'plan':
      // An agent's proposal is revised by the agent, never by a model the run would call.
      if (status.proposal?.planner === 'agent') return 'The proposal was sent back to the agent that proposed it: it waits for its next version.'
      return `A proposal waits to be revised: \`${run}\`.`
    case 'declined':
      return `The proposal was declined: its plan never runs. Propose again for a new plan: \`vaultplan propose "..." --into DIR\`.`
  }
}

/** What a person does for the note a run waits on: tick a box, or, with one ticked, run the vault. */
function waitingSentence(status: RunStatus & { phase: 'waiting' }, shown: string, run: string): string {
  const where = `\`${join(shown, status.file)}\``
  const ticked = status.boxes.filter((box) => box.checked)
  const unboxed = status.boxes.find((box) => !box.box)
  // An item written without a box is ticked by writing one: `- [x] approved -> [[send]]`.
  const how = unboxed ? `; an item without a box is ticked by writing one: \`- [x] ${boxLabel(unboxed)}\`` : ''
  if (status.proposal && status.node === 'proposal' && ticked.length === 0)
    return `Tick \`approve\`, \`revise\` (with what must change under \`## Feedback\`) or \`decline\` in ${where}, then \`${run}\`.`
  if (ticked.length === 0 && status.deadline !== undefined && status.next.kind !== 'waiting')
    return `Its deadline passed (${status.deadline}) with no box ticked: \`${run}\` to go on along \`timeout\`.`
  if (ticked.length === 0) return `Tick one box under \`## Next\` in ${where}${how} (write under \`## Feedback\` if you like), then \`${run}\`.`
  if (status.proposal && status.node === 'proposal' && ticked.length === 1) return `\`${ticked[0]!.label}\` is ticked: \`${run}\` to go on.`
  if (ticked.length === 1) return `\`${boxLabel(ticked[0]!)}\` is ticked: \`${run}\` to go on along it.`
  return `${ticked.length} boxes are ticked in ${where}; untick all but one, then \`${run}\`.`
}

function stepBudgetSentence(status: RunStatus, run: string): string {
  const steps = status.run?.steps ?? 0
  return `Run again with a larger step budget: \`${run} --max-steps ${Math.max(steps * 2, steps + 10)}\`.`
}

function boxLabel(box: { label: string; target: string }): string {
  return `${box.label || 'next'} -> [[${box.target}]]`
}

/**
 * The status for a person: a headline, the nodes as a table, the last hops,
 * the phase's details, what to do next. Note ids, labels, the query and the
 * output are text a note or a model wrote: printed through `printable`.
 */
function render(status: RunStatus, shown: string, paint: Paint, self: string): string {
  const lines = renderLines(status, shown, self)
  return `${[`${printable(shown)}: ${headline(status, paint)}`, ...lines.map(printable)].join('\n')}\n`
}

function renderLines(status: RunStatus, shown: string, self: string): string[] {
  const out: string[] = []
  if (status.run) out.push(`run ${status.run.id}, ${count(status.run.steps, 'step')}, query: ${printableJson(status.run.query)}`)
  out.push('', ...table(status))
  if (status.hops.length > 0) out.push('', 'Last hops:', ...hopLines(status.hops))
  const claims = status.claims ?? []
  if (claims.length > 0)
    out.push('', 'Claimed by agents:', ...claims.map((item) => `  ${item.node} (visit ${item.visit}): ${item.claim!.agent}, until ${item.claim!.until}`))
  if (status.phase === 'waiting') {
    // A proposal's boxes sit under `## Decision` and lead to no note.
    const proposal = status.proposal !== undefined && status.node === 'proposal'
    out.push('', `Under ## ${proposal ? `Decision (proposal v${status.proposal!.version})` : 'Next'} in ${join(shown, status.file)}:`)
    for (const box of status.boxes)
      out.push(`  ${box.box ? `[${box.checked ? 'x' : ' '}]` : '-  '} ${proposal ? box.label : `${box.label ? `${box.label} ` : ''}-> ${box.target}`}`)
    if (status.deadline !== undefined)
      out.push(`Deadline: ${status.deadline}${status.overdue ? ' (overdue: the note has no `timeout` edge, it keeps waiting)' : ''}`)
  } else if (status.phase === 'stopped') {
    out.push('', reasonFor('cli', status.reason))
  } else if (status.phase === 'completed') {
    out.push('', 'Final output:', ...status.output.split('\n').map((line) => `  ${line}`))
  }
  const errors = status.issues.filter((issue) => issue.severity === 'error')
  if (errors.length > 0) {
    out.push('', ...status.issues.map((issue) => formatIssue(issue.file === undefined ? issue : { ...issue, file: join(shown, issue.file) })))
  } else if (status.issues.length > 0) {
    out.push('', `${count(status.issues.length, 'warning')}: \`${self} validate ${shellWord(shown)}\` lists them.`)
  }
  out.push('', `Next: ${nextSentence(status, shown, self)}`)
  return out
}

function headline(unsafe: RunStatus, paint: Paint): string {
  const status = 'node' in unsafe && unsafe.node !== undefined ? { ...unsafe, node: printable(unsafe.node) } : unsafe
  switch (status.phase) {
    case 'fresh':
      if (status.next.kind === 'declined') return `${paint('declined', 'red')}: the proposal was declined, its plan never runs`
      return `${paint('fresh', 'green')}, no run yet${status.node === undefined ? '' : ` (starts at ${status.node})`}`
    case 'running':
      return `${paint('running', 'green')} at ${status.node} (visit ${status.visit}, step ${status.step})`
    case 'interrupted':
      return `${paint('interrupted', 'yellow')} at ${status.node} (visit ${status.visit}, step ${status.step})`
    case 'waiting':
      if (status.proposal && status.node === 'proposal')
        return `${paint('waiting', 'yellow')} for a person to approve, revise or decline proposal v${status.visit}`
      return `${paint('waiting', 'yellow')} for a person at ${status.node} (visit ${status.visit})`
    case 'stopped':
      return `${paint('stopped', 'yellow')} by ${status.budget === 'maxSteps' ? stepBudgetKnob('cli') : status.budget} at ${status.node} (visit ${status.visit} refused)`
    case 'completed':
      return `${paint('completed', 'green')} at ${status.node}`
    case 'invalid': {
      const errors = status.issues.filter((issue) => issue.severity === 'error').length
      return `${paint('invalid', 'red')} plan, ${count(errors, 'error')}`
    }
  }
}

/** One row a note: a marker for where the run is, the id, its status, visits of budget, start or terminal. */
function table(status: RunStatus): string[] {
  // One marker: inside a subplan the row of the note the run goes on at, else the top note's.
  const next = status.next
  const at = next.plan !== undefined && next.node !== undefined ? `${next.plan}/${next.node}` : 'node' in status ? status.node : undefined
  const rows = tableRows(status, '', '', at)
  const header = [' ', 'NODE', 'STATUS', 'VISITS', '']
  const widths = header.map((cell, column) => Math.max(width(cell), ...rows.map((row) => width(row[column]!))))
  return [header, ...rows].map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : pad(cell, widths[column]!)))
      .join('  ')
      .trimEnd(),
  )
}

/** The rows of a vault's notes, each subplan's nested under its note (indented, by its path from the top vault, with its phase). */
function tableRows(status: RunStatus, prefix: string, indent: string, at: string | undefined): string[][] {
  return status.nodes.flatMap((node) => [
    [
      prefix + node.id === at ? '>' : ' ',
      indent + printable(prefix + node.id),
      node.status,
      `${node.visits}/${node.maxVisits}`,
      [
        node.start ? 'start' : '',
        node.terminal ? 'terminal' : '',
        ...(node.subplans ?? []).map((sub) => `subplan ${printable(prefix + sub.folder)}/: ${sub.status.phase}`),
      ]
        .filter(Boolean)
        .join(', '),
    ],
    ...(node.subplans ?? []).flatMap((sub) => tableRows(sub.status, `${prefix}${sub.folder}/`, `${indent}  `, at)),
  ])
}

function hopLines(hops: HopSummary[]): string[] {
  const rows = hops.map((hop) => {
    const edge = hop.edge
      ? `${hop.edge.label ? `${hop.edge.label} ` : ''}-> ${hop.edge.target}`
      : hop.decidedBy === 'terminal'
        ? 'end'
        : `-> ${hop.node} (again)`
    const unticked = hop.unticked ? printable(`; unticked ${hop.unticked.join(', ')}`) : ''
    return [`step ${hop.step}`, printable(`${hop.node} (visit ${hop.visit})`), printable(edge), `[${hop.decidedBy}${unticked}]`]
  })
  const widths = [0, 1, 2].map((column) => Math.max(...rows.map((row) => width(row[column]!))))
  return rows.map((row) => `  ${row.map((cell, column) => (column < 3 ? pad(cell, widths[column]!) : cell)).join('  ')}`)
}

/** Columns as a terminal shows them: a wide character (CJK, emoji) takes two. */
function width(text: string): number {
  let columns = 0
  for (const char of text)
    columns += /[\u1100-\u115F\u2E80-\uA4CF\uAC00-\uD7A3\uF900-\uFAFF\uFE30-\uFE4F\uFF00-\uFF60\uFFE0-\uFFE6]|\p{Extended_Pictographic}/u.test(char)
      ? 2
      : /\p{M}/u.test(char)
        ? 0
        : 1
  return columns
}

function pad(text: string, columns: number): string {
  return text + ' '.repeat(Math.max(0, columns - width(text)))
}
