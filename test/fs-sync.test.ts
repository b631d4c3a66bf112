import { execFileSync } from 'node:child_process'
import { readdirSync, readFileSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { RunStateError } from 'vaultplan'
import { VaultSession } from '../src/store/vault-session.js'
import { readRegularFileSync, writeFileAtomicSync } from '../src/vault/fs-atomic.js'
import { TraceAppender } from '../src/store/trace.js'
import { writeVault } from './helpers/vault.js'

// The hop path's synchronous file calls: only regular files of bounded size are ever read or opened
// synchronously, so nothing a person puts in a vault can block the run (and its lock's refresh timer).

describe('synchronous reads and writes of the hop path', () => {
  it('reads a regular note, and refuses a FIFO, a symlink and a file over the limit without opening them', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vaultplan-sync-'))
    try {
      await writeFile(join(dir, 'note.md'), '---\nstatus: pending\n---\n# Note\n')
      expect(readRegularFileSync(join(dir, 'note.md'), 1024)?.text).toBe('---\nstatus: pending\n---\n# Note\n')
      execFileSync('mkfifo', [join(dir, 'fifo.md')])
      // A synchronous open of a FIFO with no writer would block this thread for ever; the test would time out.
      expect(readRegularFileSync(join(dir, 'fifo.md'), 1024)).toBeUndefined()
      await symlink(join(dir, 'note.md'), join(dir, 'link.md'))
      expect(readRegularFileSync(join(dir, 'link.md'), 1024)).toBeUndefined()
      expect(readRegularFileSync(join(dir, 'note.md'), 10)).toBeUndefined()
      expect(readRegularFileSync(join(dir, 'missing.md'), 1024)).toBeUndefined()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('refuses the same without the look before the open, for a file just listed as regular (the loader)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vaultplan-sync-'))
    try {
      await writeFile(join(dir, 'note.md'), '---\nstatus: pending\n---\n# Note\n')
      expect(readRegularFileSync(join(dir, 'note.md'), 1024, true)).toEqual({
        text: '---\nstatus: pending\n---\n# Note\n',
        stamp: expect.objectContaining({ size: 31 }),
        complete: true,
      })
      // Listed as a file, then swapped for a FIFO: the open does not block, and the descriptor's look refuses it.
      execFileSync('mkfifo', [join(dir, 'fifo.md')])
      expect(readRegularFileSync(join(dir, 'fifo.md'), 1024, true)).toBeUndefined()
      await symlink(join(dir, 'note.md'), join(dir, 'link.md'))
      expect(readRegularFileSync(join(dir, 'link.md'), 1024, true)).toBeUndefined()
      expect(readRegularFileSync(join(dir, 'note.md'), 10, true)).toBeUndefined()
      expect(readRegularFileSync(join(dir, 'missing.md'), 1024, true)).toBeUndefined()
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('replaces a file in one step, keeping its permissions, and leaves no temp file', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'vaultplan-sync-'))
    try {
      const path = join(dir, 'note.md')
      await writeFile(path, 'old\n', { mode: 0o600 })
      const stamp = writeFileAtomicSync(path, 'new: ü\n', { fsync: true })
      expect(await readFile(path, 'utf8')).toBe('new: ü\n')
      expect((await stat(path)).mode & 0o777).toBe(0o600)
      expect(stamp.size).toBe(Buffer.byteLength('new: ü\n'))
      expect(await readdir(dir)).toEqual(['note.md'])
    } finally {
      await rm(dir, { recursive: true, force: true })
    }
  })

  it('a session, once closed, has left no second name of the note versions its status rewrites replaced', async () => {
    const vault = await writeVault({ 'a.md': '---\ntype: start\n---\n# A\n\n## Next\n- [[b]]\n', 'b.md': '# B\n' })
    try {
      const session = await VaultSession.open(vault, { fsync: false, watch: false })
      await session.setStatus('a', 'active')
      await session.setStatus('a', 'done')
      await session.close()
      expect(readdirSync(vault).sort()).toEqual(['a.md', 'b.md'])
      expect(readFileSync(join(vault, 'a.md'), 'utf8')).toBe('---\ntype: start\nstatus: done\n---\n# A\n\n## Next\n- [[b]]\n')
    } finally {
      await rm(vault, { recursive: true, force: true })
    }
  })

  it('a status rewrite without a look at the note first still keeps what a person wrote since the session read it', async () => {
    const vault = await writeVault({ 'a.md': '---\ntype: start\nstatus: pending\n---\n# A\n\n## Next\n- [[b]]\n', 'b.md': '# B\n', 'c.md': '# C\n' })
    try {
      const session = await VaultSession.open(vault, { fsync: false, watch: false })
      // Edited after the session read it, as a person does while a worker runs.
      await writeFile(join(vault, 'a.md'), '---\ntype: start\nstatus: pending\n---\n# A\n\nMy line.\n\n## Next\n- [[b]]\n')
      await session.setStatus('a', 'active')
      expect(readFileSync(join(vault, 'a.md'), 'utf8')).toBe('---\ntype: start\nstatus: active\n---\n# A\n\nMy line.\n\n## Next\n- [[b]]\n')
      // The status it already has: nothing to replace, so the note is looked at, and the edit (a new edge) is picked up.
      await writeFile(join(vault, 'a.md'), '---\ntype: start\nstatus: active\n---\n# A\n\nMy line.\n\n## Next\n- [[b]]\n- done -> [[c]]\n')
      await session.setStatus('a', 'active')
      expect(session.graph.node('a').edges.map((edge) => edge.target)).toEqual(['b', 'c'])
      await session.close()
    } finally {
      await rm(vault, { recursive: true, force: true })
    }
  })

  it('the trace appender refuses a trace that is a FIFO instead of blocking on it', async () => {
    const vault = await writeVault({ 'a.md': '# A\n' })
    await mkdir(join(vault, '00_plan-trace'), { recursive: true })
    execFileSync('mkfifo', [join(vault, '00_plan-trace', 'trace.md')])
    await expect(TraceAppender.open(vault, { fsync: false })).rejects.toThrow(RunStateError)
    await expect(TraceAppender.open(vault, { fsync: false })).rejects.toThrow(/is not a regular file/)
  })
})
