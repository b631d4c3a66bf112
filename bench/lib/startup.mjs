/**
 * Start-up of the CLI: `vaultplan validate` on a 3-note vault against a
 * bare `node -e 0`, each a fresh process, measured in turns.
 */
import { execFile } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { summarize, now } from './stats.mjs'

const run = promisify(execFile)
const CLI = join(dirname(fileURLToPath(import.meta.url)), '..', '..', 'dist', 'cli.js')

/** Writes a valid 3-note plan into `dir` (which exists). */
export async function writeTinyVault(dir) {
  await writeFile(join(dir, 'draft.md'), '---\ntype: start\nstatus: pending\n---\n# Draft\n\nWrite it.\n\n## Next\n- [[review]]\n')
  await writeFile(join(dir, 'review.md'), '---\nstatus: pending\nmax_visits: 3\n---\n# Review\n\nCheck it.\n\n## Next\n- approved -> [[send]]\n- [[draft]]\n')
  await writeFile(join(dir, 'send.md'), '---\nstatus: pending\n---\n# Send\n\nSend it.\n')
}

/**
 * `reps` rounds of: `node -e 0`, then `node dist/cli.js validate <vault>`.
 *
 * @returns `{ bare, validate }`, summaries in milliseconds of wall-clock time per process
 */
export async function measureStartup(vault, { reps, warmup = 2 }) {
  const bare = []
  const validate = []
  for (let round = 0; round < warmup + reps; round++) {
    let started = now()
    await run(process.execPath, ['-e', '0'])
    const bareMs = now() - started
    started = now()
    await run(process.execPath, [CLI, 'validate', vault])
    const validateMs = now() - started
    if (round < warmup) continue
    bare.push(bareMs)
    validate.push(validateMs)
  }
  return { bare: summarize(bare), validate: summarize(validate) }
}
