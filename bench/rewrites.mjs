/**
 * What one atomic rewrite of a 1 KB note costs, the plain way (temporary
 * file, rename over the note: the rename frees the old version) against the
 * way a status rewrite does it (the old version keeps a second name until
 * the rename is done, which is then moved aside and unlinked in the thread
 * pool). Variants run in turns, 1,000 rewrites each, `--rounds` times.
 *
 *   node bench/rewrites.mjs [--rounds 3] [--dir /tmp]
 */
import { closeSync, constants, linkSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, writeFileSync, writeSync } from 'node:fs'
import { unlink } from 'node:fs/promises'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'

const args = process.argv.slice(2)
const option = (name, fallback) => (args.includes(name) ? args[args.indexOf(name) + 1] : fallback)
const rounds = Number(option('--rounds', 3))
const base = mkdtempSync(join(option('--dir', tmpdir()), 'vaultplan-rewrites-'))
const text = (letter) => `---\nstatus: active\n---\n${letter.repeat(1000)}\n`
const REWRITES = 1000

async function variant(kind) {
  const dir = mkdtempSync(join(base, `${kind}-`))
  const note = join(dir, 'note.md')
  const park = join(dir, 'park')
  mkdirSync(park)
  writeFileSync(note, text('x'))
  const renames = []
  const pending = []
  const started = performance.now()
  for (let i = 0; i < REWRITES; i++) {
    const temp = join(dir, `.tmp-${i}`)
    const fd = openSync(temp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644)
    writeSync(fd, text(i % 2 ? 'a' : 'b'))
    closeSync(fd)
    const old = join(dir, `.old-${i}`)
    if (kind === 'second name') linkSync(note, old)
    const before = performance.now()
    renameSync(temp, note)
    renames.push((performance.now() - before) * 1000)
    if (kind === 'second name') {
      const parked = join(park, `.old-${i}`)
      renameSync(old, parked)
      pending.push(new Promise((resolve) => setImmediate(resolve)).then(() => unlink(parked)))
    }
    // A hop's rewrites are a few per turn of the event loop.
    if (i % 2) await new Promise((resolve) => setImmediate(resolve))
  }
  await Promise.all(pending)
  const wall = ((performance.now() - started) / REWRITES) * 1000
  renames.sort((a, b) => a - b)
  const mean = renames.reduce((sum, value) => sum + value, 0) / renames.length
  return { wall, renameMedian: renames[renames.length >> 1], renameMean: mean }
}

try {
  console.log(`rewrites of a 1 KB note, ${REWRITES} in a row, ${rounds} rounds in turns (us)`)
  for (let round = 1; round <= rounds; round++) {
    for (const kind of ['plain', 'second name']) {
      const r = await variant(kind)
      console.log(
        `  round ${round} ${kind.padEnd(11)} ${r.wall.toFixed(0).padStart(5)} a rewrite; its rename median ${r.renameMedian.toFixed(0)}, mean ${r.renameMean.toFixed(0)}`,
      )
    }
  }
  console.log(
    `load average ${loadavg()
      .map((value) => value.toFixed(2))
      .join(' ')} at end`,
  )
} finally {
  rmSync(base, { recursive: true, force: true })
}
