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
import type { RunStatus } from '../run/read/run-status.js'
import type { SnapshotHop, SnapshotNode } from '../run/core/run-snapshot.js'
import { FINAL_FILE, TRACE_FOLDER } from '../vault/run-folder.js'
import { reasonFor, stepBudgetKnob } from '../run/core/reason-for.js'
import { personChoices } from '../run/core/deadline.js'
import { checksToAsk, resumeCommand } from './cli-resume.js'

export const STATUS_HELP = `Usage: vaultplan status <vault> [--json]

Tells where the run of the plan vault in <vault> stands: fresh, ready,
waiting for a person, stopped by a budget, completed, declined or invalid
(and whether a runner or an agent holds it); each note's status and visits
against its budget; the last hops and who decided them; and what to do
next. Reads only; changes nothing.

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
  io.stdout.write(render(status, shown, painter(io), io.self ?? 'vaultplan', await checksToAsk(vault, io.cwd)))
  return code
}

/**
 * What to do next, as a sentence naming the commands to type, rendered from
 * `status.next` (the library gives data; the CLI words it).
 *
 * @param shown - the vault as the user typed it
 * @param checks - the checks its notes name that a run must be given (`--check NAME='...'`)
 */
export function nextSentence(status: RunStatus, shown: string, self = 'vaultplan', checks: readonly string[] = []): string {
  const run = resumeCommand(self, shown, {}, checks)
  const next = status.next
  const fileOf = (id: string | undefined) => [...everyNote(status.nodes)].find(({ node }) => node.id === id)?.node.file ?? `${id}.md`
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
      // An approved proposal runs with the query it was proposed for.
      if (status.proposal) return `Start the run of the approved proposal: \`${run}\`.${next.node === undefined ? '' : ` It starts at \`${next.node}\`.`}`
      return `Start the run: \`${run} --query "..."\`.${next.node === undefined ? '' : ` It starts at \`${next.node}\`.`}`
    case 'two-active': {
      const files = (next.nodes ?? []).map((id) => `\`${fileOf(id)}\``).join(', ')
      return `Two notes are \`status: active\` (${files}); a run is at one node at a time. Set all but one to \`done\` or \`pending\`, then \`${run}\`.`
    }
    case 'work':
    case 'judge':
      if (next.missing)
        return `The run is at \`${next.node}\`, but the vault has no such note any more. Restore it, or set another note \`status: active\` to move the run there, then \`${run}\`.`
      if (status.holder)
        return `A run is working in the vault now, at \`${next.node}\` (visit ${next.visit}); watch it in your notes app, or ask for the status again later.`
      return `Resume the run: \`${run}\` (it goes on at \`${next.node}\`, visit ${next.visit}).`
    case 'waiting':
      return waitingSentence(status, shown, run)
    case 'stopped':
      if (status.stop?.budget === 'maxSteps') return stepBudgetSentence(status, run)
      return `Raise \`max_visits\` in \`${join(shown, fileOf(next.node))}\` above ${(next.visit ?? 1) - 1} (or change the plan), then \`${run}\`.`
    case 'completed':
      return `Nothing to do: the run is complete. Read \`${join(shown, TRACE_FOLDER, FINAL_FILE)}\`, or start over with \`${run} --fresh\`.`
    case 'plan':
      // An agent's proposal is revised by the agent, never by a model the run would call.
      if (status.proposal?.planner === 'agent') return 'The proposal was sent back to the agent that proposed it: it waits for its next version.'
      if (next.node === 'proposal') return `A proposal waits to be revised: \`${run}\`.`
      return `A planner call is due at \`${next.node}\`: \`${run}\`.`
    case 'declined':
      return `The proposal was declined: its plan never runs. Propose again for a new plan: \`${self} propose "..." --into DIR\`.`
  }
}

/** What a person does for the notes a run waits on: tick a box, unblock a step, decide a proposal. */
function waitingSentence(status: RunStatus, shown: string, run: string): string {
  const note = status.waiting[0]
  if (!note) return `\`${run}\``
  const where = `\`${join(shown, note.file)}\``
  const more = status.waiting.length > 1 ? ` (${status.waiting.length - 1} more ${status.waiting.length === 2 ? 'waits' : 'wait'} too, listed above)` : ''
  if (note.kind === 'proposal') return `Tick \`approve\`, \`revise\` (with what must change under \`## Feedback\`) or \`decline\` in ${where}, then \`${run}\`.`
  if (note.kind === 'blocked') return `An agent blocked \`${note.node}\`: set \`status: pending\` in ${where} to unblock it${more}, then \`${run}\`.`
  return `Tick one box under \`## Next\` in ${where} (write under \`## Feedback\` if you like)${more}, then \`${run}\`.`
}

function stepBudgetSentence(status: RunStatus, run: string): string {
  const steps = status.steps
  return `Run again with a larger step budget: \`${run} --max-steps ${Math.max(steps * 2, steps + 10)}\`.`
}

/** Characters of the final output shown in a status. */
const EXCERPT = 400

/** The start of a final output, as a status shows it. */
function excerpt(output: string): string {
  const trimmed = output.trim()
  return trimmed.length > EXCERPT ? `${trimmed.slice(0, EXCERPT).trimEnd()}…` : trimmed
}

/**
 * The status for a person: a headline, the nodes as a table, the last hops,
 * the phase's details, what to do next. Note ids, labels, the query and the
 * output are text a note or a model wrote: printed through `printable`.
 */
function render(status: RunStatus, shown: string, paint: Paint, self: string, checks: readonly string[]): string {
  const lines = renderLines(status, shown, self, checks)
  return `${[`${printable(shown)}: ${headline(status, paint)}`, ...lines.map(printable)].join('\n')}\n`
}

function renderLines(status: RunStatus, shown: string, self: string, checks: readonly string[]): string[] {
  const out: string[] = []
  if (status.run) out.push(`run ${status.run.id}, ${count(status.steps, 'step')} of ${status.maxSteps}, query: ${printableJson(status.run.query)}`)
  if (status.holder) out.push(`Held by a runner: process ${status.holder.pid} on ${status.holder.host}, since ${status.holder.since}`)
  out.push('', ...table(status))
  if (status.hops.length > 0) out.push('', 'Last hops:', ...hopLines(status.hops))
  if (status.claims.length > 0)
    out.push('', 'Claimed by agents:', ...status.claims.map((item) => `  ${item.node} (visit ${item.visit}): ${item.claim!.agent}, until ${item.claim!.until}`))
  if (status.waiting.length > 0) {
    out.push('', 'Waiting for a person:')
    for (const note of status.waiting) {
      const why = note.kind === 'blocked' ? `blocked${note.reason ? `: ${note.reason}` : ''}` : `choices ${personChoices(note).join(', ')}`
      const proposal = note.kind === 'proposal' && status.proposal ? ` (proposal v${status.proposal.version})` : ''
      out.push(`  ${note.node}${proposal} in ${join(shown, note.file)}: ${why}`)
      if (note.deadline !== undefined)
        out.push(
          `    deadline ${note.deadline}${note.overdue ? ' (overdue: the note has no `timeout` edge, it keeps waiting)' : note.choices.length > personChoices(note).length ? ' (then its `timeout` edge is taken)' : ''}`,
        )
    }
  }
  if (status.phase === 'stopped' && status.stop) out.push('', reasonFor('cli', status.stop.reason))
  if (status.phase === 'completed' && status.result)
    out.push(
      '',
      'Final output:',
      ...excerpt(status.result.output)
        .split('\n')
        .map((line) => `  ${line}`),
    )
  const errors = status.issues.filter((issue) => issue.severity === 'error')
  if (errors.length > 0) {
    out.push('', ...status.issues.map((issue) => formatIssue(issue.file === undefined ? issue : { ...issue, file: join(shown, issue.file) })))
  } else if (status.issues.length > 0) {
    out.push('', `${count(status.issues.length, 'warning')}: \`${self} validate ${shellWord(shown)}\` lists them.`)
  }
  out.push('', `Next: ${nextSentence(status, shown, self, checks)}`)
  if (checks.length > 0 && status.phase !== 'completed' && status.phase !== 'declined')
    out.push(
      `The notes name the check${checks.length === 1 ? '' : 's'} ${checks.map((name) => `\`${name}\``).join(', ')}: put ${checks.length === 1 ? 'its command' : "each one's command"} in place of '...', as the run that started it was given (checks come from whoever runs the plan, never from the vault; \`vaultplan.config.json\` in the folder you run from may define them instead).`,
    )
  return out
}

function headline(status: RunStatus, paint: Paint): string {
  const next = status.next
  const at = next.node === undefined ? '' : printable(next.node)
  switch (status.phase) {
    case 'fresh':
      return `${paint('fresh', 'green')}, no run yet${at === '' ? '' : ` (starts at ${at})`}`
    case 'ready': {
      const held = status.holder
        ? ', a runner works in it now'
        : status.claims.length > 0
          ? `, claimed by ${[...new Set(status.claims.map((item) => item.claim!.agent))].join(', ')}`
          : ''
      return `${paint('ready', 'green')} at ${at} (visit ${next.visit}, step ${next.step})${held}`
    }
    case 'waiting':
      if (next.node === 'proposal' && status.proposal)
        return `${paint('waiting', 'yellow')} for a person to approve, revise or decline proposal v${status.proposal.version}`
      return `${paint('waiting', 'yellow')} for a person at ${status.waiting.map((note) => printable(note.node)).join(', ')}`
    case 'stopped':
      return `${paint('stopped', 'yellow')} by ${status.stop?.budget === 'maxSteps' ? stepBudgetKnob('cli') : status.stop?.budget} at ${at} (visit ${next.visit} refused)`
    case 'completed':
      return `${paint('completed', 'green')} at ${at}`
    case 'declined':
      return `${paint('declined', 'red')}: the proposal was declined, its plan never runs`
    case 'invalid': {
      const errors = status.issues.filter((issue) => issue.severity === 'error').length
      return `${paint('invalid', 'red')} plan, ${count(errors, 'error')}`
    }
  }
}

/** One row a note: a marker for where the run is, the id (a subplan's notes by their path, indented under their note), its status, visits of budget, start or terminal. */
function table(status: RunStatus): string[] {
  const rows = tableRows(status.nodes, status.next.node)
  const header = [' ', 'NODE', 'STATUS', 'VISITS', '']
  const widths = header.map((cell, column) => Math.max(width(cell), ...rows.map((row) => width(row[column]!))))
  return [header, ...rows].map((row) =>
    row
      .map((cell, column) => (column === row.length - 1 ? cell : pad(cell, widths[column]!)))
      .join('  ')
      .trimEnd(),
  )
}

/** The rows of the notes, each subplan's nested under its note (indented, by its path from the top vault). */
function tableRows(nodes: readonly SnapshotNode[], at: string | undefined): string[][] {
  return [...everyNote(nodes)].map(({ node, depth }) => [
    node.id === at ? '>' : ' ',
    '  '.repeat(depth) + printable(node.id),
    node.status,
    `${node.visits}/${node.maxVisits}`,
    [node.start ? 'start' : '', node.terminal ? 'terminal' : '', ...(node.subplans ?? []).map((sub) => `subplan ${printable(sub.folder)}/`)]
      .filter(Boolean)
      .join(', '),
  ])
}

/** Every note of a status, each subplan's after its note, with how deep it is nested. */
function* everyNote(nodes: readonly SnapshotNode[], depth = 0): Generator<{ node: SnapshotNode; depth: number }> {
  for (const node of nodes) {
    yield { node, depth }
    for (const sub of node.subplans ?? []) yield* everyNote(sub.nodes, depth + 1)
  }
}

function hopLines(hops: SnapshotHop[]): string[] {
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
