/**
 * `node bench/search-engines.mjs`: the two pure-JS full-text engines
 * vaultplan could search past runs with, on the same 10,000 generated
 * outputs (about 1 KB each): index build time, median latency of 100
 * queries, size of the saved index and time to reopen it. Needs `bench/`'s
 * dependencies (`npm --prefix bench ci`). vaultplan uses the one this
 * picks (see docs/memory.md, "Search over past runs"). Writes
 * `bench/results/search-engines.json` (with the commit, the machine and
 * the date), from which `npm run docs` renders docs/memory.md's table.
 */
import { readFileSync } from 'node:fs'
import MiniSearch from 'minisearch'
import FlexSearch from 'flexsearch'
import { startRecord, writeResult } from './lib/results.mjs'
import { summarize, now } from './lib/stats.mjs'
import { random } from './lib/vaults.mjs'
import { outputText, queries, vocabulary } from './lib/outputs.mjs'

const versionOf = (name) => JSON.parse(readFileSync(new URL(`./node_modules/${name}/package.json`, import.meta.url), 'utf8')).version
const quick = process.argv.includes('--quick')
const COUNT = quick ? 1000 : 10_000
const REPS = 3
const begun = startRecord()

const words = vocabulary()
const rand = random(5)
const docs = Array.from({ length: COUNT }, (_, index) => ({
  id: `v${index % 50}/outputs/${String(index).padStart(4, '0')}-n.md`,
  text: outputText(rand, words, 600 + Math.floor(rand() * 800)),
}))
const asked = queries(7, words, 100)

const engines = {
  minisearch: {
    version: versionOf('minisearch'),
    build() {
      const index = new MiniSearch({ fields: ['text'], storeFields: [] })
      index.addAll(docs)
      return index
    },
    query: (index, query) => index.search(query, { combineWith: 'AND' }).slice(0, 10),
    save: async (index) => JSON.stringify(index),
    open: async (json) => MiniSearch.loadJSON(json, { fields: ['text'], storeFields: [] }),
  },
  flexsearch: {
    version: versionOf('flexsearch'),
    build() {
      const index = new FlexSearch.Index({ tokenize: 'strict', resolution: 9 })
      for (let id = 0; id < docs.length; id++) index.add(id, docs[id].text)
      return index
    },
    // FlexSearch resolves ids in relevance order but gives no score.
    query: (index, query) => index.search(query, { limit: 10 }),
    async save(index) {
      const parts = {}
      await index.export((key, data) => {
        parts[key] = data
      })
      return JSON.stringify(parts)
    },
    async open(json) {
      const index = new FlexSearch.Index({ tokenize: 'strict', resolution: 9 })
      for (const [key, data] of Object.entries(JSON.parse(json))) await index.import(key, data)
      return index
    },
  },
}

const rows = {}
for (const [name, engine] of Object.entries(engines)) rows[name] = { build: [], query: [], open: [], bytes: 0, hits: 0 }
for (let rep = 0; rep < REPS + 1; rep++) {
  for (const [name, engine] of Object.entries(engines)) {
    let started = now()
    const index = engine.build()
    const build = now() - started
    const latencies = []
    let hits = 0
    for (const query of asked) {
      started = now()
      hits += engine.query(index, query).length
      latencies.push(now() - started)
    }
    const saved = await engine.save(index)
    started = now()
    const reopened = await engine.open(saved)
    const open = now() - started
    if (engine.query(reopened, asked[0]).length !== engine.query(index, asked[0]).length) throw new Error(`${name}: the reopened index answers differently`)
    if (rep === 0) continue // warm-up
    rows[name].build.push(build)
    rows[name].query.push(summarize(latencies).median)
    rows[name].open.push(open)
    rows[name].bytes = saved.length
    rows[name].hits = hits
  }
}

const ms = (values) => summarize(values).median.toFixed(values === undefined ? 0 : 2)
console.log(
  `${COUNT} outputs (${(docs.reduce((sum, doc) => sum + doc.text.length, 0) / 1e6).toFixed(1)} MB of text), 100 queries of 1-3 words, median of ${REPS} repetitions`,
)
console.log('engine             build ms   query ms (median of 100)   saved MB   reopen ms   hits (top 10, AND)')
for (const [name, row] of Object.entries(rows)) {
  console.log(
    `${`${name} ${engines[name].version}`.padEnd(18)} ${ms(row.build).padStart(8)}   ${ms(row.query).padStart(24)}   ${(row.bytes / 1e6).toFixed(1).padStart(8)}   ${ms(row.open).padStart(9)}   ${row.hits}`,
  )
}
const round = (value, digits) => +value.toFixed(digits)
const path = await writeResult(quick ? 'search-engines-quick' : 'search-engines', begun, {
  config: { outputs: COUNT, textMB: round(docs.reduce((sum, doc) => sum + doc.text.length, 0) / 1e6, 1), queries: asked.length, repetitions: REPS },
  engines: Object.entries(rows).map(([name, row]) => ({
    name,
    version: engines[name].version,
    buildMs: round(summarize(row.build).median, 0),
    queryMs: round(summarize(row.query).median, 2),
    savedMB: round(row.bytes / 1e6, 1),
    reopenMs: round(summarize(row.open).median, 0),
    hits: row.hits,
  })),
})
console.log(`Written to ${path}.`)
