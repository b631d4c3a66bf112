/**
 * How much the machine's file system swings on its own: the bench's
 * synchronous floor workload (two atomic rewrites of a note a hop: create a
 * temp file, write, close, rename over the note; no fsync) run in a row
 * `--rounds` times, 1,000 hops each, nothing else in the process. Every
 * round does the same work, so the spread between rounds is the machine's,
 * not vaultplan's: read the bench's ratios against it.
 *
 *   node bench/fs-noise.mjs [--rounds 8]
 */
import { closeSync, constants, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'

const args = process.argv.slice(2)
const rounds = args.includes('--rounds') ? Number(args[args.indexOf('--rounds') + 1]) : 8
const base = mkdtempSync(join(tmpdir(), 'vaultplan-fs-noise-'))
const data = Buffer.alloc(1024, 'x')

function rewrite(dir, name, serial) {
  const temp = join(dir, `.tmp-${serial}-${name}`)
  const fd = openSync(temp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644)
  writeSync(fd, data)
  closeSync(fd)
  renameSync(temp, join(dir, name))
}

const perHop = []
for (let round = 0; round < rounds; round++) {
  const dir = join(base, `round-${round}`)
  mkdirSync(dir)
  for (const name of ['a.md', 'b.md']) writeFileSync(join(dir, name), data)
  const started = performance.now()
  for (let hop = 0; hop < 1000; hop++) {
    rewrite(dir, 'a.md', hop)
    rewrite(dir, 'b.md', hop)
  }
  perHop.push((performance.now() - started) / 1000)
}
rmSync(base, { recursive: true, force: true })
const sorted = [...perHop].sort((a, b) => a - b)
console.log(`two rewrites a hop, ${rounds} rounds of 1000 hops: ${perHop.map((ms) => ms.toFixed(3)).join(' ')} ms/hop`)
console.log(
  `min ${sorted[0].toFixed(3)}, median ${sorted[Math.floor(rounds / 2)].toFixed(3)}, max ${sorted.at(-1).toFixed(3)}: max/min ${(sorted.at(-1) / sorted[0]).toFixed(1)}x; load average ${loadavg()
    .map((v) => v.toFixed(2))
    .join(' ')}`,
)
