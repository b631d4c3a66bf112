import { execFile } from 'node:child_process'
import { mkdtemp, readdir, readFile, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join, relative } from 'node:path'
import { promisify } from 'node:util'
import { expect, it } from 'vitest'
import { root } from './helpers/cli.js'

/*
 * docs/reference is TypeDoc's rendering of the JSDoc (`npm run docs`). It is
 * committed so it can be read on GitHub; this test regenerates it and fails
 * when the committed copy differs, or when TypeDoc warns (typedoc.json sets
 * treatWarningsAsErrors: a link to nothing, a type the reference leaves out).
 * Slow (TypeDoc compiles the sources): part of the slow suite.
 */

/** Every file under `dir`, by path from it, with its text. */
async function filesOf(dir: string): Promise<Record<string, string>> {
  const entries = await readdir(dir, { recursive: true, withFileTypes: true })
  const files = entries.filter((entry) => entry.isFile()).map((entry) => join(entry.parentPath, entry.name))
  const texts = await Promise.all(files.map((file) => readFile(file, 'utf8')))
  return Object.fromEntries(files.map((file, index) => [relative(dir, file), texts[index]!]).sort(([a], [b]) => a!.localeCompare(b!)))
}

it('docs/reference is what TypeDoc makes of the JSDoc now, without a warning', { timeout: 180_000 }, async () => {
  const out = await mkdtemp(join(tmpdir(), 'vaultplan-reference-'))
  try {
    const typedoc = join(root, 'node_modules', 'typedoc', 'bin', 'typedoc')
    const run = await promisify(execFile)(process.execPath, [typedoc, '--out', out], { cwd: root }).catch((error: { stdout: string; stderr: string }) => error)
    const problems = `${run.stdout}${run.stderr}`
      .replace(/\u001b\[[0-9;]*m/g, '')
      .split('\n')
      .filter((line) => /^\[(warning|error)\]/.test(line))
    expect(problems).toEqual([])
    const [fresh, committed] = await Promise.all([filesOf(out), filesOf(join(root, 'docs', 'reference'))])
    expect(Object.keys(committed), 'the files of docs/reference (run `npm run docs`)').toEqual(Object.keys(fresh))
    for (const [file, text] of Object.entries(fresh)) expect(committed[file], `docs/reference/${file} (run \`npm run docs\`)`).toBe(text)
  } finally {
    await rm(out, { recursive: true, force: true })
  }
})
