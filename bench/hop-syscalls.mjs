/**
 * The file work of one loop hop, done with nothing else around it: the
 * bench's synchronous floor (two plain atomic rewrites and an append) side
 * by side with the exact system calls a vaultplan hop makes for its safety
 * (see `replaceNoteSync`, `saveOutputNote`, `TraceAppender`), in variants,
 * 1,000 hops each, in rounds (every variant once a round, in turns). Each
 * variant's figure is the median over the rounds of its time divided by the
 * floor's time of the same round, so a file system that swings from one
 * second to the next hits both alike. Tells what a hop's safety costs apart
 * from what the rest of the run costs.
 *
 *   node bench/hop-syscalls.mjs [--rounds 7] [--only floor,hop,vaultplan] [--name hop-syscalls]   (after `npm run build` and `npm --prefix bench ci`)
 *
 * Writes `bench/results/<name>.json` (with the commit, the machine and the date;
 * `--name hop-syscalls-tmpfs` for a run with `TMPDIR=/dev/shm`), from which
 * `npm run docs` renders docs/performance.md.
 *
 * Variants:
 * - `floor`: per hop two rewrites (temporary file, write, close, rename over the note) and a 200-byte append.
 * - `floor + output`: the floor plus a new output note a hop, created under its own name: what any executor
 *   that keeps one output note a hop pays at least, without the second names that keep an editor's save.
 * - `hop`: the calls a vaultplan hop makes, one for one: per status rewrite a second name for the old version
 *   (link, stat; the claim also looks at the note first), the temporary file (open, write, fstat, close,
 *   rename), the second name looked at again and moved into the run folder, unlinked there in the thread
 *   pool; the output note by a temporary file and a rename; the lock file looked at twice, the ledger once,
 *   the trace appended to.
 * - `direct output`: `hop` with the output note created under its own name (no temporary file, no rename).
 * - `batched unlinks`: `hop` with the second names unlinked 64 at a time, one thread-pool turn a batch.
 * - `unlink at once`: `hop` with the second names unlinked on the event loop right after each rename.
 * - `vaultplan`: `runPlan` itself (the build in `dist/`) on the bench's draft/review loop, 1,001 hops,
 *   scripted worker and judge (bench/lib/contenders.mjs): the file work above plus everything else.
 */
import {
  appendFileSync,
  closeSync,
  constants,
  fstatSync,
  linkSync,
  mkdirSync,
  mkdtempSync,
  openSync,
  renameSync,
  rmSync,
  statSync,
  unlinkSync,
  writeFileSync,
  writeSync,
} from 'node:fs'
import { unlink } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'
import { runVaultplan } from './lib/contenders.mjs'
import { startRecord, writeResult } from './lib/results.mjs'
import { writeLoopVault } from './lib/vaults.mjs'

const args = process.argv.slice(2)
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback)
const rounds = Number(option('--rounds', 7))
const name = option('--name', 'hop-syscalls')
const begun = startRecord()
const HOPS = 1000
const BATCH = 64
const base = mkdtempSync(join(tmpdir(), 'vaultplan-hop-syscalls-'))
const note = (status, letter) => Buffer.from(`---\nstatus: ${status}\nrole: draft\n---\n${letter.repeat(900)}\n`)
const output = (hop) =>
  Buffer.from(`---\nvaultplan: output\nrun: r\nstep: ${hop}\n---\nOutput of draft, visit ${hop}: the work is done and nothing needs to change.\n`)
const record = Buffer.from(`\n## Step 1 · [[draft]] · visit 1\n\n${'- x\n'.repeat(40)}`)
let serial = 0

function create(path, data) {
  const fd = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644)
  writeSync(fd, data)
  closeSync(fd)
}

function plainRewrite(dir, path, data) {
  const temp = join(dir, `.tmp-${serial++}`)
  create(temp, data)
  renameSync(temp, path)
}

/** A status rewrite as replaceNoteSync does it (`look`: the note is stat-ed first); the old version's second name ends in `park`, its path returned. */
function guardedRewrite(dir, path, data, park, look) {
  const before = look ? statSync(path) : { mode: 0o644 }
  const old = join(dir, `.old-${serial++}`)
  linkSync(path, old)
  statSync(old)
  const temp = join(dir, `.tmp-${serial++}`)
  const fd = openSync(temp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, before.mode & 0o7777)
  writeSync(fd, data)
  fstatSync(fd)
  closeSync(fd)
  renameSync(temp, path)
  statSync(old)
  const parked = join(park, `.tmp-${serial++}`)
  renameSync(old, parked)
  return parked
}

const tick = () => new Promise((resolve) => setImmediate(resolve))

async function variant(kind) {
  if (kind === 'vaultplan') {
    const dir = join(base, `loop-${serial++}`)
    await writeLoopVault(dir)
    const figure = await runVaultplan(dir, { fsync: false, maxSteps: 100_000, yesAt: HOPS / 2 })
    rmSync(dir, { recursive: true, force: true })
    return figure.walkMs / figure.steps
  }
  const dir = mkdtempSync(join(base, 'v-'))
  const trace = join(dir, 'trace')
  const outputs = join(trace, 'outputs')
  mkdirSync(outputs, { recursive: true })
  const draft = join(dir, 'draft.md')
  const review = join(dir, 'review.md')
  const traceFile = join(trace, 'trace.md')
  const lock = join(trace, '.lock-holder.json')
  writeFileSync(draft, note('pending', 'd'))
  writeFileSync(review, note('pending', 'r'))
  writeFileSync(lock, '{}')
  writeFileSync(traceFile, '')
  const traceFd = openSync(traceFile, constants.O_WRONLY | constants.O_APPEND)
  const pending = []
  let parked = []
  const started = performance.now()
  for (let hop = 0; hop < HOPS; hop++) {
    const path = hop % 2 ? review : draft
    if (kind === 'floor') {
      plainRewrite(dir, path, note('active', 'a'))
      plainRewrite(dir, path, note('done', 'b'))
      appendFileSync(traceFile, record)
    } else if (kind === 'floor + output') {
      plainRewrite(dir, path, note('active', 'a'))
      create(join(outputs, `${hop}.md`), output(hop))
      plainRewrite(dir, path, note('done', 'b'))
      writeSync(traceFd, record)
    } else {
      const direct = kind === 'direct output'
      parked.push(guardedRewrite(dir, path, note('active', 'a'), trace, true))
      // The worker's turn of the event loop.
      await tick()
      statSync(join(trace, 'ledger.md'), { throwIfNoEntry: false })
      if (direct) create(join(outputs, `${hop}.md`), output(hop))
      else plainRewrite(outputs, join(outputs, `${hop}.md`), output(hop))
      parked.push(guardedRewrite(dir, path, note('done', 'b'), trace, false))
      statSync(lock)
      writeSync(traceFd, record)
      statSync(lock)
      if (kind === 'unlink at once') {
        for (const name of parked) unlinkSync(name)
        parked = []
      } else if (kind !== 'batched unlinks') {
        for (const name of parked) pending.push(tick().then(() => unlink(name)))
        parked = []
      } else if (parked.length >= BATCH) {
        const names = parked
        parked = []
        pending.push(tick().then(() => Promise.all(names.map((name) => unlink(name)))))
      }
    }
    await tick()
  }
  for (const name of parked) pending.push(unlink(name))
  await Promise.all(pending)
  const ms = (performance.now() - started) / HOPS
  closeSync(traceFd)
  rmSync(dir, { recursive: true, force: true })
  return ms
}

const kinds = option('--only', undefined)?.split(',') ?? ['floor', 'floor + output', 'hop', 'direct output', 'batched unlinks', 'unlink at once', 'vaultplan']
if (!kinds.includes('floor')) kinds.unshift('floor')
const times = Object.fromEntries(kinds.map((kind) => [kind, []]))
try {
  for (const kind of kinds) await variant(kind) // warm-up
  for (let round = 0; round < rounds; round++) for (const kind of kinds) times[kind].push(await variant(kind))
} finally {
  rmSync(base, { recursive: true, force: true })
}
const median = (values) => {
  const sorted = [...values].sort((a, b) => a - b)
  const middle = sorted.length >> 1
  return sorted.length % 2 ? sorted[middle] : (sorted[middle - 1] + sorted[middle]) / 2
}
console.log(
  `file work of a loop hop, ${HOPS} hops a variant, ${rounds} rounds in turns after a warm-up round (ms a hop; ratio: median of per-round ratios to the floor)`,
)
const round3 = (value) => +value.toFixed(3)
const rows = []
for (const kind of kinds) {
  const ratios = times[kind].map((ms, round) => ms / times.floor[round])
  rows.push({
    variant: kind,
    msPerHop: { median: round3(median(times[kind])), min: round3(Math.min(...times[kind])), max: round3(Math.max(...times[kind])) },
    toFloor: { median: round3(median(ratios)), min: round3(Math.min(...ratios)), max: round3(Math.max(...ratios)) },
  })
  console.log(
    `  ${kind.padEnd(20)} median ${median(times[kind]).toFixed(3)} ms (min ${Math.min(...times[kind]).toFixed(3)}, max ${Math.max(...times[kind]).toFixed(3)}), ` +
      `/ floor ${median(ratios).toFixed(2)} (${Math.min(...ratios).toFixed(2)}-${Math.max(...ratios).toFixed(2)})`,
  )
}
console.log(
  `load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')} at end`,
)
console.log(`Written to ${await writeResult(name, begun, { config: { hops: HOPS, rounds }, variants: rows })}.`)
