/**
 * What a hop costs through the stepping calls in one process, as a queue
 * worker makes them: `nextStep` then `completeStep` on each of N runs of a
 * 10-note linear plan in turn (so every call finds its vault as another
 * vault's calls left the process), with a worker that answers at once.
 * Prints the wall time and the CPU time (user + system) per hop, the median
 * of the rounds, after a warm-up run.
 *
 *   node bench/stepping.mjs [--runs N] [--reps N]
 *
 * Needs the build (`npm run build`).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { cpus, loadavg, tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'

const here = dirname(fileURLToPath(import.meta.url))
const { completeStep, nextStep } = await import(pathToFileURL(join(here, '..', 'dist', 'index.js')).href)
const HOPS = 10
const args = process.argv.slice(2)
const option = (name, fallback) => {
  const index = args.indexOf(name)
  return index === -1 ? fallback : Number(args[index + 1])
}
const runs = option('--runs', 24)
const reps = option('--reps', 3)
const options = { query: 'bench', fsync: false }
const base = await mkdtemp(join(tmpdir(), 'vaultplan-bench-stepping-'))

/** A linear plan of `HOPS` notes. */
async function writeLinear(dir) {
  await mkdir(dir, { recursive: true })
  for (let i = 0; i < HOPS; i++) {
    const front = i === 0 ? '---\ntype: start\n---\n' : ''
    const next = i < HOPS - 1 ? `\n## Next\n- [[step-${i + 1}]]\n` : ''
    await writeFile(join(dir, `step-${i}.md`), `${front}# Step ${i}\n\nDo step ${i}.\n${next}`)
  }
}

/** Works every run to its end, one hop of each in turn; the cost per hop. */
async function round(name) {
  const vaults = []
  for (let i = 0; i < runs; i++) {
    const vault = join(base, name, `run-${i}`)
    await writeLinear(vault)
    vaults.push(vault)
  }
  let hops = 0
  const started = performance.now()
  const cpu = process.cpuUsage()
  for (let pass = 0; pass <= HOPS; pass++) {
    for (const vault of vaults) {
      const step = await nextStep(vault, options)
      if (step.kind !== 'work') continue
      await completeStep(vault, step.key, { output: `done ${step.node.id}` }, options)
      hops++
    }
  }
  const used = process.cpuUsage(cpu)
  if (hops !== runs * HOPS) throw new Error(`expected ${runs * HOPS} hops, worked ${hops}`)
  return { wall: (performance.now() - started) / hops, cpu: (used.user + used.system) / 1000 / hops }
}

const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = Math.floor(sorted.length / 2)
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}

try {
  await round('warm-up')
  const results = []
  for (let rep = 0; rep < reps; rep++) results.push(await round(`round-${rep}`))
  const wall = results.map((result) => result.wall)
  const cpu = results.map((result) => result.cpu)
  console.log(`stepping: ${runs} runs x ${HOPS} hops in turns, nextStep + completeStep a hop, ${reps} rounds`)
  console.log(
    `  wall ${median(wall).toFixed(2)} ms/hop (min ${Math.min(...wall).toFixed(2)}, max ${Math.max(...wall).toFixed(2)}), CPU ${median(cpu).toFixed(2)} ms/hop (min ${Math.min(...cpu).toFixed(2)}, max ${Math.max(...cpu).toFixed(2)})`,
  )
  console.log(
    `Node ${process.version}, ${cpus().length} x ${cpus()[0]?.model ?? 'unknown'}, load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')} at end.`,
  )
} finally {
  await rm(base, { recursive: true, force: true })
}
