/**
 * Renders the tables of docs/performance.md and docs/memory.md from the
 * committed bench results (bench/results/<name>.json, written by
 * bench/run.mjs, bench/queue.mjs, bench/hop-syscalls.mjs,
 * bench/search-engines.mjs, bench/board.mjs, bench/mcp-tokens.mjs and bench/mcp-hop.mjs), each with the commit and the machine it was
 * measured on, so the page shows what was measured and nothing pasted.
 *
 *   tsx scripts/docs-bench.ts            rewrites the pages
 *   tsx scripts/docs-bench.ts --check    exits 1 when a page differs
 */
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isMain, replaceGenerated } from './generated.js'

const root = fileURLToPath(new URL('..', import.meta.url))
export const performancePage = join(root, 'docs', 'performance.md')
export const memoryPage = join(root, 'docs', 'memory.md')
const resultsDir = join(root, 'bench', 'results')

/** What every result file holds besides its figures (bench/lib/results.mjs). */
interface Recorded {
  name: string
  commit: { sha: string; dirty: boolean }
  date: string
  machine: {
    cpus: number
    model: string
    memoryGB: number
    node: string
    platform: string
    fileSystem: string
    loadAverageAtStart: number[]
    loadAverageAtEnd: number[]
  }
}

interface Summary {
  median: number
  min: number
  max: number
  runs: number
  unit: string
  cpu?: { median: number }
  hops?: number
  measured?: string
  processes?: boolean
}

interface Ratio {
  name: string
  value: number | null
  target: string
  pass: boolean
  min?: number
  max?: number
  rounds?: number
  cpuRatio?: number
}

interface SyscallCounts {
  hops: number
  total: number
  flushes: number
  perHop: Record<string, number>
}

interface RunResult extends Recorded {
  figures: Record<string, Summary>
  ratios: Ratio[]
  checks: { syscalls?: { noFsync: SyscallCounts; fsync: SyscallCounts; fsyncCompleted?: SyscallCounts } }
  wallSeconds: number
}

interface QueueResult extends Recorded {
  config: { runs: number; hopsPerRun: number; sleepMs: number; rounds: number }
  figures: { workers: number; median: number; min: number; max: number; ideal: number }[]
  ratio: { name: string; value: number; target: string; pass: boolean }
}

interface SearchEnginesResult extends Recorded {
  config: { outputs: number; textMB: number; queries: number; repetitions: number }
  engines: { name: string; version: string; buildMs: number; queryMs: number; savedMB: number; reopenMs: number }[]
}

interface HopSyscallsResult extends Recorded {
  config: { hops: number; rounds: number }
  variants: { variant: string; msPerHop: { median: number; min: number; max: number }; toFloor: { median: number; min: number; max: number } }[]
}

interface BoardResult extends Recorded {
  config: { vaults: number; hops: number; loads: number }
  figures: { page: string; median: number; min: number; max: number; targetMs: number | null; pass: boolean | null }[]
}

interface McpTokensResult extends Recorded {
  encoding: string
  lists: (
    | { server: string; version?: string; measured: false; reason: string }
    | {
        server: string
        version: string
        toolSet: string
        measured: true
        tools: number
        wireTokens: number
        toolTokens: number
        outputSchemaTokens: number
        initializeTokens: number
      }
  )[]
  walk:
    | { error: string }
    | {
        notes: number
        calls: number
        byTool: Record<string, number>
        resultTokens: number
        textTokens: number
        structuredTokens: number
        wireTokens: number
        argumentTokens: number
      }
  targets: { name: string; value: number | null; target: string; pass: boolean }[]
}

interface McpHopResult extends Recorded {
  config: { hops: number; warmup: number; reps: number; fsync: boolean }
  figures: Record<string, { unit: string; median: number; min: number; max: number; cpu: number; hops: number }>
  ratios: { name: string; value: number; min: number; max: number; rounds: number; cpuRatio: number; target?: string; pass?: boolean }[]
}

const figure = (value: number) => (value >= 100 ? value.toFixed(0) : value >= 10 ? value.toFixed(1) : value.toFixed(3))

/** A Markdown table; `align` has one `l` or `r` a column. */
function table(head: string[], rows: string[][], align: string): string {
  const line = (cells: string[]) => `| ${cells.join(' | ')} |`
  return [line(head), line([...align].map((side) => (side === 'r' ? '---:' : ':---'))), ...rows.map(line)].join('\n')
}

/** The line under a table: where, when and on what the figures were measured. */
function provenance(result: Recorded, extra = ''): string {
  const { machine } = result
  const commit = `${result.commit.sha.slice(0, 12)}${result.commit.dirty ? ' (with uncommitted changes)' : ''}`
  return (
    `Measured by \`bench/${result.name.replace(/-tmpfs$/, '')}.mjs\` (\`bench/results/${result.name}.json\`) at commit ${commit} on ${result.date.slice(0, 10)}: ` +
    `${machine.cpus} x ${machine.model}, ${machine.memoryGB} GB, Node ${machine.node}, ${machine.platform}, temporary files on ${machine.fileSystem}; ` +
    `load average ${machine.loadAverageAtStart.join(' ')} at the start, ${machine.loadAverageAtEnd.join(' ')} at the end${extra}.`
  )
}

/** The targets of bench/run.mjs: each a ratio of two figures of the same run, with PASS or MISS. */
export function renderTargets(run: RunResult): string {
  const rows = run.ratios.map((ratio) => [
    ratio.name,
    ratio.value === null ? 'n/a' : String(ratio.value),
    ratio.rounds === undefined ? 'ratio of medians' : `${ratio.min}-${ratio.max}, ${ratio.rounds} rounds`,
    ratio.target,
    ratio.pass ? 'PASS' : 'MISS',
    ratio.cpuRatio === undefined ? '' : String(ratio.cpuRatio),
  ])
  return `${table(['what', 'ratio', 'range', 'target', '', 'same ratio of CPU time'], rows, 'lrrrll')}\n\n${provenance(run, `; ${Math.round(run.wallSeconds)} s`)}`
}

/** The medians bench/run.mjs divides, with their unit and how many runs each is the median of. */
export function renderFigures(run: RunResult): string {
  const measuredAs = (summary: Summary) =>
    summary.measured ??
    (summary.hops !== undefined
      ? `${summary.runs} runs x ${summary.hops} hops`
      : summary.processes
        ? `${summary.runs} process${summary.runs === 1 ? '' : 'es'}`
        : `${summary.runs} runs`)
  const rows = Object.entries(run.figures).map(([name, summary]) => [
    name,
    figure(summary.median),
    figure(summary.min),
    figure(summary.max),
    summary.unit,
    summary.cpu ? figure(summary.cpu.median) : '',
    measuredAs(summary),
  ])
  const figures = table(['figure', 'median', 'min', 'max', 'unit', 'CPU median', 'measured'], rows, 'lrrrrrl')
  const syscalls = run.checks.syscalls
  if (!syscalls) return `${figures}\n\nSystem calls per hop: not counted (strace was not there).`
  const names = [...new Set([...Object.keys(syscalls.noFsync.perHop), ...Object.keys(syscalls.fsync.perHop)])].sort(
    (a, b) => (syscalls.fsync.perHop[b] ?? 0) - (syscalls.fsync.perHop[a] ?? 0) || a.localeCompare(b),
  )
  const count = (value: number | undefined) => (value === undefined ? '' : String(value))
  const calls = table(
    ['system calls per hop (strace -f -c)', 'fsync false', 'fsync true'],
    [
      ['all', String(syscalls.noFsync.total), String(syscalls.fsync.total)],
      ...names.map((name) => [name, count(syscalls.noFsync.perHop[name]), count(syscalls.fsync.perHop[name])]),
    ],
    'lrr',
  )
  const completed = syscalls.fsyncCompleted
    ? `\n\nCounted over a loop its budget stops (${syscalls.fsync.hops} hops more than another), a run still going: its hops' path. A completed run, fsync true, flushes ${syscalls.fsyncCompleted.flushes} times per hop: the hop's once, and each output note once when the finished run retires its journal.`
    : ''
  return `${figures}\n\n${calls}${completed}`
}

/** The queue's hops per second by worker count (bench/queue.mjs). */
export function renderQueue(queue: QueueResult): string {
  const rows = queue.figures.map((row) => [String(row.workers), String(row.median), String(row.min), String(row.max), String(row.ideal)])
  const head = [`workers (concurrency 1, worker sleeps ${queue.config.sleepMs} ms a hop)`, 'hops/s (median)', 'min', 'max', 'ideal']
  const ratio = `${queue.ratio.name}: **${queue.ratio.value}** (target ${queue.ratio.target}: ${queue.ratio.pass ? 'PASS' : 'MISS'}).`
  return `${table(head, rows, 'rrrrr')}\n\n${ratio} ${queue.config.runs} runs of ${queue.config.hopsPerRun} hops, ${queue.config.rounds} rounds.\n\n${provenance(queue)}`
}

/** The file work of a hop, each variant a ratio to the floor of the same round (bench/hop-syscalls.mjs), per file system. */
export function renderHopSyscalls(runs: HopSyscallsResult[]): string {
  const head = ['variant', ...runs.map((run) => `/ floor, ${run.machine.fileSystem} (range)`)]
  const variants = runs[0]!.variants.map((row) => row.variant)
  const rows = variants.map((variant) => [
    variant,
    ...runs.map((run) => {
      const row = run.variants.find((entry) => entry.variant === variant)
      if (!row) return ''
      if (variant === 'floor') return `1 (${figure(row.msPerHop.median)} ms a hop)`
      return `${row.toFloor.median.toFixed(2)} (${row.toFloor.min.toFixed(2)}-${row.toFloor.max.toFixed(2)})`
    }),
  ])
  const config = runs[0]!.config
  return `${table(head, rows, `l${'r'.repeat(runs.length)}`)}\n\n${config.hops} hops a variant, ${config.rounds} rounds in turns.\n\n${runs.map((run) => provenance(run)).join('\n\n')}`
}

/** The board's pages on big inputs, each load timed whole as a browser fetches it (bench/board.mjs). */
export function renderBoard(board: BoardResult): string {
  const rows = board.figures.map((row) => [
    row.page,
    `${figure(row.median)} ms`,
    `${figure(row.min)} ms`,
    `${figure(row.max)} ms`,
    row.targetMs === null ? 'none' : `< ${row.targetMs} ms`,
    row.pass === null ? '' : row.pass ? 'PASS' : 'MISS',
  ])
  const head = ['page', 'median', 'min', 'max', 'target', '']
  return `${table(head, rows, 'lrrrrl')}\n\n${board.config.loads} loads of each page after a warm-up.\n\n${provenance(board)}`
}

/** The search engines side by side (bench/search-engines.mjs), and the first one's figures divided by each other's. */
export function renderSearchEngines(result: SearchEnginesResult): string {
  const rows = result.engines.map((engine) => [
    `${engine.name} ${engine.version}`,
    `${engine.buildMs} ms`,
    `${engine.queryMs} ms`,
    `${engine.savedMB} MB`,
    `${engine.reopenMs} ms`,
  ])
  const [first, ...others] = result.engines
  const ratio = (a: number, b: number) => (a / b).toFixed(2)
  for (const other of others)
    rows.push([
      `${first!.name} / ${other.name}`,
      ratio(first!.buildMs, other.buildMs),
      ratio(first!.queryMs, other.queryMs),
      ratio(first!.savedMB, other.savedMB),
      ratio(first!.reopenMs, other.reopenMs),
    ])
  const head = ['engine', 'build', `query (median of ${result.config.queries})`, 'saved index', 'reopen']
  return `${table(head, rows, 'lrrrr')}\n\nMedians of ${result.config.repetitions} repetitions over ${result.config.outputs} outputs (${result.config.textMB} MB of text).\n\n${provenance(result)}`
}

/** `searchRuns` over past outputs: the search rows of bench/run.mjs (from bench/search.mjs). */
export function renderSearchRuns(run: RunResult): string {
  const rows = Object.entries(run.figures)
    .filter(([name]) => name.startsWith('search: '))
    .map(([name, summary]) => [
      name.slice('search: '.length),
      `${figure(summary.median)} ${summary.unit}`,
      summary.cpu ? `${figure(summary.cpu.median)} ${summary.unit}` : '',
      summary.measured ?? `${summary.runs} runs`,
    ])
  const target = run.ratios.find((ratio) => ratio.name.startsWith('search: '))
  const verdict = target ? `\n\nTarget ${target.target} ms per query: ${target.pass ? 'PASS' : 'MISS'}.` : ''
  return `${table(['figure', 'median', 'CPU', 'measured'], rows, 'lrrl')}${verdict}\n\n${provenance(run)}`
}

/** What an agent pays over MCP in tokens, per server, and its walk of a 12-note plan (bench/mcp-tokens.mjs). */
export function renderMcpTokens(result: McpTokensResult): string {
  const rows = result.lists.map((entry) =>
    entry.measured
      ? [
          `${entry.server} ${entry.version}`,
          `${entry.tools} (${entry.toolSet})`,
          String(entry.wireTokens),
          String(entry.toolTokens),
          String(entry.outputSchemaTokens),
          String(entry.initializeTokens),
        ]
      : [`${entry.server}${entry.version ? ` ${entry.version}` : ''}`, `not measured: ${entry.reason}`, '', '', '', ''],
  )
  const head = ['server', 'tools', 'tools/list on the wire', 'names, descriptions, input schemas', 'output schemas', 'initialize on the wire']
  const walk = result.walk
  const walked =
    'error' in walk
      ? `The walk was not measured: ${walk.error}`
      : `The walk: ${walk.notes} notes worked in ${walk.calls} calls (${Object.entries(walk.byTool)
          .map(([tool, count]) => `${tool} ${count}`)
          .join(
            ', ',
          )}); the results its model reads ${walk.resultTokens} tokens (one copy of each: their text ${walk.textTokens}, their \`structuredContent\` ${walk.structuredTokens}); the responses on the wire ${walk.wireTokens}; the arguments it wrote ${walk.argumentTokens}.`
  const targets = table(
    ['target', 'value', 'target', ''],
    result.targets.map((target) => [target.name, target.value === null ? 'n/a' : String(target.value), target.target, target.pass ? 'PASS' : 'MISS']),
    'lrrl',
  )
  return `${table(head, rows, 'llrrrr')}\n\nTokens in ${result.encoding}.\n\n${walked}\n\n${targets}\n\n${provenance(result)}`
}

/** A hop over MCP against the stepping API in process and `runPlan` (bench/mcp-hop.mjs). */
export function renderMcpHop(result: McpHopResult): string {
  const rows = Object.entries(result.figures).map(([name, row]) => [
    name,
    figure(row.median),
    figure(row.min),
    figure(row.max),
    figure(row.cpu),
    String(row.hops),
  ])
  const figures = table(['a hop of the loop, fsync true', 'median ms', 'min', 'max', 'CPU ms', 'hops'], rows, 'lrrrrr')
  const ratios = table(
    ['ratio', 'median of the rounds', 'range', 'target', '', 'same ratio of CPU time'],
    result.ratios.map((ratio) => [
      ratio.name,
      String(ratio.value),
      `${ratio.min}-${ratio.max}, ${ratio.rounds} rounds`,
      ratio.target ?? '',
      ratio.target === undefined ? '' : ratio.pass ? 'PASS' : 'MISS',
      String(ratio.cpuRatio),
    ]),
    'lrrrll',
  )
  const { config } = result
  const note =
    `Median, min and max of the rounds' median hops, ${config.reps} rounds of ${config.hops} hops each after ${config.warmup} warm-up round; ` +
    "CPU: a hop's CPU time of the process that works it (over MCP, the server's)."
  return `${figures}\n\n${note}\n\n${ratios}\n\n${provenance(result)}`
}

async function result<T>(name: string): Promise<T> {
  return JSON.parse(await readFile(join(resultsDir, `${name}.json`), 'utf8')) as T
}

/** docs/performance.md with each generated part rendered from bench/results/. */
export async function renderPerformancePage(): Promise<string> {
  const [page, run, queue, hops, hopsTmpfs, board, mcpTokens, mcpHop] = await Promise.all([
    readFile(performancePage, 'utf8'),
    result<RunResult>('run'),
    result<QueueResult>('queue'),
    result<HopSyscallsResult>('hop-syscalls'),
    result<HopSyscallsResult>('hop-syscalls-tmpfs'),
    result<BoardResult>('board'),
    result<McpTokensResult>('mcp-tokens'),
    result<McpHopResult>('mcp-hop'),
  ])
  const parts: [string, string][] = [
    ['bench-targets', renderTargets(run)],
    ['bench-figures', renderFigures(run)],
    ['bench-queue', renderQueue(queue)],
    ['bench-hop-syscalls', renderHopSyscalls([hops, hopsTmpfs])],
    ['bench-board', renderBoard(board)],
    ['bench-mcp-tokens', renderMcpTokens(mcpTokens)],
    ['bench-mcp-hop', renderMcpHop(mcpHop)],
  ]
  return parts.reduce((text, [id, body]) => replaceGenerated(text, id, body), page)
}

/** docs/memory.md with its search tables rendered from bench/results/. */
export async function renderMemoryPage(): Promise<string> {
  const [page, run, engines] = await Promise.all([readFile(memoryPage, 'utf8'), result<RunResult>('run'), result<SearchEnginesResult>('search-engines')])
  return replaceGenerated(replaceGenerated(page, 'search-engines', renderSearchEngines(engines)), 'search-runs', renderSearchRuns(run))
}

if (isMain(import.meta.url)) {
  const pages: [string, string, () => Promise<string>][] = [
    ['docs/performance.md', performancePage, renderPerformancePage],
    ['docs/memory.md', memoryPage, renderMemoryPage],
  ]
  for (const [name, path, render] of pages) {
    const [page, rendered] = await Promise.all([readFile(path, 'utf8'), render()])
    if (page === rendered) continue
    if (process.argv.includes('--check')) {
      process.stderr.write(`${name} differs from bench/results/: run \`npm run docs\`\n`)
      process.exitCode = 1
    } else {
      await writeFile(path, rendered)
      process.stdout.write(`wrote ${name}\n`)
    }
  }
}
