/**
 * CPU profiles of what the bench measures, to see what bounds a figure.
 * The V8 profiler runs around the measured part only (not the vault's
 * generation, not the warm-up); the functions with the most self and
 * inclusive time are printed, and the `.cpuprofile` is kept for Chrome
 * DevTools.
 *
 * Usage (after `npm run build` and `npm --prefix bench ci`):
 *   node bench/profile.mjs loop [hops] [--fsync]   the draft/review loop (default 1001 hops)
 *   node bench/profile.mjs path [nodes] [--fsync]  the path plan (default 1000 nodes)
 *   node bench/profile.mjs load [notes]            load + validate of a generated vault (default 10000)
 */
import { Session } from 'node:inspector/promises'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runVaultplan } from './lib/contenders.mjs'
import { topFunctions } from './lib/cpuprofile-top.mjs'
import { loadAndValidate } from './lib/load.mjs'
import { writeBigVault, writeLoopVault, writePathVault } from './lib/vaults.mjs'

const args = process.argv.slice(2)
const fsync = args.includes('--fsync')
const [what = 'loop', size] = args.filter((arg) => !arg.startsWith('--'))
const base = await mkdtemp(join(tmpdir(), 'vaultplan-profile-'))
const session = new Session()
session.connect()
await session.post('Profiler.enable')
await session.post('Profiler.setSamplingInterval', { interval: 200 })

let profile
try {
  if (what === 'load') {
    await writeBigVault(base, Number(size ?? 10_000))
    await loadAndValidate(base) // warm-up: JIT and page cache
    await session.post('Profiler.start')
    console.log(JSON.stringify(await loadAndValidate(base)))
  } else {
    const count = Number(size ?? (what === 'path' ? 1000 : 1001))
    const warm = join(base, 'warm')
    const vault = join(base, 'vault')
    for (const dir of [warm, vault]) {
      if (what === 'path') await writePathVault(dir, count)
      else await writeLoopVault(dir)
    }
    const options = { fsync, maxSteps: 100_000, yesAt: (count - 1) / 2 }
    await runVaultplan(warm, options)
    await session.post('Profiler.start')
    const figure = await runVaultplan(vault, options)
    console.log(JSON.stringify({ ...figure, perHopMs: figure.walkMs / figure.steps }))
  }
  ;({ profile } = await session.post('Profiler.stop'))
} finally {
  session.disconnect()
  await rm(base, { recursive: true, force: true })
}

const file = join(tmpdir(), `vaultplan-${what}-${Date.now()}.cpuprofile`)
await writeFile(file, JSON.stringify(profile))
const { totalMs, self, inclusive } = topFunctions(profile, 30)
const print = (title, rows) => {
  console.log(`\n${title} (of ${totalMs.toFixed(0)} ms sampled)`)
  for (const row of rows) console.log(`${String(row.ms).padStart(9)} ms ${String(row.pct).padStart(5)}%  ${row.name}`)
}
print('self time', self)
print('inclusive time', inclusive)
console.log(`\nprofile: ${file}`)
