import { readdir } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runPlan } from 'vaultplan'
import { vaultplan } from './helpers/cli.js'
import { linear } from './helpers/plans.js'
import { read, tempDir, writeVault } from './helpers/vault.js'

async function root() {
  const dir = await tempDir()
  for (const [name, text] of [
    ['alpha', 'The vendor API answers 429 past its rate limit.'],
    ['beta', 'The venue holds 200 guests.'],
  ] as const) {
    const vault = await writeVault(linear(), join(dir, name))
    await runPlan(vault, { query: name, fsync: false, work: async (step) => (step.node.id === 'a' ? text : 'ok') })
  }
  return dir
}

describe('vaultplan search', () => {
  it('prints each hit with its file, kind, step, note, run and snippet; --json gives the hits', async () => {
    const dir = await root()
    const run = /^run: (\S+)$/m.exec(await read(join(dir, 'alpha'), '00_plan-trace/trace.md'))![1]
    expect(await vaultplan(['search', 'rate-limit', '--root', dir])).toEqual({
      code: 0,
      stderr: expect.stringContaining('wrote the search index'),
      stdout: `alpha/00_plan-trace/outputs/0001-a.md  [output, step 1 a, run ${run}]\n  The vendor API answers 429 past its rate limit.\n`,
    })
    const json = await vaultplan(['search', '"venue"', '--json', '--limit', '1'], { cwd: dir })
    expect(json.code).toBe(0)
    expect(JSON.parse(json.stdout)).toEqual([expect.objectContaining({ vault: 'beta', file: 'beta/00_plan-trace/outputs/0001-a.md', kind: 'output', step: 1 })])
  })

  it('says it wrote .vaultplan/search-index.json into the working folder, and to keep it out of git, the first time only', async () => {
    const dir = await root()
    const first = await vaultplan(['search', 'venue'], { cwd: dir })
    expect(first.code).toBe(0)
    expect(first.stderr).toBe(
      'vaultplan: wrote the search index to .vaultplan/search-index.json (a cache, safe to delete); keep it out of version control: add .vaultplan/ to your .gitignore.\n',
    )
    expect(await readdir(join(dir, '.vaultplan'))).toEqual(['search-index.json'])
    const again = await vaultplan(['search', 'venue'], { cwd: dir })
    expect(again).toMatchObject({ code: 0, stderr: '' })
    expect((await vaultplan(['search', '--help'])).stdout).toContain('DIR/.vaultplan/search-index.json')
  })

  it('exits 1 when nothing is found and 2 on bad usage', async () => {
    const dir = await root()
    const none = await vaultplan(['search', 'zebra', '--root', dir])
    expect(none.code).toBe(1)
    expect(none.stdout).toContain('Nothing found under')
    expect((await vaultplan(['search', '--root', dir])).code).toBe(2)
    expect((await vaultplan(['search', 'x', '--limit', '0', '--root', dir])).stderr).toContain("--limit takes an integer from 1 up, got '0'")
    expect((await vaultplan(['search', 'x', '--root', join(dir, 'missing')])).code).toBe(2)
  })
})
