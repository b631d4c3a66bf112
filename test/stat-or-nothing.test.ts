import { mkdir, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { statOrNothing, statOrNothingSync } from '../src/vault/stat-or-nothing.js'
import { tempDir } from './helpers/vault.js'

describe('a stat that may find nothing', () => {
  for (const [name, look] of [
    ['statOrNothingSync', async (path: string, options?: { link?: boolean }) => statOrNothingSync(path, options)],
    ['statOrNothing', statOrNothing],
  ] as const) {
    describe(name, () => {
      it('says what is there: a file, a folder, a symlink itself with `link`', async () => {
        const dir = await tempDir()
        await writeFile(join(dir, 'note.md'), 'text')
        await mkdir(join(dir, 'folder'))
        await symlink('note.md', join(dir, 'link.md'))
        expect((await look(join(dir, 'note.md')))?.isFile()).toBe(true)
        expect((await look(join(dir, 'folder')))?.isDirectory()).toBe(true)
        expect((await look(join(dir, 'link.md')))?.isFile()).toBe(true)
        expect((await look(join(dir, 'link.md'), { link: true }))?.isSymbolicLink()).toBe(true)
      })

      it('finds nothing, without throwing: a missing path, a file where a folder of the path should be, a link to nothing', async () => {
        const dir = await tempDir()
        await writeFile(join(dir, 'note.md'), 'text')
        await symlink('gone.md', join(dir, 'dangling.md'))
        expect(await look(join(dir, 'missing.md'))).toBeUndefined()
        expect(await look(join(dir, 'missing', 'deeper.md'))).toBeUndefined()
        expect(await look(join(dir, 'note.md', 'inside.md'))).toBeUndefined()
        expect(await look(join(dir, 'dangling.md'))).toBeUndefined()
        // The link itself is there.
        expect((await look(join(dir, 'dangling.md'), { link: true }))?.isSymbolicLink()).toBe(true)
      })

      it('throws any other error: a loop of symlinks is not nothing', async () => {
        const dir = await tempDir()
        await symlink('b', join(dir, 'a'))
        await symlink('a', join(dir, 'b'))
        await expect(look(join(dir, 'a'))).rejects.toMatchObject({ code: 'ELOOP' })
      })
    })
  }
})
