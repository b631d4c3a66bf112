import { dirname, join, relative, sep } from 'node:path'
import { parseArgs } from 'node:util'
import { count, displayPath, EXIT, onlyPositional, printable, printableJson, UsageError, vaultFolder, vaultReadFailure, type Io } from './cli-support.js'
import type { PictureState } from '../plan/plan-picture.js'
import { GRAPH_FILES } from '../vault/run-folder.js'
import { statusColourWords } from '../plan/status-colours.js'
import { statOrNothing } from '../vault/stat-or-nothing.js'

export const GRAPH_HELP = `Usage: vaultplan graph <vault> [--format mermaid|dot|svg|canvas] [--write]

Prints the plan in <vault> as a picture: edge labels on the arrows, the start
and the terminals marked. When the vault holds a run, each note shows its
visits against its budget, as in 'review (2/3)', and its status as a colour:
${statusColourWords()}. The SVG has a legend.

Options:
  --format F     mermaid (default); dot (Graphviz's language); svg (the DOT
                 picture drawn in-process, no Graphviz install needed); canvas
                 (an Obsidian canvas: one card per note, clicking opens it)
  --write        write the picture into the vault instead of printing it, and
                 print where: mermaid into the note
                 <vault>/00_plan-trace/plan-graph.md, svg as its own file
                 <vault>/00_plan-trace/plan-graph.svg (the note is left as
                 it is), canvas as <vault>/00_plan-trace/plan.canvas
  -h, --help     show this help

Exit codes: 0 done (an invalid plan is pictured too, with a note on stderr),
1 the vault's trace is unreadable or the plan too large to lay out as SVG
(over 10 s), 2 bad usage or a vault path that is not a folder, 70 internal error.`

/** The files `--write` writes, relative to the vault. */
const FORMATS = ['mermaid', 'dot', 'svg', 'canvas'] as const

/** `vaultplan graph`: the plan as mermaid, DOT, SVG or a canvas, with the run's state; `--write` puts it in the vault. */
export async function graphCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { format: { type: 'string' }, write: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  })
  const dir = onlyPositional(positionals, 'the vault folder')
  const format = FORMATS.find((name) => name === (values.format ?? 'mermaid'))
  if (format === undefined) throw new UsageError(`--format takes ${FORMATS.join(', ')}, got '${values.format}'`)
  if (values.write && format === 'dot') throw new UsageError('--write writes mermaid, svg or canvas for Obsidian; DOT is printed only')
  const vault = await vaultFolder(dir, io)
  const [{ budgetOf, readRecords }, { snapshotOf, visitsOfSnapshot }, picture] = await Promise.all([
    import('../run/read/observe-run.js'),
    import('../run/core/run-snapshot.js'),
    import('../plan/plan-picture.js'),
  ])
  let records
  try {
    records = await readRecords(vault)
  } catch (error) {
    return vaultReadFailure(dir, error, io)
  }
  const { graph } = records
  const snapshot = snapshotOf(vault, records, { maxSteps: budgetOf(records), hops: 0 })
  const shown = displayPath(io.cwd, vault)
  const errors = records.issues.filter((issue) => issue.severity === 'error').length
  if (errors > 0) {
    io.stderr.write(`vaultplan: the plan has ${count(errors, 'error')}; \`vaultplan validate ${printable(shown)}\` lists them\n`)
  }
  // Visits as the run's snapshot counts them, the notes of subplans included.
  const state: PictureState | undefined = snapshot.run ? { visits: visitsOfSnapshot(snapshot) } : undefined
  let text: string
  if (format === 'svg') {
    const [{ toSvg }, { PictureTooLargeError }] = await Promise.all([import('../plan/plan-svg.js'), import('../core/errors.js')])
    try {
      text = await toSvg(graph, state)
    } catch (error) {
      if (!(error instanceof PictureTooLargeError)) throw error
      io.stderr.write(`vaultplan: ${error.message}\n`)
      return EXIT.invalid
    }
  } else if (format === 'canvas') {
    const canvas = (await import('../plan/plan-canvas.js')).toCanvas(graph, state, { folder: await folderInObsidian(vault) })
    text = `${printableJson(canvas, '\t')}\n`
  } else text = format === 'dot' ? picture.toDot(graph, state) : picture.toMermaid(graph, state)
  if (!values.write) {
    // Ids and labels are text notes wrote.
    io.stdout.write(printable(text))
    return EXIT.ok
  }
  const { writeFileAtomic } = await import('../vault/fs-atomic.js')
  const files: [path: string, text: string][] =
    format === 'canvas'
      ? [[GRAPH_FILES.canvas, text]]
      : format === 'svg'
        ? [[GRAPH_FILES.svg, text]]
        : [[GRAPH_FILES.note, graphNote(['```mermaid', text.trimEnd(), '```'].join('\n'), snapshot.run !== null)]]
  const { runFilePath } = await import('../vault/run-file-path.js')
  for (const [path, content] of files) {
    // Checked as every write of the run folder is: a symlinked `00_plan-trace` is refused here as `run` refuses it.
    await writeFileAtomic(runFilePath(vault, path), content)
    io.stdout.write(`wrote ${printable(join(shown, path))}\n`)
  }
  return EXIT.ok
}

/**
 * The vault's folder inside the Obsidian vault that holds it (the nearest
 * folder, itself included, with an `.obsidian/` folder), `/` between names;
 * `''` when it is that vault itself or no Obsidian vault holds it.
 */
async function folderInObsidian(vault: string): Promise<string> {
  for (let folder = vault; ; folder = dirname(folder)) {
    const info = await statOrNothing(join(folder, '.obsidian'))
    if (info?.isDirectory()) return relative(folder, vault).split(sep).join('/')
    if (dirname(folder) === folder) return ''
  }
}

/** A note that Obsidian renders as the picture (a mermaid block), with a line on how to read it. */
function graphNote(picture: string, withRun: boolean): string {
  const legend = withRun
    ? `Colours: ${statusColourWords()}; \`(2/3)\` is visits of the budget \`max_visits\`.`
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
    picture,
    '',
  ].join('\n')
}
