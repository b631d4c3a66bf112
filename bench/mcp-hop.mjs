/**
 * A hop over MCP against a hop of `runPlan`, on the draft/review loop
 * (bench/lib/vaults.mjs), in rounds, one right after the other:
 *
 * - `plan_finish` over `vaultplan mcp` (stdio, the official SDK's client),
 *   each call timed, review sent back to draft with `choice: "next"`;
 * - `completeStep` called in this process from a loop, each call timed (the
 *   stepping API without MCP: what the MCP layer adds is the difference);
 * - `runPlan` with an instant worker and judge, each hop timed between its
 *   `enter` events.
 *
 * All three flush as the server does (fsync true, the default). Each
 * round's figure is the median hop; the target (issue 28) is the median of
 * the per-round ratios MCP / runPlan, <= 3. Prints the table and writes
 * `bench/results/mcp-hop.json` (`--quick`: `mcp-hop-quick.json`).
 * `node bench/mcp-profile.mjs` shows where the MCP hop's time goes.
 *
 * Run by `npm run bench`; alone after `npm run build`.
 */
import { readFileSync } from 'node:fs'
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { completeStep, nextStep, runPlan } from '../dist/index.js'
import { connectStdio, workNote } from './lib/mcp-client.mjs'
import { startRecord, writeResult } from './lib/results.mjs'
import { cpuNow, measureInTurns, now, ratioInRounds, summarize } from './lib/stats.mjs'
import { writeLoopVault } from './lib/vaults.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const quick = process.argv.includes('--quick')
const cli = join(here, '..', 'dist', 'cli.js')
const CONFIG = quick ? { hops: 40, warmHops: 20, warmup: 1, reps: 2 } : { hops: 300, warmHops: 60, warmup: 1, reps: 5 }
const TARGET = 3
/** Hops a vault: below the default step budget of 50, which a client over MCP cannot raise. */
const RUN_HOPS = 40
/** Clock ticks a second of /proc/<pid>/stat's times (`getconf CLK_TCK`, 100 on Linux). */
const CLOCK_TICKS = 100
const log = (message) => process.stderr.write(`${message}\n`)
const output = (id, visit) => `Output of ${id}, visit ${visit}: the work is done and nothing needs to change.`

/** The choice of a step of the loop: review goes back to draft until the hops are spent. */
const choiceOf = (id) => (id === 'review' ? { choice: 'next' } : {})

/**
 * Hops in runs of at most {@link RUN_HOPS}, each on a fresh loop vault `${name}-${index}`: the step budget of a run
 * over MCP is the default 50 (a client cannot raise it), so every contender runs as many hops a vault.
 */
async function inRuns(name, hops, hopsOfRun) {
  const times = []
  for (let index = 0; times.length < hops; index++) times.push(...(await hopsOfRun(`${name}-${index}`, Math.min(RUN_HOPS, hops - times.length))))
  return times
}

/** `plan_finish` over MCP, `hops` calls on fresh loop vaults under the server's root; the ms of each. */
export function mcpHops(client, root, name, hops) {
  const call = async (tool, args) => {
    const result = await client.callTool({ name: tool, arguments: args })
    if (result.isError) throw new Error(`${tool} refused: ${result.content?.[0]?.text}`)
    return result.structuredContent.step
  }
  return inRuns(name, hops, async (vault, count) => {
    await writeLoopVault(join(root, vault))
    let step = await call('plan_next', { vault, query: 'benchmark' })
    const times = []
    for (let hop = 0; hop < count; hop++) {
      const note = workNote(step)
      const started = now()
      step = await call('plan_finish', { vault, key: step.key, output: output(note.id, step.visit), ...choiceOf(note.id) })
      times.push(now() - started)
    }
    return times
  })
}

/** `completeStep` in this process, `hops` calls on fresh loop vaults; the ms of each. */
export function steppingHops(dir, hops) {
  return inRuns(dir, hops, async (vault, count) => {
    await writeLoopVault(vault)
    let step = await nextStep(vault, { query: 'benchmark' })
    const times = []
    for (let hop = 0; hop < count; hop++) {
      const started = now()
      step = await completeStep(vault, step.key, { output: output(step.node.id, step.visit), ...choiceOf(step.node.id) })
      times.push(now() - started)
    }
    return times
  })
}

/** `runPlan` on fresh loop vaults for `hops` hops; the ms of each, between `enter` events (a run's last hop, to its end). */
function runPlanHops(dir, hops) {
  return inRuns(dir, hops, async (vault, count) => {
    await writeLoopVault(vault)
    const marks = []
    await runPlan(vault, {
      query: 'benchmark',
      maxSteps: count,
      work: async (step) => output(step.node.id, step.visit),
      llm: async () => '1: NO',
      onEvent: (event) => (event.type === 'enter' || event.type === 'stop') && marks.push(now()),
    })
    return marks.slice(1).map((mark, index) => mark - marks[index])
  })
}

/** CPU time (user + system) of process `pid` in ms, from /proc (Linux); NaN elsewhere. */
function processCpu(pid) {
  try {
    const fields = readFileSync(`/proc/${pid}/stat`, 'utf8').split(') ')[1].split(' ')
    return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS
  } catch {
    return Number.NaN
  }
}

async function main() {
  const begun = startRecord()
  const base = await mkdtemp(join(tmpdir(), 'vaultplan-mcp-hop-'))
  const root = join(base, 'root')
  await writeLoopVault(join(root, 'check'))
  let connection
  try {
    connection = await connectStdio(process.execPath, [cli, 'mcp', '--root', root])
    let serial = 0
    const hopsOf = (warm) => (warm ? CONFIG.warmHops : CONFIG.hops)
    log(`a hop of the draft/review loop: MCP plan_finish, completeStep, runPlan; ${CONFIG.warmup} + ${CONFIG.reps} rounds of ${CONFIG.hops} hops`)
    // Each round's figure: its median hop, and the CPU time a hop of the process that does the work (the server's, over MCP).
    const all = {}
    const timed = (name, hopsOfRound, cpuOf) => async (warm) => {
      const cpu = cpuOf()
      const times = await hopsOfRound(hopsOf(warm))
      const used = cpuOf() - cpu
      if (!warm) (all[name] ??= []).push(...times)
      return { value: summarize(times).median, cpu: used / times.length }
    }
    const names = { mcp: 'MCP plan_finish (stdio, SDK client)', stepping: 'completeStep in process', runner: 'runPlan' }
    const figures = await measureInTurns(
      [
        {
          name: names.mcp,
          run: timed(
            names.mcp,
            (hops) => mcpHops(connection.client, root, `loop-${serial++}`, hops),
            () => processCpu(connection.pid),
          ),
        },
        { name: names.stepping, run: timed(names.stepping, (hops) => steppingHops(join(base, `step-${serial++}`), hops), cpuNow) },
        { name: names.runner, run: timed(names.runner, (hops) => runPlanHops(join(base, `run-${serial++}`), hops), cpuNow) },
      ],
      { warmup: CONFIG.warmup, reps: CONFIG.reps, log, alternate: true },
    )
    const round3 = (value) => +value.toFixed(3)
    const ratio = (name, a, b, target) => {
      const value = ratioInRounds(figures[a], figures[b])
      const row = { name, value: round3(value.value), min: round3(value.min), max: round3(value.max), rounds: value.rounds, cpuRatio: round3(value.cpu) }
      return target === undefined ? row : { ...row, target: `<= ${target}`, pass: value.value <= target }
    }
    const figure = (name) => {
      const hops = summarize(all[name])
      const { median, min, max } = figures[name]
      return { unit: 'ms/hop', median, min, max, cpu: figures[name].cpu.median, hops: hops.runs, fastestHop: hops.min, slowestHop: hops.max }
    }
    const result = {
      quick,
      config: { ...CONFIG, runHops: RUN_HOPS, fsync: true, plan: 'draft -> review -> draft ... (bench/lib/vaults.mjs writeLoopVault)' },
      figures: Object.fromEntries(Object.values(names).map((name) => [name, figure(name)])),
      ratios: [
        ratio('MCP plan_finish / runPlan, per hop', names.mcp, names.runner, TARGET),
        ratio('completeStep in process / runPlan, per hop', names.stepping, names.runner),
        ratio('MCP plan_finish / completeStep in process, per hop', names.mcp, names.stepping),
      ],
    }
    const path = await writeResult(quick ? 'mcp-hop-quick' : 'mcp-hop', begun, result)
    printHop(result)
    console.log(`Written to ${path}.`)
  } finally {
    await connection?.close().catch(() => {})
    await rm(base, { recursive: true, force: true })
  }
}

/** Prints the figures and the ratios, the target's with PASS or MISS. */
export function printHop(result) {
  console.log('| a hop of the loop (fsync true) | median ms | min | max | CPU ms | hops |')
  console.log('|:---|---:|---:|---:|---:|---:|')
  const ms = (value) => value.toFixed(3)
  for (const [name, row] of Object.entries(result.figures))
    console.log(`| ${name} | ${ms(row.median)} | ${ms(row.min)} | ${ms(row.max)} | ${ms(row.cpu)} | ${row.hops} |`)
  console.log(`Median, min and max of the rounds' median hops; CPU: a hop's CPU time of the process that works it (over MCP, the server's).\n`)
  for (const ratio of result.ratios)
    console.log(
      `${ratio.target ? `${ratio.pass ? 'PASS' : 'MISS'} ` : ''}${ratio.name}: ${ratio.value} (${ratio.min}-${ratio.max}, ${ratio.rounds} rounds; CPU ${ratio.cpuRatio})${ratio.target ? ` (target ${ratio.target})` : ''}`,
    )
}

if (import.meta.url === `file://${process.argv[1]}`) await main()
