/**
 * The bench's printed report (bench/run.mjs): the table of figures, the
 * targets with PASS/MISS, and the checks, from `results` as written to
 * `bench/results/run.json`.
 */

/** Prints the bench's results as Markdown tables and lines. */
export function print(results, path) {
  const format = (value) => (value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(3))
  const rows = Object.entries(results.figures).map(([name, figure]) => [
    name,
    format(figure.median),
    format(figure.min),
    format(figure.max),
    figure.unit,
    figure.cpu ? format(figure.cpu.median) : '',
    measuredAs(figure),
  ])
  table(['figure', 'median', 'min', 'max', 'unit', 'CPU median', 'measured'], rows)
  console.log('')
  table(
    ['target', 'value', 'range', 'target', '', 'same ratio of CPU time'],
    results.ratios.map((ratio) => [
      ratio.name,
      ratio.value === null ? 'n/a' : String(ratio.value),
      ratio.rounds === undefined ? 'ratio of medians' : `${ratio.min}-${ratio.max}, ${ratio.rounds} rounds`,
      ratio.target,
      ratio.pass ? 'PASS' : 'MISS',
      ratio.cpuRatio === undefined ? '' : String(ratio.cpuRatio),
    ]),
  )
  console.log(
    'Per-hop targets: the median of the ratios of each round (both contenders measured one right after the other), with their range; the others divide two medians.',
  )
  console.log(
    'Times are wall-clock. CPU median: CPU time of the whole process (all threads) per hop or per load, for reading figures on a busy machine; the targets use wall-clock time.',
  )
  const { checks } = results
  console.log('')
  if (checks.syscalls) {
    const show = (counts) =>
      `${counts.total} (${Object.entries(counts.perHop)
        .sort((a, b) => b[1] - a[1])
        .map(([name, value]) => `${name} ${value}`)
        .join(', ')})`
    console.log(
      `System calls per hop (strace -f -c, a loop stopped by its budget after ${checks.syscalls.noFsync.hops} hops more than another): fsync false ${show(checks.syscalls.noFsync)}`,
    )
    console.log(`  fsync true ${show(checks.syscalls.fsync)}`)
    if (checks.syscalls.fsyncCompleted)
      console.log(
        `  flushes per hop of a completed run, fsync true: ${checks.syscalls.fsyncCompleted.flushes} (the hop's one, and each output note once when the finished run retires its journal)`,
      )
  } else console.log('System calls per hop: strace is not installed (or may not trace here); not counted.')
  console.log(
    `${checks.bigVault.notes}-note vault: ${(checks.bigVault.bytes / 2 ** 20).toFixed(1)} MB, ${checks.bigVault.averageBytes} bytes a note on average; a bare node process peaks at ${checks.processBaselineMB} MB before loading.`,
  )
  console.log(
    `LangGraph: SqliteSaver on a fresh file per run, journal ${checks.sqliteSynchronous.journal}, synchronous ${checks.sqliteSynchronous.default} by default and ${checks.sqliteSynchronous.full} when set; durability ${checks.sqliteSynchronous.durability}.`,
  )
  console.log(
    checks.longChain.ok
      ? `Check: a ${results.config.bigNotes}-node path loads and validates (${checks.longChain.ms} ms).`
      : `Check FAILED: a ${results.config.bigNotes}-node path does not validate: ${checks.longChain.error}`,
  )
  console.log(
    `Floors: (sync) uses readFileSync/writeFileSync-style calls (openSync, writeSync, fsyncSync, renameSync, appendFileSync), the baseline of the targets; (async) the same I/O through fs/promises, an extra row.`,
  )
  console.log(
    `Hops of the fsync runs: ${results.config.fsyncHops} (path: the first ${results.config.fsyncHops} of the ${results.config.pathNodes}-node plan, then a budget stop), ${results.config.fsyncHops + 1} (loop); per-hop figures compare with the 1,000-hop runs.`,
  )
  console.log(
    `Node ${results.machine.node}, ${results.machine.cpus} x ${results.machine.model}, ${results.machine.fileSystem}; load average ${results.machine.loadAverageAtStart.join(' ')} at start, ${results.machine.loadAverage.join(' ')} at end; ${results.wallSeconds} s. Written to ${path}.`,
  )
}

function measuredAs(figure) {
  if (figure.measured) return figure.measured
  if (figure.hops !== undefined) return `${figure.runs} runs x ${figure.hops} hops`
  return figure.processes ? `${figure.runs} process${figure.runs === 1 ? '' : 'es'}` : `${figure.runs} runs`
}

function table(head, rows) {
  const widths = head.map((title, column) => Math.max(title.length, ...rows.map((row) => row[column].length)))
  const line = (cells) => `| ${cells.map((cell, column) => (column === 0 ? cell.padEnd(widths[column]) : cell.padStart(widths[column]))).join(' | ')} |`
  console.log(line(head))
  console.log(`|${widths.map((width, column) => (column === 0 ? ':' : '') + '-'.repeat(width + 1) + (column === 0 ? '' : ':')).join('|')}|`)
  for (const row of rows) console.log(line(row))
}
