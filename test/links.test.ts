import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { loadPlan } from 'vaultplan'
import { errorsOf } from './helpers/issues.js'
import { writeVault } from './helpers/vault.js'

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
const vaults = fileURLToPath(new URL('../vaults/', import.meta.url))

/** The target of each edge out of `from`. */
async function targets(dir: string, from = 'start'): Promise<string[]> {
  return (await loadPlan(dir)).node(from).edges.map((edge) => edge.target)
}

describe('link forms of Obsidian and SilverBullet', () => {
  it('resolves every form in the link-forms fixture', async () => {
    const graph = await loadPlan(join(fixtures, 'link-forms'))
    expect(graph.node('start').edges.map((edge) => [edge.label, edge.target])).toEqual([
      ['piped alias', 'alpha'],
      ['heading', 'beta'],
      ['block reference', 'theta'],
      ['SilverBullet line', 'gamma'],
      ['folder path', 'folder/delta'],
      ['with extension', 'epsilon'],
      ['bare name of a nested note', 'deep/nested/zeta'],
      ['other case', 'iota'],
      ['frontmatter alias', 'Plans/eta'],
      ['longer vault path', 'kappa'],
      ['decomposed accents', 'café'],
      ['escape attempt', '../../etc/passwd'],
    ])
  })

  it('never lets a link leave the vault, and says so quoting the link as written', async () => {
    const graph = await loadPlan(join(fixtures, 'link-forms'))
    expect(errorsOf(() => graph.validate())).toEqual([
      {
        code: 'dangling-edge',
        severity: 'error',
        message: 'edge `escape attempt` -> `[[../../etc/passwd]]` points outside the vault',
        node: 'start',
        file: 'start.md',
        line: 21,
        column: 21,
      },
    ])
  })

  it('does not match a note inside the vault that shares the path of an escaping link', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- leak -> [[../etc/passwd]]\n- [[end]]\n',
      'etc/passwd.md': '# Not the system file\n',
      'end.md': '# End\n',
    })
    expect(await targets(dir)).toEqual(['../etc/passwd', 'end'])
  })

  it('resolves the links of the branching example: alias, bare nested name, path with alias, heading', async () => {
    const graph = await loadPlan(join(vaults, 'branching'))
    const edges = Object.fromEntries([...graph.nodes.values()].map((node) => [node.id, node.edges.map((edge) => edge.target)]))
    expect(edges).toEqual({
      'bugs/fix': ['bugs/verify'],
      'bugs/reproduce': ['bugs/fix'],
      'bugs/verify': ['bugs/fix', 'support/reply'],
      'support/reply': [],
      triage: ['bugs/reproduce', 'support/reply'],
    })
  })

  it('prefers the exact path over a nested note of the same name', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- [[review]]\n',
      'review.md': '# Top-level review\n',
      'old/review.md': '# Old review\n',
    })
    expect(await targets(dir)).toEqual(['review'])
  })

  it('prefers a path match over an alias', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- [[send]]\n',
      'send.md': '# Send\n',
      'mail.md': '---\naliases: [send]\n---\n# Mail\n',
    })
    expect(await targets(dir)).toEqual(['send'])
  })

  it('prefers a case-exact match, and reports a case-folded one that matches two notes', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- a -> [[Final]]\n- b -> [[FINAL]]\n- [[end]]\n',
      'review/Final.md': '# Final review\n',
      'publish/final.md': '# Final check\n',
      'end.md': '# End\n',
    })
    const graph = await loadPlan(dir)
    expect(graph.node('start').edges[0]?.target).toBe('review/Final')
    expect(errorsOf(() => graph.validate()).map((issue) => [issue.code, issue.message])).toEqual([
      ['ambiguous-link', '`[[FINAL]]` matches 2 notes (`publish/final`, `review/Final`); write the path'],
    ])
  })

  it('matches a bare name case-insensitively', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- [[FINAL]]\n',
      'review/final.md': '# Final\n',
    })
    expect(await targets(dir)).toEqual(['review/final'])
  })

  it('reports a bare name that matches notes in two folders, naming both', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- ok -> [[final]]\n- [[end]]\n',
      'review/final.md': '# Final\n',
      'publish/final.md': '# Final\n',
      'end.md': '# End\n',
    })
    const graph = await loadPlan(dir)
    expect(errorsOf(() => graph.validate())).toEqual([
      {
        code: 'ambiguous-link',
        severity: 'error',
        message: '`[[final]]` matches 2 notes (`publish/final`, `review/final`); write the path',
        node: 'start',
        file: 'start.md',
        line: 5,
        column: 9,
      },
    ])
  })

  it('reports an alias that two notes share', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- ok -> [[Checker]]\n- [[end]]\n',
      'lint.md': '---\naliases: [Checker]\n---\n',
      'test.md': '---\naliases:\n  - Checker\n---\n',
      'end.md': '# End\n',
    })
    const graph = await loadPlan(dir)
    expect(errorsOf(() => graph.validate()).map((issue) => issue.message)).toEqual(['`[[Checker]]` matches 2 notes (`lint`, `test`); write the path'])
  })

  it('resolves a link written relative to the note, as Obsidian writes them in its relative-path format', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- [[support/triage/verify]]\n',
      'support/triage/verify.md': '# Verify\n\n## Next\n- fixed -> [[../reply]]\n- not fixed -> [[./fix]]\n',
      'support/triage/fix.md': '# Fix\n\n## Next\n- [[verify]]\n',
      'support/reply.md': '# Reply to the customer\n',
      // Same name one level further up: `../reply` from `support/triage/` is not this note.
      'reply.md': '# A draft reply kept at the top\n',
    })
    expect(await targets(dir, 'support/triage/verify')).toEqual(['support/reply', 'support/triage/fix'])
  })

  it('compares ids and links in Unicode NFC', async () => {
    const decomposed = 'Résumé'.normalize('NFD')
    const dir = await writeVault({
      'start.md': `---\ntype: start\n---\n## Next\n- [[${decomposed}]]\n`,
      [`${'Résumé'.normalize('NFC')}.md`]: '# Résumé\n',
    })
    expect(await targets(dir)).toEqual(['Résumé'.normalize('NFC')])
  })

  it('keeps a link that matches nothing as written, as a dangling edge', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n## Next\n- ok -> [[Missing note#Part|shown text]]\n- [[end]]\n',
      'end.md': '# End\n',
    })
    const graph = await loadPlan(dir)
    expect(graph.node('start').edges[0]).toEqual({ label: 'ok', target: 'Missing note', conditional: true })
    expect(errorsOf(() => graph.validate()).map((issue) => [issue.code, issue.line, issue.column])).toEqual([['dangling-edge', 5, 9]])
  })
})
