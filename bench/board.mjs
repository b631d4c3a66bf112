/**
 * How long the board's pages take on big inputs, fetched from a running
 * board as a browser would (with its cookie), the whole HTML read:
 *
 * - the runs page of a root of 500 vaults, each with a run one step in
 *   (every tenth waiting on a person);
 * - the page of one run of 1,000 hops (two notes in a loop, an output a
 *   hop): its timeline of every hop and its latest 50 outputs, as it
 *   opens; and the same page with every output ("show all"), without a
 *   target.
 *
 * Each is loaded 7 times after a warm-up; the median, min and max go to
 * `bench/results/board.json` (docs/performance.md is rendered from it by
 * scripts/docs-bench.ts). The target: each under a second. Uses the built
 * package: `npm run build && node bench/board.mjs [--vaults N] [--hops N]`
 * (other sizes than the defaults write `board-custom.json`).
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runPlan } from '../dist/index.js'
import { startBoard } from '../dist/board/index.js'
import { startRecord, writeResult } from './lib/results.mjs'
import { summarize } from './lib/stats.mjs'

const option = (name, fallback) => {
  const at = process.argv.indexOf(name)
  return at === -1 ? fallback : Number(process.argv[at + 1])
}
const VAULTS = option('--vaults', 500)
const HOPS = option('--hops', 1_000)
const LOADS = 7
const TARGET_MS = 1_000
/** What a run's page shows of its outputs unless asked for all (src/board/board-data.ts). */
const OUTPUTS_SHOWN = 50
const begun = startRecord()

/** A draft -> review -> send plan; `human` makes review wait on a person. */
async function writeTeamVault(vault, human) {
  await mkdir(vault, { recursive: true })
  await writeFile(join(vault, 'draft.md'), '---\ntype: start\n---\n# Draft\n\nWrite it.\n\n## Next\n- [[review]]\n')
  await writeFile(
    join(vault, 'review.md'),
    `---\n${human ? 'judge: human\n' : ''}---\n# Review\n\nRead it.\n\n## Next\n- ${human ? '[ ] ' : ''}approved -> [[send]]\n- ${human ? '[ ] ' : ''}again -> [[draft]]\n`,
  )
  await writeFile(join(vault, 'send.md'), '# Send\n\nSend it.\n')
}

/** Loads `path` from the board after a warm-up, `LOADS` times, checking each answer with `check`; the times in ms. */
async function timeLoads(board, path, check) {
  const load = async () => {
    const started = performance.now()
    const response = await fetch(`${board.origin}${path}`, { headers: { cookie: `vaultplan_board_${new URL(board.origin).port}=bench` } })
    const html = await response.text()
    const ms = performance.now() - started
    if (response.status !== 200) throw new Error(`${path} answered ${response.status}`)
    check(html)
    return ms
  }
  await load()
  const times = []
  for (let round = 0; round < LOADS; round++) times.push(await load())
  return summarize(times)
}

/** The runs page of `VAULTS` vaults. */
async function runsPage() {
  const root = await mkdtemp(join(tmpdir(), 'vaultplan-bench-board-'))
  try {
    for (let index = 0; index < VAULTS; index++) {
      const vault = join(root, `team-${Math.floor(index / 50)}`, `plan-${String(index).padStart(3, '0')}`)
      const human = index % 10 === 0
      await writeTeamVault(vault, human)
      await runPlan(vault, { query: `Plan ${index}`, fsync: false, maxSteps: human ? 2 : 1, work: async () => 'done', llm: async () => '1: NO\n2: NO' })
    }
    const board = await startBoard({ root, token: 'bench' })
    try {
      return await timeLoads(board, '/?tab=all', (html) => {
        if ((html.match(/<tr><td>/g) ?? []).length !== VAULTS) throw new Error(`the runs page did not list ${VAULTS} vaults`)
      })
    } finally {
      await board.close()
    }
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

/** The page of one run of `HOPS` hops: draft and review in a loop, the judge always sending it back. */
async function runPage() {
  const root = await mkdtemp(join(tmpdir(), 'vaultplan-bench-board-run-'))
  try {
    const vault = join(root, 'long')
    await mkdir(vault, { recursive: true })
    const visits = Math.ceil(HOPS / 2) + 1
    await writeFile(join(vault, 'draft.md'), `---\ntype: start\nmax_visits: ${visits}\n---\n# Draft\n\nWrite it.\n\n## Next\n- [[review]]\n`)
    await writeFile(
      join(vault, 'review.md'),
      `---\nmax_visits: ${visits}\n---\n# Review\n\nRead it.\n\n## Next\n- approved -> [[send]]\n- again -> [[draft]]\n`,
    )
    await writeFile(join(vault, 'send.md'), '# Send\n\nSend it.\n')
    const result = await runPlan(vault, {
      query: 'A long run',
      fsync: false,
      maxSteps: HOPS,
      work: async (step) => `Step ${step.step}: a paragraph of **output**, as a model writes one.`,
      llm: async () => '1: NO\n2: YES',
    })
    if (result.steps !== HOPS) throw new Error(`the long run made ${result.steps} hops, not ${HOPS}`)
    const board = await startBoard({ root, token: 'bench' })
    const shows = (hops, outputs) => (html) => {
      const rows = html.slice(html.indexOf('<table class="hops">')).match(/<tr><td>/g) ?? []
      const rendered = html.match(/<article class="output" id="output-/g) ?? []
      if (rows.length !== hops || rendered.length !== outputs)
        throw new Error(`the run page showed ${rows.length} hops and ${rendered.length} outputs, not ${hops} and ${outputs}`)
    }
    try {
      return {
        latest: await timeLoads(board, '/run?vault=long', shows(HOPS, Math.min(HOPS, OUTPUTS_SHOWN))),
        all: await timeLoads(board, '/run?vault=long&outputs=all', shows(HOPS, HOPS)),
      }
    } finally {
      await board.close()
    }
  } finally {
    await rm(root, { recursive: true, force: true })
  }
}

const runs = await runsPage()
const run = await runPage()
const pages = [
  { name: `runs page, ${VAULTS} vaults`, summary: runs, targetMs: TARGET_MS },
  { name: `run page, ${HOPS} hops (the latest ${OUTPUTS_SHOWN} outputs)`, summary: run.latest, targetMs: TARGET_MS },
  { name: `run page, ${HOPS} hops, all ${HOPS} outputs ("show all")`, summary: run.all, targetMs: null },
]
const ms = (value) => `${Math.round(value)} ms`
for (const { name, summary } of pages) {
  console.log(`${name}: median ${ms(summary.median)} (min ${ms(summary.min)}, max ${ms(summary.max)}, ${LOADS} loads after a warm-up)`)
}
const custom = VAULTS !== 500 || HOPS !== 1_000
const path = await writeResult(custom ? 'board-custom' : 'board', begun, {
  config: { vaults: VAULTS, hops: HOPS, loads: LOADS },
  figures: pages.map(({ name, summary, targetMs }) => ({
    page: name,
    median: +summary.median.toFixed(1),
    min: +summary.min.toFixed(1),
    max: +summary.max.toFixed(1),
    targetMs,
    pass: targetMs === null ? null : summary.median < targetMs,
  })),
})
console.log(`wrote ${path}`)
