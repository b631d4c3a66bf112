import { mkdir, mkdtemp, readdir, readFile, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, RunStateError, runPlan, updateStatus } from 'vaultplan'
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

describe('a note whose status cannot be patched in place', () => {
  it('stops the run with a RunStateError naming the note, and leaves the note as it was', async () => {
    const text = '---\n{type: start, tags: [a]}\n---\n# Flow-style frontmatter\n'
    const vault = await writeVault({ 'a.md': text })
    const error = await runPlan(vault, { query: 'q', work: async () => 'x', fsync: false }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RunStateError)
    expect((error as RunStateError).code).toBe('status-unwritable')
    expect((error as Error).message).toMatch(/^Cannot write `status: active` into `a\.md`: .*The note is unchanged/)
    expect(await readFile(join(vault, 'a.md'), 'utf8')).toBe(text)
  })
})

describe('a run vault that holds other notes', () => {
  it('is refused, and the plan is not copied into it', async () => {
    const plan = await writeVault({ 'a.md': '---\ntype: start\n---\n# A\n' })
    const other = await writeVault({ 'journal.md': '# My journal\n' })
    const error = await runPlan(plan, { query: 'q', runVault: other, work: async () => 'x', fsync: false }).catch((e: unknown) => e)
    expect(error).toBeInstanceOf(RunStateError)
    expect((error as RunStateError).code).toBe('run-vault-not-empty')
    expect((await readdir(other)).sort()).toEqual(['journal.md'])
  })

  it("holding exactly the plan's notes (a copy made just before a crash), is run as it is", async () => {
    const plan = await writeVault({ 'a.md': '---\ntype: start\n---\n# A\n' })
    const copy = await writeVault({ 'a.md': '---\ntype: start\n---\n# A, as copied\n' })
    const result = await runPlan(plan, { query: 'q', runVault: copy, work: async (step) => step.node.title, fsync: false })
    expect(result.output).toBe('A, as copied')
  })
})

describe('updateStatus on frontmatter it cannot read back', () => {
  it('refuses two `status:` keys instead of patching one of them unchecked, and leaves the note as it was', async () => {
    const text = '---\nstatus: pending\ntags: [a]\nstatus: done\n---\n# Twice\n'
    const vault = await writeVault({ 'twice.md': text })
    await expect(updateStatus(vault, 'twice', 'active')).rejects.toThrow(
      /cannot set `status`: the frontmatter has a problem \(invalid YAML: Map keys must be unique/,
    )
    expect(await readFile(join(vault, 'twice.md'), 'utf8')).toBe(text)
  })
})
