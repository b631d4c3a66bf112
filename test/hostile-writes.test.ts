import { mkdir, mkdtemp, readdir, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, RunStateError, runPlan } from 'vaultplan'
import { writeVault } from './helpers/vault.js'

describe('hostile input stays data', () => {
  it('a YAML merge key merges nothing: `<<` stays a key of its own and the knobs keep their values', async () => {
    const vault = await writeVault({
      'a.md': '---\nbase: &base\n  type: start\n  max_visits: 99\nknobs:\n  <<: *base\n<<: *base\n---\n# A\n',
    })
    const node = (await loadPlan(vault)).node('a')
    expect(node.type).toBe('step')
    expect(node.maxVisits).toBe(3)
    expect(node.frontmatter['<<']).toEqual({ type: 'start', max_visits: 99 })
    expect(Object.prototype).not.toHaveProperty('type')
  })

  it('an absolute-path link is read from the vault root, never from the file system root', async () => {
    const vault = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- leak -> [[/etc/passwd]]\n- [[end]]\n',
      'end.md': '# End\n',
    })
    const graph = await loadPlan(vault)
    expect(graph.node('start').edges.map((edge) => edge.target)).toEqual(['etc/passwd', 'end'])
    expect(() => graph.validate()).toThrow(/dangling-edge edge `leak` -> `\[\[etc\/passwd\]\]` matches no note/)
  })

  it('a `00_plan-trace` that is a symlink out of the vault is refused before anything is written through it', async () => {
    const vault = await writeVault({ 'a.md': '---\ntype: start\n---\n# A\n' })
    const elsewhere = await mkdtemp(join(tmpdir(), 'vaultplan-elsewhere-'))
    await mkdir(join(elsewhere, 'target'))
    await symlink(join(elsewhere, 'target'), join(vault, '00_plan-trace'))
    const error = await runPlan(vault, { query: 'q', work: async () => 'x', fsync: false }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RunStateError)
    expect((error as RunStateError).code).toBe('trace-outside-vault')
    expect(await readdir(join(elsewhere, 'target'))).toEqual([])
  })
})
