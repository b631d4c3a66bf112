import { mkdir, realpath, symlink } from 'node:fs/promises'
import { join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it } from 'vitest'
import { allowedHosts } from '../src/core/host-check.js'
import { confine, parseResourceUri, PathRefusal, resourceUri, segmentsOf, vaultPath } from '../src/mcp/paths.js'
import { findVaults } from '../src/mcp/vaults.js'
import { tempDir, writeVault } from './helpers/vault.js'

/** What a refused call threw: its code and message. */
function refused(run: () => unknown): { code: string; message: string } {
  try {
    run()
  } catch (error) {
    if (error instanceof PathRefusal) return { code: error.code, message: error.message }
    throw error
  }
  throw new Error('not refused')
}

describe('resource URIs', () => {
  it('percent-encode the vault as one segment and each segment of the note path', () => {
    expect(resourceUri('plans/release', 'review/final.md')).toBe('vaultplan://plans%2Frelease/review/final.md')
    expect(resourceUri('Mes plans', 'étape 1.md')).toBe('vaultplan://Mes%20plans/%C3%A9tape%201.md')
    expect(parseResourceUri('vaultplan://plans%2Frelease/review/final.md')).toEqual({ vault: 'plans/release', file: 'review/final.md' })
    expect(parseResourceUri('test://static-text')).toBeUndefined()
  })

  it('read back what they were made from, for any folder and note names', () => {
    // A first segment like `C:` is refused on every platform: it reads as a Windows drive.
    const segment = fc
      .string({ minLength: 1, maxLength: 12 })
      .filter((text) => !/[/\\\0]/.test(text) && text !== '.' && text !== '..' && !/^[a-zA-Z]:/.test(text))
    fc.assert(
      fc.property(fc.array(segment, { minLength: 1, maxLength: 3 }), fc.array(segment, { minLength: 1, maxLength: 3 }), (vault, file) => {
        const uri = resourceUri(vault.join('/'), `${file.join('/')}.md`)
        expect(parseResourceUri(uri)).toEqual({ vault: vault.join('/'), file: `${file.join('/')}.md` })
      }),
    )
  })

  it('refuse a note path that climbs out or hides a slash', () => {
    expect(() => parseResourceUri('vaultplan://blog/..%2F..%2Fetc/passwd.md')).toThrow(/encoded `\/`/)
    expect(() => parseResourceUri('vaultplan://blog/%2E%2E/other/x.md')).toThrow(/climbs out/)
    expect(() => parseResourceUri('vaultplan://..%2Foutside/x.md')).toThrow(/climbs out/)
    expect(() => parseResourceUri('vaultplan://blog')).toThrow(/names no note/)
    expect(() => parseResourceUri('vaultplan://blog/%E0%A4%A.md')).toThrow(/percent-encoded/)
  })
})

describe('paths from clients', () => {
  it('are relative, without `..`, `.` or empty segments', () => {
    expect(segmentsOf('plans/release', 'the vault')).toEqual(['plans', 'release'])
    expect(segmentsOf('plans\\release/', 'the vault')).toEqual(['plans', 'release'])
    expect(refused(() => segmentsOf('/etc', 'the vault')).code).toBe('outside-root')
    expect(refused(() => segmentsOf('C:\\Users', 'the vault')).code).toBe('outside-root')
    expect(refused(() => segmentsOf('plans/../../x', 'the vault')).code).toBe('outside-root')
    expect(refused(() => segmentsOf('plans//x', 'the vault')).code).toBe('bad-path')
    expect(refused(() => segmentsOf('./x', 'the vault')).code).toBe('bad-path')
    expect(refused(() => segmentsOf('', 'the vault')).code).toBe('bad-path')
    expect(refused(() => segmentsOf('a\0b', 'the vault')).code).toBe('bad-path')
  })

  it('are followed on disk, and a symlink out of the root refuses them', async () => {
    const root = await realpath(await tempDir())
    const outside = await realpath(await tempDir())
    await mkdir(join(root, 'plans', 'blog'), { recursive: true })
    await symlink(outside, join(root, 'plans', 'out'))
    await symlink(join(root, 'plans', 'blog'), join(root, 'inside'))
    expect(await confine(root, 'plans/blog', 'the vault')).toEqual({ path: join(root, 'plans', 'blog'), exists: true })
    expect(await confine(root, 'plans/new/deeper', 'the vault')).toEqual({ path: join(root, 'plans', 'new', 'deeper'), exists: false })
    expect(await confine(root, 'inside', 'the vault')).toEqual({ path: join(root, 'plans', 'blog'), exists: true })
    await expect(confine(root, 'plans/out', 'the vault')).rejects.toThrow(/outside the root through a symlink/)
    await expect(confine(root, 'plans/out/new', 'the vault')).rejects.toThrow(/outside the root through a symlink/)
    await expect(vaultPath(root, 'plans/missing')).rejects.toThrow(/no vault folder `plans\/missing`/)
  })
})

describe('the vaults under a root', () => {
  it('are the folders holding a run or a plan note; their own subfolders are part of them', async () => {
    const root = await realpath(
      await writeVault({
        'README.md': '# A repository\n\n## Next\n- [[x]]\n',
        'docs/guide.md': '# Guide\n\nNo plan here.\n',
        'plans/blog/draft.md': '---\ntype: start\n---\n# Draft\n',
        'plans/blog/research/find.md': '# Find\n\n## Next\n- [[read]]\n',
        'plans/ran/00_plan-trace/trace.md': '---\nvaultplan: trace\n---\n',
        'plans/ran/only.md': '# Only\n',
        'node_modules/pkg/plan/a.md': '## Next\n- [[b]]\n',
        '.obsidian/x/a.md': '## Next\n- [[b]]\n',
      }),
    )
    expect(await findVaults(root)).toEqual({ vaults: [join(root, 'plans', 'blog'), join(root, 'plans', 'ran')], truncated: false })
    expect(await findVaults(root, { limit: 1 })).toEqual({ vaults: [join(root, 'plans', 'blog')], truncated: true })
  })
})

describe('the Host values the HTTP server answers to', () => {
  it('are the bound address, the loopback names with its port, and the names given', () => {
    expect([...allowedHosts('127.0.0.1', 8808, [])].sort()).toEqual(['127.0.0.1:8808', '[::1]:8808', 'localhost:8808'])
    expect([...allowedHosts('::1', 8808, [])].sort()).toEqual(['127.0.0.1:8808', '[::1]:8808', 'localhost:8808'])
    expect([...allowedHosts('192.168.1.5', 80, ['Plans.Internal', 'proxy:443', '::2'])].sort()).toEqual([
      '192.168.1.5:80',
      '[::2]:80',
      'plans.internal:80',
      'proxy:443',
    ])
  })
})
