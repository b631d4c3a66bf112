import { mkdir, mkdtemp, readdir, readFile, symlink } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, RunStateError, runPlan, updateStatus } from 'vaultplan'
import { tempDir, writeVault } from './helpers/vault.js'

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

describe('where a run keeps what it made', () => {
  it('a note at a long but legal path runs: its output note gets a name within the 255-byte limit, kept apart by a hash', async () => {
    const deep = Array.from({ length: 5 }, (_, index) => `a-folder-with-a-long-name-${'x'.repeat(30)}-${index}`).join('/')
    const dir = await writeVault({
      'a.md': `---\ntype: start\n---\n# A\n\n## Next\n- [[${deep}/b]]\n`,
      [`${deep}/b.md`]: '# B\n',
    })
    const result = await runPlan(dir, { query: 'q', fsync: false, work: async (step) => `output of ${step.node.id}`, llm: async () => '' })
    expect(result).toMatchObject({ status: 'completed', output: `output of ${deep}/b` })
    const names = await readdir(join(dir, '00_plan-trace', 'outputs'))
    expect(names.map((name) => Buffer.byteLength(name) <= 255)).toEqual([true, true])
    expect(names.find((name) => name.startsWith('0002-'))).toMatch(/^0002-a-folder-with-a-long-name-x+-0__.*-[0-9a-f]{12}\.md$/)
  })

  it('plan B with the run vault of a finished run of plan A is refused, naming both, and nothing of the run changes', async () => {
    const base = await tempDir()
    const options = { query: 'q', fsync: false, work: async () => 'done', llm: async () => '' } as const
    for (const plan of ['A', 'B']) await writeVault({ 'x.md': `---\ntype: start\n---\n# Plan ${plan}\n` }, join(base, plan))
    const runVault = join(base, 'run')
    await expect(runPlan(join(base, 'A'), { ...options, runVault })).resolves.toMatchObject({ status: 'completed' })
    const before = await readFile(join(runVault, '00_plan-trace', 'trace.md'), 'utf8')
    const error = await runPlan(join(base, 'B'), { ...options, runVault }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(RunStateError)
    expect(error).toMatchObject({ code: 'run-vault-other-plan' })
    expect((error as Error).message).toContain(join(base, 'A'))
    expect(await readFile(join(runVault, '00_plan-trace', 'trace.md'), 'utf8')).toBe(before)
    // The same plan again returns its recorded result.
    await expect(runPlan(join(base, 'A'), { ...options, runVault })).resolves.toMatchObject({ status: 'completed' })
  })

  it('two emitted plans with the same ids: the second, run in the run vault of the first, is refused, and the first again returns its result', async () => {
    const base = await tempDir()
    const options = { query: 'q', fsync: false, work: async () => 'done', llm: async () => '' } as const
    const graphs = []
    for (const plan of ['A', 'B']) graphs.push(await loadPlan(await writeVault({ 'x.md': `---\ntype: start\n---\n# Plan ${plan}\n` }, join(base, plan))))
    const runVault = join(base, 'run')
    await expect(runPlan(graphs[0]!, { ...options, runVault })).resolves.toMatchObject({ status: 'completed' })
    const before = await readFile(join(runVault, '00_plan-trace', 'trace.md'), 'utf8')
    await expect(runPlan(graphs[1]!, { ...options, runVault })).rejects.toMatchObject({ name: 'RunStateError', code: 'run-vault-other-plan' })
    expect(await readFile(join(runVault, '00_plan-trace', 'trace.md'), 'utf8')).toBe(before)
    await expect(runPlan(graphs[0]!, { ...options, runVault })).resolves.toMatchObject({ status: 'completed', output: 'done' })
  })
})
