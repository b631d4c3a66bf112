/**
 * What each directory operation of a hop costs at the same moments: one
 * loop that does, in turn, each kind of call a hop or the floor makes
 * (create a temporary file and write 900 bytes, rename it over a note,
 * create a note that stays, give the note a second name, unlink a second
 * name), `--ops` times, and prints each kind's median and mean. The floor
 * makes 2 creates and 2 renames a hop; a vaultplan hop 3 creates, 5
 * renames, 2 links and 2 unlinks (see bench/hop-syscalls.mjs).
 *
 *   node bench/dir-ops.mjs [--ops 3000]
 */
import { closeSync, constants, linkSync, mkdirSync, mkdtempSync, openSync, renameSync, rmSync, unlinkSync, writeSync } from 'node:fs'
import { loadavg, tmpdir } from 'node:os'
import { join } from 'node:path'

const args = process.argv.slice(2)
const ops = args.includes('--ops') ? Number(args[args.indexOf('--ops') + 1]) : 3000
const dir = mkdtempSync(join(tmpdir(), 'vaultplan-dir-ops-'))
mkdirSync(join(dir, 'outputs'))
const data = Buffer.alloc(900, 'x')
const create = (path) => {
  const fd = openSync(path, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644)
  writeSync(fd, data)
  closeSync(fd)
}
const times = {
  'create a temporary file': [],
  'rename it over the note': [],
  'create a note that stays': [],
  'link a second name': [],
  'unlink a second name': [],
}
const timed = (kind, call) => {
  const started = performance.now()
  call()
  times[kind].push((performance.now() - started) * 1000)
}
const note = join(dir, 'note.md')
try {
  create(note)
  for (let op = 0; op < ops; op++) {
    const temp = join(dir, `.tmp-${op}`)
    const second = join(dir, `.old-${op}`)
    timed('link a second name', () => linkSync(note, second))
    timed('create a temporary file', () => create(temp))
    timed('rename it over the note', () => renameSync(temp, note))
    timed('create a note that stays', () => create(join(dir, 'outputs', `${op}.md`)))
    timed('unlink a second name', () => unlinkSync(second))
  }
} finally {
  rmSync(dir, { recursive: true, force: true })
}
console.log(`directory operations in turns, ${ops} of each (us)`)
for (const [kind, values] of Object.entries(times)) {
  const sorted = [...values].sort((a, b) => a - b)
  const mean = values.reduce((sum, value) => sum + value, 0) / values.length
  console.log(`  ${kind.padEnd(26)} median ${sorted[sorted.length >> 1].toFixed(0).padStart(5)}, mean ${mean.toFixed(0).padStart(5)}`)
}
console.log(
  `load average ${loadavg()
    .map((value) => value.toFixed(2))
    .join(' ')} at end`,
)
