import { mkdir } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it, vi } from 'vitest'
import { editPlan, nextStep, PlanValidationError } from 'vaultplan'
import { linear, work } from './helpers/plans.js'
import { unwritable } from '../src/vault/writable-path.js'
import { read, readTree, writeVault } from './helpers/vault.js'

/** The atomic write, failing for a file whose path ends with `failFor` (a full disk, an I/O error): how a write fails after every check passed. */
const failing = vi.hoisted(() => ({ failFor: undefined as string | undefined, renameOf: undefined as string | undefined }))
vi.mock('../src/vault/fs-atomic.js', async (original) => {
  const real = await original<typeof import('../src/vault/fs-atomic.js')>()
  return {
    ...real,
    writeFileAtomic: async (path: string, ...rest: Parameters<typeof real.writeFileAtomic> extends [string, ...infer R] ? R : never) => {
      if (failing.failFor !== undefined && path.endsWith(failing.failFor)) throw Object.assign(new Error(`EIO: i/o error, open '${path}'`), { code: 'EIO' })
      return real.writeFileAtomic(path, ...rest)
    },
  }
})
/** `rename`, failing for a file whose path ends with `renameOf`. */
vi.mock('node:fs/promises', async (original) => {
  const real = await original<typeof import('node:fs/promises')>()
  const rename: typeof real.rename = async (from, to) => {
    if (failing.renameOf !== undefined && String(from).endsWith(failing.renameOf))
      throw Object.assign(new Error(`EIO: i/o error, rename '${String(from)}'`), { code: 'EIO' })
    return real.rename(from, to)
  }
  return { ...real, rename, default: { ...real, rename } }
})
afterEach(() => {
  failing.failFor = undefined
  failing.renameOf = undefined
})

const query = 'Ship it'
const options = { fsync: false }
/** A file name of 300 bytes: over the 255 a file system allows in one name. */
const long = `n${'o'.repeat(299)}`
/** `b` leads to the note `long`, which leads on to `c`: `b` is written first, `long` second. */
const toLong = `## b\n# B\nDo b.\n### Next\n- [[${long}]]\n\n## ${long}\n# Long\nDo it.\n### Next\n- [[c]]\n`

describe('editPlan writes all of an edit or nothing', () => {
  it('refuses a note whose file name is too long before writing any note, and the same edit again is refused the same way', async () => {
    const dir = await writeVault(linear())
    work(await nextStep(dir, { ...options, query }))
    const before = await readTree(dir)
    for (let attempt = 0; attempt < 2; attempt++) {
      const error = await editPlan(dir, { document: toLong }).catch((caught: unknown) => caught)
      expect(error).toBeInstanceOf(PlanValidationError)
      expect((error as PlanValidationError).issues).toEqual([
        {
          code: 'unwritable-note',
          severity: 'error',
          message: `the note \`${long}\` would be written to \`${long}.md\`, whose name is 303 bytes long, over the 255 a file name may have; give it a shorter id`,
          node: long,
          file: `${long}.md`,
        },
      ])
      expect(await readTree(dir)).toEqual(before)
    }
  })

  it('refuses a note whose file is a folder, and a note inside a file, before writing any note', async () => {
    const dir = await writeVault({ ...linear(), 'd.md/keep.txt': 'a folder named like a note', 'e.md': '# E\n' })
    await mkdir(join(dir, 'd.md'), { recursive: true })
    const before = await readTree(dir)
    const document = '## b\n# B\nDo b.\n### Next\n- [[d]]\n\n## d\nDo d.\n### Next\n- [[e.md/f]]\n\n## e.md/f\nDo f.\n### Next\n- [[c]]\n'
    const error = await editPlan(dir, { document }).catch((caught: unknown) => caught)
    expect((error as PlanValidationError).issues.map(({ code, node }) => [code, node])).toEqual([
      ['unwritable-note', 'd'],
      ['unwritable-note', 'e.md/f'],
    ])
    expect(await readTree(dir)).toEqual(before)
  })

  it('undoes the notes written when the write of a later one fails, and the same edit then completes', async () => {
    const dir = await writeVault(linear())
    work(await nextStep(dir, { ...options, query }))
    const before = await readTree(dir)
    const document = '## b\n# B\nDo b.\n### Next\n- [[d]]\n\n## d\n# D\nDo d.\n### Next\n- [[c]]\n\n## c\n# C\nDo c, better.\n'
    failing.failFor = 'd.md'
    await expect(editPlan(dir, { document }, { agent: 'ann' })).rejects.toMatchObject({ code: 'EIO' })
    expect(await readTree(dir)).toEqual(before)

    failing.failFor = undefined
    expect(await editPlan(dir, { document }, { agent: 'ann' })).toEqual({ written: ['b', 'd', 'c'], removed: [] })
    expect(await read(dir, 'd.md')).toBe('# D\nDo d.\n\n## Next\n- [[c]]\n')
    expect(await read(dir, 'c.md')).toBe('# C\nDo c, better.\n')
  })

  it('undoes the notes written and the notes moved to .trash/ when a later removal fails', async () => {
    const dir = await writeVault({
      ...linear(),
      'c.md': '# C\nDo c.\n\n## Next\n- [[d]]\n',
      'd.md': '# D\nDo d.\n\n## Next\n- [[e]]\n',
      'e.md': '# E\nDo e.\n',
    })
    const before = await readTree(dir)
    failing.renameOf = 'e.md'
    // `b` is written, `c` and `d` moved to .trash/, then moving `e` fails.
    await expect(editPlan(dir, { document: '## b\n# B\nDo b, the last step.\n### Next\n', remove: ['c', 'd', 'e'] })).rejects.toMatchObject({ code: 'EIO' })
    expect(await readTree(dir)).toEqual(before)
  })
})

describe('unwritable', () => {
  it("names what Windows keeps for itself, on Windows only, and a name's length in bytes", async () => {
    const dir = await writeVault({ 'a.md': '# A\n' })
    expect(await unwritable(dir, 'web/CON.md', 'win32')).toMatchObject({ kind: 'reserved-name' })
    expect(await unwritable(dir, 'web/what?.md', 'win32')).toMatchObject({ kind: 'reserved-name' })
    expect(await unwritable(dir, 'web/CON.md', 'linux')).toBeUndefined()
    // A letter of two bytes: 100 of them and `.md` are 203 bytes, 128 of them 256.
    expect(await unwritable(dir, `${'é'.repeat(100)}.md`, 'linux')).toBeUndefined()
    expect(await unwritable(dir, `${'é'.repeat(128)}/a.md`, 'linux')).toEqual({
      kind: 'name-too-long',
      message: `whose folder \`${'é'.repeat(128)}\` is 256 bytes long, over the 255 a file name may have`,
    })
  })
})
