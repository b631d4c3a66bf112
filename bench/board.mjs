/**
 * How long the board's runs page takes on a big root: 500 vaults, each with
 * a run one step in (every tenth waiting on a person), the page fetched
 * from a running board as a browser would (with its cookie). Prints the
 * median, min and max of several loads after a warm-up. Uses the built
 * package: `npm run build && node bench/board.mjs [--vaults N]`.
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runPlan } from '../dist/index.js'
import { startBoard } from '../dist/board/index.js'

const at = process.argv.indexOf('--vaults')
const count = at === -1 ? 500 : Number(process.argv[at + 1])
const root = await mkdtemp(join(tmpdir(), 'vaultplan-bench-board-'))
try {
  for (let index = 0; index < count; index++) {
    const vault = join(root, `team-${Math.floor(index / 50)}`, `plan-${String(index).padStart(3, '0')}`)
    await mkdir(vault, { recursive: true })
    const human = index % 10 === 0
    await writeFile(join(vault, 'draft.md'), '---\ntype: start\n---\n# Draft\n\nWrite it.\n\n## Next\n- [[review]]\n')
    await writeFile(
      join(vault, 'review.md'),
      `---\n${human ? 'judge: human\n' : ''}---\n# Review\n\nRead it.\n\n## Next\n- ${human ? '[ ] ' : ''}approved -> [[send]]\n- ${human ? '[ ] ' : ''}again -> [[draft]]\n`,
    )
    await writeFile(join(vault, 'send.md'), '# Send\n\nSend it.\n')
    await runPlan(vault, { query: `Plan ${index}`, fsync: false, maxSteps: human ? 2 : 1, work: async () => 'done', llm: async () => '1: NO\n2: NO' })
  }
  const board = await startBoard({ root, token: 'bench' })
  const get = async () => {
    const started = performance.now()
    const response = await fetch(`${board.origin}/?tab=all`, { headers: { cookie: 'vaultplan_board=bench' } })
    const html = await response.text()
    if (response.status !== 200 || (html.match(/<tr><td>/g) ?? []).length !== count) throw new Error(`the runs page did not list ${count} vaults`)
    return performance.now() - started
  }
  await get()
  const times = []
  for (let round = 0; round < 7; round++) times.push(await get())
  times.sort((a, b) => a - b)
  const ms = (value) => `${Math.round(value)} ms`
  console.log(`runs page of ${count} vaults: median ${ms(times[3])} (min ${ms(times[0])}, max ${ms(times[6])}, 7 loads after a warm-up)`)
  await board.close()
} finally {
  await rm(root, { recursive: true, force: true })
}
