/**
 * `searchRuns` against long queries and large outputs: one run of a 10-note
 * path plan whose outputs are about 500 KB of generated prose each, then
 * searches of one word, of 64 words (the most a query may hold) and of a
 * 35 KB query (refused now), each the median of 5 after a warm-up. The words
 * are rare ones, so each hit's snippet scans far into its note.
 *
 * Usage (after `npm run build`): node bench/search-query.mjs [--dist path/to/dist]
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { outputText, vocabulary } from './lib/outputs.mjs'
import { random, writePathVault } from './lib/vaults.mjs'

const args = process.argv.slice(2)
const distAt = args.indexOf('--dist')
const dist = distAt === -1 ? new URL('../dist/', import.meta.url) : pathToFileURL(`${args[distAt + 1].replace(/\/?$/, '/')}`)
const { runPlan, searchRuns } = await import(new URL('index.js', dist).href)

const root = await mkdtemp(join(tmpdir(), 'vaultplan-search-query-'))
const vault = join(root, 'big')
await writePathVault(vault, 10)
const words = vocabulary()
const rand = random(7)
await runPlan(vault, { query: 'big outputs', fsync: false, work: async () => outputText(rand, words, 500_000) })

const rare = words.slice(-64)
const queries = {
  'one word': words[2_000],
  '64 words': [words[2_000], ...rare.slice(1)].join(' '),
  '35 KB query': Array.from({ length: 35_000 / 7 }, (_, n) => words[n % words.length])
    .join(' ')
    .slice(0, 35_000),
}
console.log(`node bench/search-query.mjs${distAt === -1 ? '' : ` --dist ${args[distAt + 1]}`}`)
for (const [name, query] of Object.entries(queries)) {
  const times = []
  let answer
  for (let round = 0; round < 6; round++) {
    const started = performance.now()
    answer = await searchRuns(root, query).then(
      (hits) => `${hits.length} hits`,
      (error) => `${error.name}: ${error.message.slice(0, 60)}...`,
    )
    if (round > 0) times.push(performance.now() - started)
  }
  times.sort((a, b) => a - b)
  console.log(`${name.padEnd(12)} median ${times[2].toFixed(1).padStart(8)} ms  (${answer})`)
}
await rm(root, { recursive: true, force: true })
