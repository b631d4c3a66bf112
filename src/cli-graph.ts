import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { parseArgs } from 'node:util'
import { count, displayPath, EXIT, onlyPositional, printable, UsageError, vaultFolder, vaultReadFailure, type Io } from './cli-support.js'
import { PlanValidationError } from './errors.js'
import type { PictureState } from './plan-picture.js'

export const GRAPH_HELP = `Usage: vaultplan graph <vault> [--format mermaid|dot] [--write]

Prints the plan in <vault> as a picture: edge labels on the arrows, the start
and the terminals marked. When the vault holds a run, each note shows its
visits against its budget, as in 'review (2/3)', and its status as a colour:
grey pending, amber active, green done, blue waiting.

Options:
  --format F     mermaid (default) or dot; render DOT with Graphviz: dot -Tsvg
  --write        write the mermaid picture into the note
                 <vault>/00_plan-trace/plan-graph.md, which Obsidian renders in
                 place, and print where
  -h, --help     show this help

Exit codes: 0 done (an invalid plan is pictured too, with a note on stderr),
1 the vault's trace is unreadable, 2 bad usage or a vault path that is not a
folder, 70 internal error.`

/** The note `--write` writes, relative to the vault. */
export const GRAPH_NOTE = '00_plan-trace/plan-graph.md'

/** `vaultplan graph`: the plan as mermaid or DOT, with the run's state; `--write` puts it in a note. */
export async function graphCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { format: { type: 'string' }, write: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  })
  const dir = onlyPositional(positionals, 'the vault folder')
  const format = values.format ?? 'mermaid'
  if (format !== 'mermaid' && format !== 'dot') throw new UsageError(`--format takes mermaid or dot, got '${format}'`)
  if (values.write && format !== 'mermaid') throw new UsageError('--write writes a mermaid block for Obsidian; leave out --format dot')
  const vault = await vaultFolder(dir, io)
  const [{ loadPlan }, { readTrace }, { visitsOf }, picture] = await Promise.all([
    import('./markdown-io.js'),
    import('./trace.js'),
    import('./run-status.js'),
    import('./plan-picture.js'),
  ])
  let graph
  let trace
  try {
    graph = await loadPlan(vault)
    trace = await readTrace(vault)
  } catch (error) {
    return vaultReadFailure(dir, error, io)
  }
  const shown = displayPath(io.cwd, vault)
  try {
    graph.validate()
  } catch (error) {
    if (!(error instanceof PlanValidationError)) throw error
    const errors = error.issues.filter((issue) => issue.severity === 'error').length
    io.stderr.write(`vaultplan: the plan has ${count(errors, 'error')}; \`vaultplan validate ${printable(shown)}\` lists them\n`)
  }
  const state: PictureState | undefined = trace ? { visits: visitsOf(trace.records) } : undefined
  const text = format === 'dot' ? picture.toDot(graph, state) : picture.toMermaid(graph, state)
  if (!values.write) {
    // Ids and labels are text notes wrote.
    io.stdout.write(printable(text))
    return EXIT.ok
  }
  const { writeFileAtomic } = await import('./fs-atomic.js')
  const file = join(vault, GRAPH_NOTE)
  await mkdir(join(file, '..'), { recursive: true })
  await writeFileAtomic(file, graphNote(text, trace !== undefined))
  io.stdout.write(`wrote ${printable(join(shown, GRAPH_NOTE))}\n`)
  return EXIT.ok
}

/** A note that Obsidian renders as the picture, with a line on how to read it. */
function graphNote(mermaid: string, withRun: boolean): string {
  const legend = withRun
    ? 'Colours: grey pending, amber active, green done, blue waiting; `(2/3)` is visits of the budget `max_visits`.'
    : 'No run yet: statuses and visits appear once the vault has run.'
  return [
    '---',
    'vaultplan: plan-graph',
    `written: ${new Date().toISOString()}`,
    '---',
    '# Plan graph',
    '',
    `The plan of this vault, written by \`vaultplan graph --write\`; run it again to refresh. ${legend}`,
    '',
    '```mermaid',
    mermaid.trimEnd(),
    '```',
    '',
  ].join('\n')
}
