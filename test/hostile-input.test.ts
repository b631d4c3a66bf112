import { existsSync } from 'node:fs'
import { mkdir, readFile, symlink, truncate, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, savePlan, updateStatus, type PlanIssue } from 'vaultplan'
import { issuesOf } from './helpers/issues.js'
import { tempDir } from './helpers/vault.js'
import { parseNote } from '../src/vault/parse-note.js'

/** A valid two-note plan plus `extra` notes, so each test shows only the bad note's diagnostics. */
async function vaultWith(extra: Record<string, string | Buffer>): Promise<string> {
  const dir = await tempDir()
  const notes = { 'start.md': '---\ntype: start\n---\n# Start\n\n## Next\n- [[end]]\n', 'end.md': '# End\n', ...extra }
  for (const [file, content] of Object.entries(notes)) {
    await mkdir(dirname(join(dir, file)), { recursive: true })
    await writeFile(join(dir, file), content)
  }
  return dir
}

const brief = (issues: PlanIssue[]) => issues.map(({ code, severity, file, line }) => ({ code, severity, file, line }))

describe('frontmatter that tries to run code never runs', () => {
  it.each(['js', 'javascript', 'coffee'])('`---%s` leaves no marker file and is invalid-frontmatter', async (language) => {
    const dir = await tempDir()
    const marker = join(dir, 'pwned')
    const payload = `{ type: (require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran'), 'start') }`
    const vault = await vaultWith({ 'evil.md': `---${language}\n${payload}\n---\n# Evil\n\n## Next\n- [[end]]\n` })
    const graph = await loadPlan(vault)
    expect(brief(await issuesOf(vault))).toEqual([
      // The block is not frontmatter, so `evil` is a second root: unreachable from `start`.
      { code: 'unreachable', severity: 'warning', file: 'evil.md', line: undefined },
      { code: 'invalid-frontmatter', severity: 'warning', file: 'evil.md', line: 1 },
    ])
    expect(graph.node('evil').frontmatter).toEqual({})
    // Nor does any other operation on the note evaluate it.
    await savePlan(graph, vault, { fsync: false })
    await expect(updateStatus(vault, 'evil', 'done')).rejects.toThrow()
    expect(existsSync(marker)).toBe(false)
  })

  it('a js-yaml style `!!js/function` tag is a string, not a function', async () => {
    const dir = await tempDir()
    const marker = join(dir, 'pwned')
    const vault = await vaultWith({
      'evil.md': `---\nrole: !!js/function >\n  function () { require('fs').writeFileSync(${JSON.stringify(marker)}, 'ran') }\n---\n# Evil\n`,
    })
    const graph = await loadPlan(vault)
    expect(typeof graph.node('evil').frontmatter.role).toBe('string')
    expect(existsSync(marker)).toBe(false)
  })

  it('a `__proto__` or `constructor` key does not pollute Object.prototype', async () => {
    const vault = await vaultWith({
      'proto.md': '---\n__proto__:\n  polluted: yes\nconstructor:\n  prototype:\n    polluted: yes\n---\n# Proto\n',
    })
    const graph = await loadPlan(vault)
    await savePlan(graph, vault, { fsync: false })
    expect(({} as Record<string, unknown>).polluted).toBeUndefined()
    expect(Object.prototype).not.toHaveProperty('polluted')
    // The keys are kept as the user's own data.
    expect(Object.keys(graph.node('proto').frontmatter)).toEqual(['__proto__', 'constructor'])
  })
})

describe('YAML built to exhaust the reader gives a diagnostic', () => {
  it('an alias bomb', { timeout: 10_000 }, async () => {
    const rows = ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    for (const [index, name] of [...'bcdefghi'].entries()) {
      const previous = 'abcdefghi'[index]!
      rows.push(`${name}: &${name} [${Array(9).fill(`*${previous}`).join(',')}]`)
    }
    const vault = await vaultWith({ 'bomb.md': `---\n${rows.join('\n')}\n---\n` })
    expect(brief(await issuesOf(vault))).toContainEqual({ code: 'invalid-frontmatter', severity: 'warning', file: 'bomb.md', line: 2 })
  })

  it.each([
    ['flow sequences', `a: ${'['.repeat(5000)}${']'.repeat(5000)}`],
    ['flow mappings', `a: ${'{a: '.repeat(5000)}1${'}'.repeat(5000)}`],
    ['block sequences', `a:\n  ${'- '.repeat(5000)}x`],
  ])('5,000-deep %s', { timeout: 10_000 }, async (_, yaml) => {
    const vault = await vaultWith({ 'deep.md': `---\n${yaml}\n---\n# Deep\n` })
    const found = (await issuesOf(vault)).filter((issue) => issue.file === 'deep.md' && issue.code === 'invalid-frontmatter')
    expect(found.length).toBeGreaterThan(0)
    expect(found[0]!.message).toMatch(/^invalid YAML: /)
  })
})

describe('markdown built to exhaust the reader gives a diagnostic, never a crash or a hang', () => {
  it.each([
    ['a 16 KB title of nested emphasis', `# ${'*'.repeat(8000)}x${'*'.repeat(8000)}\n`],
    ['a 16 KB `## Next` item of nested emphasis', `## Next\n- ${'*'.repeat(8000)}x${'*'.repeat(8000)} -> [[end]]\n`],
    ['a `## Next` item of 8,000 nested brackets', `## Next\n- ${'['.repeat(8000)}x${'](y)'.repeat(8000)} -> [[end]]\n`],
    ['5,000 nested lists on one line', `## Next\n${'- '.repeat(5000)}[[end]]\n`],
    ['1,000 nested list items', `## Next\n${Array.from({ length: 1000 }, (_, depth) => `${'  '.repeat(depth)}- [[end]]`).join('\n')}\n`],
    ['5,000 nested blockquotes', `## Next\n${'>'.repeat(5000)} - [[end]]\n`],
  ])('%s', { timeout: 10_000 }, async (_, text) => {
    const vault = await vaultWith({ 'deep.md': text })
    const graph = await loadPlan(vault)
    expect(graph.nodes.has('deep')).toBe(true)
    await issuesOf(vault)
  })

  it('a `## Next` too deep to read is an error at the line, not a terminal', async () => {
    const note = parseNote('deep.md', `---\ntype: start\n---\n# Deep\n\n## Next\n- [[a]]\n${'- '.repeat(200)}[[end]]\n`)
    expect(note.edges).toEqual([])
    expect(note.issues).toEqual([
      {
        code: 'unreadable-next',
        severity: 'error',
        message:
          'the `## Next` section nests too deeply to read (a line is indented or nested over 64 characters deep); write one item per line, `- label -> [[target]]`',
        node: 'deep',
        file: 'deep.md',
        line: 8,
        column: 1,
      },
    ])
  })

  it('a `## Next` of short lines holding over 1,000 emphasis marks is an error, not handed to the parser (its emphasis pairing is super-linear)', () => {
    const section = '- *a _b **c __d [[x]] ~e\n  *f_ **g\n'.repeat(300)
    expect(section.length).toBeLessThan(50_000)
    const note = parseNote('runs.md', `# Runs\n\n## Next\n${section}`)
    expect(note.edges).toEqual([])
    expect(note.issues).toEqual([
      expect.objectContaining({
        code: 'unreadable-next',
        severity: 'error',
        message: expect.stringContaining('the `## Next` section has 3000 emphasis marks (`*`, `_`), over the 1000 it can read'),
        line: 3,
      }),
    ])
  })

  it('a normally nested `## Next` is read', () => {
    const note = parseNote('ok.md', `## Next\n> [!note]\n> - ok -> [[a]]\n- [ ] fine -> [[b]]\n  - a sub-point about it\n    - and another\n`)
    expect(note.issues).toEqual([])
    expect(note.edges.map((edge) => edge.link)).toEqual(['b'])
  })
})

describe('files that are not notes', () => {
  it('a binary file named `.md` is skipped with a warning', async () => {
    const vault = await vaultWith({ 'photo.md': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d]) })
    const graph = await loadPlan(vault)
    expect(graph.nodes.has('photo')).toBe(false)
    expect(await issuesOf(vault)).toEqual([
      { code: 'not-a-note', severity: 'warning', message: 'is binary, not a markdown note; it is not read', file: 'photo.md' },
    ])
  })

  it('invalid UTF-8 that is not binary loads, with replacement characters', async () => {
    const vault = await vaultWith({ 'latin1.md': Buffer.from('# Caf\xe9\n', 'latin1') })
    expect((await loadPlan(vault)).node('latin1').title).toBe('Caf\uFFFD')
  })

  it('a 50 MB note is skipped with a warning', async () => {
    const vault = await vaultWith({})
    await writeFile(join(vault, 'huge.md'), '# Huge\n')
    await truncate(join(vault, 'huge.md'), 50 * 1024 * 1024)
    const graph = await loadPlan(vault)
    expect(graph.nodes.has('huge')).toBe(false)
    expect(brief(await issuesOf(vault))).toEqual([{ code: 'note-too-large', severity: 'warning', file: 'huge.md', line: undefined }])
  })

  it('a symlink to a file outside the vault is not read', async () => {
    const outside = await tempDir()
    await writeFile(join(outside, 'secret.md'), '---\ntype: start\n---\n# Secret\n')
    const vault = await vaultWith({})
    await symlink(join(outside, 'secret.md'), join(vault, 'secret.md'))
    const graph = await loadPlan(vault)
    expect([...graph.nodes.keys()]).toEqual(['end', 'start'])
    expect(await issuesOf(vault)).toEqual([
      { code: 'outside-vault', severity: 'warning', message: 'is a symlink that leads outside the vault (or nowhere); it is not read', file: 'secret.md' },
    ])
    // Saving does not write through it either.
    await savePlan(graph, vault, { fsync: false })
    expect(await readFile(join(outside, 'secret.md'), 'utf8')).toBe('---\ntype: start\n---\n# Secret\n')
  })

  it('a symlinked folder outside the vault is not walked', async () => {
    const outside = await tempDir()
    await writeFile(join(outside, 'secret.md'), '# Secret\n')
    const vault = await vaultWith({})
    await symlink(outside, join(vault, 'linked'))
    expect([...(await loadPlan(vault)).nodes.keys()]).toEqual(['end', 'start'])
  })

  it('a symlink to a note inside the vault is read; a symlink loop is a warning', async () => {
    const vault = await vaultWith({ 'notes/real.md': '# Real\n' })
    await symlink(join(vault, 'notes/real.md'), join(vault, 'alias.md'))
    await symlink(join(vault, 'loop-b.md'), join(vault, 'loop-a.md'))
    await symlink(join(vault, 'loop-a.md'), join(vault, 'loop-b.md'))
    const graph = await loadPlan(vault)
    expect(graph.node('alias').title).toBe('Real')
    expect(brief((await issuesOf(vault)).filter((issue) => issue.code === 'outside-vault'))).toEqual([
      { code: 'outside-vault', severity: 'warning', file: 'loop-a.md', line: undefined },
      { code: 'outside-vault', severity: 'warning', file: 'loop-b.md', line: undefined },
    ])
  })

  it('non-markdown files are ignored without a word', async () => {
    const vault = await vaultWith({ 'data.json': '{"type":"start"}', 'script.js': 'process.exit(1)', README: '# readme', 'notes.markdown': '# x' })
    expect([...(await loadPlan(vault)).nodes.keys()]).toEqual(['end', 'start'])
    expect(await issuesOf(vault)).toEqual([])
  })
})

describe('one bad note never sinks the load', () => {
  it('broken YAML and wrong types each give a diagnostic, the rest of the vault loads', async () => {
    const vault = await vaultWith({
      'start.md': '---\ntype: start\n---\n# Start\n\n## Next\n- a -> [[broken]]\n- b -> [[typed]]\n- [[end]]\n',
      'broken.md': '---\ntype: start\ntools: [a, b\n---\n# Broken\n',
      'typed.md': '---\ntools: 42\nmax_visits: [1]\njudge: true\n---\n# Typed\n',
    })
    const graph = await loadPlan(vault)
    expect([...graph.nodes.keys()]).toEqual(['broken', 'end', 'start', 'typed'])
    expect(brief(await issuesOf(vault))).toEqual([
      // yaml notices the unclosed `[` where the YAML ends: the closing fence.
      { code: 'invalid-frontmatter', severity: 'error', file: 'broken.md', line: 4 },
      { code: 'invalid-frontmatter', severity: 'error', file: 'typed.md', line: 2 },
      { code: 'invalid-frontmatter', severity: 'error', file: 'typed.md', line: 3 },
      { code: 'invalid-frontmatter', severity: 'error', file: 'typed.md', line: 4 },
    ])
  })
})
