/**
 * `npm run bench`: vaultplan's own overhead, side by side with LangGraph.js
 * (SqliteSaver) and the file-system floor, on plans and vaults generated
 * here. Workers and judges are scripted and instant. Prints a table and
 * writes `bench/results/run.json` (with the commit, the machine and the date),
 * from which `npm run docs` renders docs/performance.md.
 *
 * Every figure is the median of several repetitions after a warm-up, with
 * min and max; contenders that are compared are measured in turns, and
 * every ratio divides two figures of this one run.
 *
 * Then runs bench/mcp-tokens.mjs, bench/mcp-hop.mjs and bench/mcp-agent.mjs (what an agent pays
 * over MCP), which print and write their own results.
 *
 * `node bench/run.mjs --quick` runs a smaller version, to check the bench itself.
 */
import { mkdir, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { langgraphLoop, langgraphPath, runFloor, runFloorSync, runLangGraph, runVaultplan } from './lib/contenders.mjs'
import { loadAndValidate, readOnly, readOnlySync } from './lib/load.mjs'
import { print } from './lib/print.mjs'
import { runScript, scriptJson } from './lib/scripts.mjs'
import { machine, startRecord, writeResult } from './lib/results.mjs'
import { measureStartup, writeTinyVault } from './lib/startup.mjs'
import { straceWorks, syscallsPerHop } from './lib/syscalls.mjs'
import { measureInTurns, now, ratioInRounds, summarize } from './lib/stats.mjs'
import { writeBigVault, writeLoopVault, writePathVault } from './lib/vaults.mjs'

const quick = process.argv.includes('--quick')

/** Sizes of the run; `--quick` only checks that the bench works. */
const CONFIG = quick
  ? {
      pathNodes: 100,
      loopHops: 101,
      warmHops: 21,
      fsyncHops: 6,
      warmup: 1,
      reps: 2,
      bigNotes: 1000,
      bigHops: 61,
      window: 10,
      sizeRuns: 2,
      loadReps: 2,
      memoryRuns: 1,
      startupReps: 3,
      straceHops: [21, 61],
      tokenHops: [10, 100],
    }
  : {
      pathNodes: 1000,
      loopHops: 1001,
      warmHops: 201,
      fsyncHops: 30,
      warmup: 1,
      reps: 5,
      bigNotes: 10_000,
      bigHops: 601,
      window: 100,
      sizeRuns: 5,
      loadReps: 3,
      memoryRuns: 3,
      startupReps: 10,
      straceHops: [101, 401],
      tokenHops: [10, 1000],
    }

const log = (message) => process.stderr.write(`${message}\n`)
const timed = (figure) => ({ value: figure.ms, cpu: figure.cpuMs })
const perHop = (figure) => ({ value: figure.walkMs / figure.steps, cpu: figure.cpuMs / figure.steps })

async function main() {
  const started = now()
  const base = await mkdtemp(join(tmpdir(), 'vaultplan-bench-'))
  let serial = 0
  const fresh = (name) => join(base, `${name}-${serial++}`)
  const begun = startRecord()
  const results = {
    quick,
    config: CONFIG,
    figures: {},
    checks: {},
  }
  const figures = results.figures
  const record = (key, summary, extra) => (figures[key] = { ...extra, ...summary })
  try {
    // 1-3: per hop, without fsync.
    log(`per hop without fsync: ${CONFIG.pathNodes}-node path, loop of ${CONFIG.loopHops} hops`)
    const pathBuilder = langgraphPath(CONFIG.pathNodes)
    const loopBuilder = langgraphLoop()
    const hops = {}
    const track = (name, figure) => {
      hops[name] = figure.steps
      return perHop(figure)
    }
    const vpPath = async (options) => {
      const dir = fresh('path')
      await writePathVault(dir, CONFIG.pathNodes)
      return runVaultplan(dir, options)
    }
    const vpLoop = async (options) => {
      const dir = fresh('loop')
      await writeLoopVault(dir)
      return runVaultplan(dir, options)
    }
    // Warm-up rounds run the same plans for fewer hops.
    const hopsOf = (warm) => (warm ? CONFIG.warmHops - 1 : CONFIG.pathNodes)
    const reviewsOf = (warm) => ((warm ? CONFIG.warmHops : CONFIG.loopHops) - 1) / 2
    // Each shape in rounds of its own: vaultplan, LangGraph, the synchronous floor one right after the other
    // (the order reversed every other round), each target the median of its per-round ratios.
    const floorSync = (fsync, count) => async (warm) =>
      track(`floor (sync), ${fsync ? 'fsync' : 'no fsync'}`, await runFloorSync(fresh('floor'), { hops: count(warm), fsync }))
    const turns = { warmup: CONFIG.warmup, reps: CONFIG.reps, log, alternate: true }
    const measureShape = async (shape, contenders) => {
      log(`  ${shape}: ${contenders.map((contender) => contender.name).join(', ')}`)
      const summaries = await measureInTurns(contenders, turns)
      for (const [name, summary] of Object.entries(summaries)) record(name, summary, { unit: 'ms/hop', hops: hops[name.replace(/ \([a-z]+ rounds\)$/, '')] })
    }
    await measureShape('path', [
      {
        name: 'vaultplan path, fsync false',
        run: async (warm) => track('vaultplan path, fsync false', await vpPath({ fsync: false, maxSteps: hopsOf(warm) })),
      },
      {
        name: 'LangGraph path, synchronous=NORMAL',
        run: async (warm) =>
          track('LangGraph path, synchronous=NORMAL', await runLangGraph(pathBuilder, { dbPath: `${fresh('lg')}.db`, maxHops: hopsOf(warm) })),
      },
      { name: 'floor (sync), no fsync (path rounds)', run: floorSync(false, hopsOf) },
    ])
    await measureShape('loop', [
      {
        name: 'vaultplan loop, fsync false',
        run: async (warm) => track('vaultplan loop, fsync false', await vpLoop({ fsync: false, maxSteps: 100_000, yesAt: reviewsOf(warm) })),
      },
      {
        name: 'LangGraph loop, synchronous=NORMAL',
        run: async (warm) =>
          track('LangGraph loop, synchronous=NORMAL', await runLangGraph(loopBuilder, { dbPath: `${fresh('lg')}.db`, limit: reviewsOf(warm) })),
      },
      { name: 'floor (sync), no fsync (loop rounds)', run: floorSync(false, hopsOf) },
      {
        name: 'floor (async), no fsync',
        run: async (warm) => track('floor (async), no fsync', await runFloor(fresh('floor'), { hops: hopsOf(warm), fsync: false })),
      },
    ])

    // 1-3: per hop, with fsync (fewer hops: every hop waits for the disk several times).
    log(`per hop with fsync: first ${CONFIG.fsyncHops} hops of the ${CONFIG.pathNodes}-node path, loop of ${CONFIG.fsyncHops + 1} hops`)
    const KF = CONFIG.fsyncHops / 2
    const fsyncHops = () => CONFIG.fsyncHops
    await measureShape('path, fsync', [
      { name: 'vaultplan path, fsync true', run: async () => track('vaultplan path, fsync true', await vpPath({ fsync: true, maxSteps: CONFIG.fsyncHops })) },
      {
        name: 'LangGraph path, synchronous=FULL',
        run: async () =>
          track(
            'LangGraph path, synchronous=FULL',
            await runLangGraph(pathBuilder, { dbPath: `${fresh('lg')}.db`, synchronous: 'FULL', maxHops: CONFIG.fsyncHops }),
          ),
      },
      { name: 'floor (sync), fsync (path rounds)', run: floorSync(true, fsyncHops) },
    ])
    await measureShape('loop, fsync', [
      {
        name: 'vaultplan loop, fsync true',
        run: async () => track('vaultplan loop, fsync true', await vpLoop({ fsync: true, maxSteps: 100_000, yesAt: KF })),
      },
      {
        name: 'LangGraph loop, synchronous=FULL',
        run: async () =>
          track('LangGraph loop, synchronous=FULL', await runLangGraph(loopBuilder, { dbPath: `${fresh('lg')}.db`, synchronous: 'FULL', limit: KF })),
      },
      { name: 'floor (sync), fsync (loop rounds)', run: floorSync(true, fsyncHops) },
      {
        name: 'floor (async), fsync',
        run: async () => track('floor (async), fsync', await runFloor(fresh('floor'), { hops: CONFIG.fsyncHops, fsync: true })),
      },
    ])
    const modes = await Promise.all([
      runLangGraph(loopBuilder, { dbPath: `${fresh('lg')}.db`, limit: 1 }),
      runLangGraph(loopBuilder, { dbPath: `${fresh('lg')}.db`, synchronous: 'FULL', limit: 1 }),
    ])
    results.checks.sqliteSynchronous = {
      default: modes[0].synchronous,
      full: modes[1].synchronous,
      durability: 'async (LangGraph default)',
      journal: 'WAL (set by SqliteSaver.setup)',
    }

    // 4: load + validate of a large vault against merely reading it.
    log(`load + validate of ${CONFIG.bigNotes} notes`)
    const big = fresh('big')
    const generated = await writeBigVault(big, CONFIG.bigNotes)
    results.checks.bigVault = { notes: generated.files.length, bytes: generated.bytes, averageBytes: Math.round(generated.bytes / generated.files.length) }
    const loads = await measureInTurns(
      [
        { name: 'load + validate', run: async () => timed(await loadAndValidate(big)) },
        { name: 'read the files (sync)', run: async () => timed(readOnlySync(big)) },
        { name: 'read the files (async)', run: async () => timed(await readOnly(big)) },
      ],
      { warmup: CONFIG.warmup, reps: CONFIG.loadReps, log },
    )
    record(`load + validate, ${CONFIG.bigNotes} notes`, loads['load + validate'], { unit: 'ms' })
    record(`read the files (readFileSync loop), ${CONFIG.bigNotes} notes`, loads['read the files (sync)'], { unit: 'ms' })
    record(`read the files (fs/promises, 32 at a time), ${CONFIG.bigNotes} notes`, loads['read the files (async)'], { unit: 'ms' })

    // 6: peak memory of that load, each in a fresh process.
    log('peak memory, each load in its own process')
    const peaks = []
    const readPeaks = []
    for (let run = 0; run < CONFIG.memoryRuns; run++) peaks.push(await child(big, 'load'))
    readPeaks.push(await child(big, 'read'))
    record(`peak RSS, load + validate ${CONFIG.bigNotes} notes`, summarize(peaks.map((peak) => peak.peakRssMB)), { unit: 'MB', processes: true })
    record(`peak RSS, read the files`, summarize(readPeaks.map((peak) => peak.peakRssMB)), { unit: 'MB', processes: true })
    results.checks.processBaselineMB = +summarize(peaks.map((peak) => peak.peakBeforeMB)).median.toFixed(1)

    // 5: per hop on a large vault against a small one (the same loop plus filler notes). Each run
    // opens the whole vault, so the runs are few and long: the time per hop is taken over windows of
    // hops in a row, the first window of each run being its warm-up.
    log(`per hop on ${CONFIG.bigNotes} notes against 10 notes (loop of ${CONFIG.bigHops} hops, fsync false)`)
    const small = fresh('loop10')
    const large = fresh('loop-big')
    await writeLoopVault(small, { filler: 7 })
    await writeLoopVault(large, { filler: CONFIG.bigNotes - 3 })
    const sizeRun = async (name, vault) => {
      const figure = await runVaultplan(vault, { fsync: false, fresh: true, maxSteps: 100_000, yesAt: (CONFIG.bigHops - 1) / 2, window: CONFIG.window })
      hops[name] = figure.steps
      return figure.windows.slice(1)
    }
    const sizes = await measureInTurns(
      [
        { name: 'small', run: () => sizeRun('small', small) },
        { name: 'large', run: () => sizeRun('large', large) },
      ],
      { warmup: 0, reps: CONFIG.sizeRuns, log },
    )
    const windows = (name) => `${CONFIG.sizeRuns} runs x ${hops[name]} hops, ${sizes[name].runs} windows of ${CONFIG.window}`
    record('vaultplan loop in a 10-note vault', sizes.small, { unit: 'ms/hop', measured: windows('small') })
    record(`vaultplan loop in a ${CONFIG.bigNotes}-note vault`, sizes.large, { unit: 'ms/hop', measured: windows('large') })

    // CLI start-up: `vaultplan validate` on a 3-note vault against a bare `node -e 0`.
    log(`start-up: vaultplan validate on 3 notes vs node -e 0, ${CONFIG.startupReps} rounds`)
    const tiny = fresh('tiny')
    await mkdir(tiny, { recursive: true })
    await writeTinyVault(tiny)
    const startup = await measureStartup(tiny, { reps: CONFIG.startupReps })
    record('node -e 0', startup.bare, { unit: 'ms', processes: true })
    record('vaultplan validate, 3 notes', startup.validate, { unit: 'ms', processes: true })

    // The judge's prompt over a long loop: characters / 4 at an early and a late hop.
    const [earlyHop, lateHop] = CONFIG.tokenHops
    log(`judge prompt tokens at hop ${earlyHop} and hop ${lateHop} of a loop`)
    const prompts = []
    const tokenVault = fresh('tokens')
    await writeLoopVault(tokenVault)
    await runVaultplan(tokenVault, { fsync: false, maxSteps: 100_000, yesAt: lateHop / 2, prompts })
    const at = (hop) => prompts.reduce((best, entry) => (Math.abs(entry.step - hop) < Math.abs(best.step - hop) ? entry : best))
    results.checks.judgeTokens = {
      early: { step: at(earlyHop).step, tokens: Math.ceil(at(earlyHop).chars / 4) },
      late: { step: at(lateHop).step, tokens: Math.ceil(at(lateHop).chars / 4) },
      calls: prompts.length,
    }
    figures[`judge prompt tokens at hop ${at(earlyHop).step}`] = {
      median: results.checks.judgeTokens.early.tokens,
      min: results.checks.judgeTokens.early.tokens,
      max: results.checks.judgeTokens.early.tokens,
      unit: 'tokens',
      measured: 'characters / 4, 1 call',
    }
    figures[`judge prompt tokens at hop ${at(lateHop).step}`] = {
      median: results.checks.judgeTokens.late.tokens,
      min: results.checks.judgeTokens.late.tokens,
      max: results.checks.judgeTokens.late.tokens,
      unit: 'tokens',
      measured: 'characters / 4, 1 call',
    }

    // System calls per hop, with strace when it is there.
    if (await straceWorks()) {
      const [short, long] = CONFIG.straceHops
      log(`system calls per hop: strace -f -c over loops of ${short} and ${long} hops, fsync false and true`)
      // A run still going (stopped by its budget): its hops' path. A completed run also retires its journal, flushing each output once.
      results.checks.syscalls = {
        noFsync: await syscallsPerHop({ short, long, fsync: false }),
        fsync: await syscallsPerHop({ short, long, fsync: true }),
        fsyncCompleted: await syscallsPerHop({ short, long, fsync: true, finish: true }),
      }
    } else results.checks.syscalls = undefined

    // Not a target: a plan that is one long chain must validate too.
    log(`check: a ${CONFIG.bigNotes}-node path validates`)
    const chain = fresh('chain')
    await writePathVault(chain, CONFIG.bigNotes)
    try {
      const loaded = await loadAndValidate(chain)
      results.checks.longChain = { ok: true, nodes: loaded.nodes, ms: +loaded.ms.toFixed(0) }
    } catch (error) {
      results.checks.longChain = { ok: false, error: `${error.name}: ${error.message}` }
    }
  } finally {
    await rm(base, { recursive: true, force: true })
  }

  // Search over past runs, in its own process (bench/search.mjs).
  log('search over past runs (bench/search.mjs)')
  const search = await scriptJson('search.mjs', ['--json', ...(quick ? ['--quick'] : [])])
  const one = (value, measured) => ({ ...summarize([value]), unit: 'ms', measured })
  figures[`search: first search, index built (${search.outputs} outputs)`] = one(search.buildMs, '1 run')
  figures[`search: per query (${search.outputs} outputs)`] = {
    ...summarize([search.queryMedianMs]),
    min: search.queryMinMs,
    max: search.queryMaxMs,
    cpu: summarize([search.queryCpuMedianMs]),
    unit: 'ms',
    measured: 'median of 100 searches',
  }
  figures[`search: first search of a new process (${search.outputs} outputs)`] = one(search.reopenMs, 'median of 3 processes')
  results.searchOutputs = search.outputs
  results.search = search

  results.ratios = ratios(figures, results.checks, results.searchOutputs)
  results.wallSeconds = +((now() - started) / 1000).toFixed(1)
  // A quick run only checks the bench: it must not overwrite the figures the docs are rendered from.
  const path = await writeResult(quick ? 'run-quick' : 'run', begun, results)
  print({ ...results, machine: { ...machine(), loadAverageAtStart: begun.loadAverage } }, path)
  // What an agent pays over MCP: tokens (Task Master's and Backlog.md's servers beside vaultplan's) and a hop's time.
  for (const script of ['mcp-tokens.mjs', 'mcp-hop.mjs', 'mcp-agent.mjs']) if ((await runScript(script, quick ? ['--quick'] : [])) !== 0) process.exitCode = 1
}

/** The targets of the issue, each a ratio of two figures of this run (and the same ratio of their CPU times). */
function ratios(figures, checks, searchOutputs) {
  const n = CONFIG.bigNotes
  const floor = '(sync)'
  const rows = [
    ['LangGraph (NORMAL) / vaultplan (fsync false), path', 'LangGraph path, synchronous=NORMAL', 'vaultplan path, fsync false', '>= 2', (r) => r >= 2],
    ['LangGraph (NORMAL) / vaultplan (fsync false), loop', 'LangGraph loop, synchronous=NORMAL', 'vaultplan loop, fsync false', '>= 2', (r) => r >= 2],
    [
      `vaultplan (fsync false) / floor ${floor} (no fsync), path`,
      'vaultplan path, fsync false',
      `floor ${floor}, no fsync (path rounds)`,
      '<= 1.6',
      (r) => r <= 1.6,
    ],
    [
      `vaultplan (fsync false) / floor ${floor} (no fsync), loop`,
      'vaultplan loop, fsync false',
      `floor ${floor}, no fsync (loop rounds)`,
      '<= 1.6',
      (r) => r <= 1.6,
    ],
    ['LangGraph (FULL) / vaultplan (fsync true), path', 'LangGraph path, synchronous=FULL', 'vaultplan path, fsync true', '>= 1.5', (r) => r >= 1.5],
    ['LangGraph (FULL) / vaultplan (fsync true), loop', 'LangGraph loop, synchronous=FULL', 'vaultplan loop, fsync true', '>= 1.5', (r) => r >= 1.5],
    [
      `load + validate / read (readFileSync loop), ${n} notes`,
      `load + validate, ${n} notes`,
      `read the files (readFileSync loop), ${n} notes`,
      '<= 4',
      (r) => r <= 4,
    ],
    [`peak RSS of the ${n}-note load (MB)`, `peak RSS, load + validate ${n} notes`, undefined, '< 200', (r) => r < 200],
    [`per hop, ${n}-note vault / 10-note vault`, `vaultplan loop in a ${n}-note vault`, 'vaultplan loop in a 10-note vault', '<= 1.5', (r) => r <= 1.5],
    ['vaultplan validate (3 notes) / node -e 0, start-up', 'vaultplan validate, 3 notes', 'node -e 0', '<= 2', (r) => r <= 2],
    [`search: median ms per query, ${searchOutputs} outputs`, `search: per query (${searchOutputs} outputs)`, undefined, '< 20', (r) => r < 20],
  ]
  const round = (value) => (Number.isFinite(value) ? +value.toFixed(2) : null)
  const out = rows.map(([name, a, b, target, pass]) => {
    const ratio = b === undefined ? { value: figures[a]?.median, rounds: 0 } : ratioInRounds(figures[a], figures[b])
    const row = { name, value: round(ratio.value), target, pass: Number.isFinite(ratio.value) && pass(ratio.value) }
    if (ratio.rounds > 0) Object.assign(row, { min: round(ratio.min), max: round(ratio.max), rounds: ratio.rounds })
    if (Number.isFinite(ratio.cpu)) row.cpuRatio = round(ratio.cpu)
    return row
  })
  const tokens = checks.judgeTokens
  const tokenRatio = tokens.late.tokens / tokens.early.tokens
  out.push({
    name: `judge prompt tokens, hop ${tokens.late.step} / hop ${tokens.early.step}`,
    value: round(tokenRatio),
    target: '<= 1.2',
    pass: tokenRatio <= 1.2,
  })
  const flushes = checks.syscalls?.fsync.flushes
  out.push({
    name: 'flushes (fsync + fdatasync) per hop, loop, fsync true',
    value: flushes === undefined ? null : flushes,
    target: '<= 1',
    pass: flushes !== undefined && flushes <= 1,
  })
  return out
}

const child = (vault, mode) => scriptJson('lib/load-child.mjs', [vault, mode])

await main()
