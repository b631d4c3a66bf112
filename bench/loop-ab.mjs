/**
 * Two builds of vaultplan on the bench's 1,001-hop draft/review loop
 * (fsync false, scripted worker and judge), in turns in one process, with
 * the synchronous floor (bench/lib/contenders.mjs) after each pair: wall
 * and CPU time a hop, median and min of `--runs`. For telling one change's
 * effect apart from a busy machine's noise.
 *
 *   node bench/loop-ab.mjs <dist/index.js of A> <dist/index.js of B> [--runs 5]
 *
 * Build B with `npm run build`; A is any other build (another checkout's `dist/`).
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join, resolve } from 'node:path'
import { pathToFileURL } from 'node:url'
import { output, runFloorSync } from './lib/contenders.mjs'
import { writeLoopVault } from './lib/vaults.mjs'

const [a, b, ...rest] = process.argv.slice(2)
if (!a || !b) throw new Error('usage: node bench/loop-ab.mjs <dist A/index.js> <dist B/index.js> [--runs 5]')
const runs = rest.includes('--runs') ? Number(rest[rest.indexOf('--runs') + 1]) : 5
const builds = { A: await import(pathToFileURL(resolve(a)).href), B: await import(pathToFileURL(resolve(b)).href) }
const base = await mkdtemp(join(tmpdir(), 'vaultplan-loop-ab-'))
const HOPS = 1001

async function loop(lib, dir) {
  await writeLoopVault(dir)
  let judged = 0
  let started
  let cpu
  let figure
  const result = await lib.runPlan(dir, {
    query: 'benchmark',
    fsync: false,
    maxSteps: 100_000,
    work: async (step) => output(step.node.id, step.visit),
    llm: async () => (++judged >= (HOPS - 1) / 2 ? '1: YES' : '1: NO'),
    onEvent(event) {
      if (event.type === 'start') {
        started = performance.now()
        cpu = process.cpuUsage()
      } else if (event.type === 'end' || event.type === 'stop') {
        const used = process.cpuUsage(cpu)
        figure = { wall: performance.now() - started, cpu: (used.user + used.system) / 1000 }
      }
    },
  })
  return { wall: figure.wall / result.steps, cpu: figure.cpu / result.steps }
}

const median = (values) => [...values].sort((x, y) => x - y)[values.length >> 1]
try {
  const figures = { A: [], B: [], floor: [] }
  await loop(builds.A, join(base, 'warm-A'))
  await loop(builds.B, join(base, 'warm-B'))
  for (let run = 0; run < runs; run++) {
    for (const name of ['A', 'B']) figures[name].push(await loop(builds[name], join(base, `${name}-${run}`)))
    const floor = await runFloorSync(join(base, `floor-${run}`), { hops: 1000, fsync: false })
    figures.floor.push({ wall: floor.walkMs / floor.steps, cpu: floor.cpuMs / floor.steps })
  }
  console.log(`loop of ${HOPS} hops, fsync false, ${runs} runs in turns (ms a hop)`)
  for (const [name, list] of Object.entries(figures)) {
    const walls = list.map((each) => each.wall)
    console.log(
      `  ${name.padEnd(5)} wall median ${median(walls).toFixed(3)} (min ${Math.min(...walls).toFixed(3)}), CPU median ${median(list.map((each) => each.cpu)).toFixed(3)}`,
    )
  }
  // Each pair and its floor ran seconds apart: their ratios round by round move less than the medians do.
  const ratios = (x, y) => figures[x].map((each, run) => each.wall / figures[y][run].wall)
  const range = (values) => `${median(values).toFixed(2)} (${Math.min(...values).toFixed(2)}-${Math.max(...values).toFixed(2)})`
  console.log(
    `  per-run ratios, median (range): B/A ${range(ratios('B', 'A'))}, A/floor ${range(ratios('A', 'floor'))}, B/floor ${range(ratios('B', 'floor'))}`,
  )
  console.log(
    `A: ${a}\nB: ${b}\nload average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')} at end`,
  )
} finally {
  await rm(base, { recursive: true, force: true })
}
