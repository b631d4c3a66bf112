import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { bin, root } from './helpers/cli.js'
import { readTree, tempDir } from './helpers/vault.js'

/** The README's "Quick start" section: its note files, its script and what the README says it prints. */
async function quickStart(): Promise<{ notes: Record<string, string>; script: string; printed: string }> {
  const readme = await readFile(join(root, 'README.md'), 'utf8')
  const lines = readme.split('\n')
  const first = lines.indexOf('## Quick start')
  if (first === -1) throw new Error('README.md has no "## Quick start" section')
  // The section ends at the next level-2 heading outside a code block (the notes have their own `## Next`).
  let fenced = false
  let last = first + 1
  for (; last < lines.length; last++) {
    if (lines[last]!.startsWith('```')) fenced = !fenced
    else if (!fenced && lines[last]!.startsWith('## ')) break
  }
  const section = `${lines.slice(first + 1, last).join('\n')}\n`
  const notes = Object.fromEntries([...section.matchAll(/`(plan\/[^`]+\.md)`:\n\n```markdown\n([\s\S]*?)```\n/g)].map(([, path, text]) => [path!, text!]))
  const script = /```ts\n([\s\S]*?)```\n/.exec(section)?.[1]
  const printed = /prints:\n\n```text\n([\s\S]*?)```\n/.exec(section)?.[1]
  if (script === undefined || printed === undefined) throw new Error('the Quick start has no ```ts block or no ```text block of what it prints')
  return { notes, script, printed }
}

/** Runs a TypeScript file with tsx from `cwd`, as `npx tsx file.ts` does. */
function tsx(file: string, cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(join(root, 'node_modules/.bin/tsx'), [file], { cwd, env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' } }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr })
    })
  })
}

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`\`${bin}\` is missing; run \`npm run build\` first (\`npm test\` does)`)
})

describe("the README's quick start", () => {
  test('runs as written, offline and without a model, printing what the README says; the plan stays a clean template', async () => {
    const { notes, script, printed } = await quickStart()
    expect(Object.keys(notes)).toEqual(['plan/draft.md', 'plan/review.md', 'plan/send.md'])
    const dir = await tempDir()
    for (const [path, text] of Object.entries(notes)) {
      await mkdir(join(dir, 'plan'), { recursive: true })
      await writeFile(join(dir, path), text)
    }
    await writeFile(join(dir, 'quick-start.mts'), script)
    // The built package under its own name, as `npm install` would put it (no LLM_* variables: no model).
    await mkdir(join(dir, 'node_modules'))
    await symlink(root, join(dir, 'node_modules', 'vaultplan'), 'dir')

    expect(await tsx('quick-start.mts', dir)).toEqual({ code: 0, stdout: printed, stderr: '' })
    expect(await readTree(join(dir, 'plan'))).toEqual(Object.fromEntries(Object.entries(notes).map(([path, text]) => [path.slice('plan/'.length), text])))
    expect(existsSync(join(dir, 'runs/announce/00_plan-trace/trace.md'))).toBe(true)
    // Run again: the recorded result, no work done.
    expect(await tsx('quick-start.mts', dir)).toEqual({ code: 0, stdout: `${printed.trimEnd().split('\n').at(-1)}\n`, stderr: '' })
  }, 60_000)
})
