import { mkdir, readFile, stat, utimes, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { loadPlan, updateStatus, type NodeStatus } from 'vaultplan'
import { tempDir } from './helpers/vault.js'

/**
 * Writes a note as a person saved it a minute ago. A note saved a moment ago
 * is first watched for a second, for the rest of a save paused part way
 * (test/torn-reads.test.ts tests that); the bytes written are the same
 * either way.
 */
async function writeSavedNote(path: string, text: string): Promise<void> {
  await writeFile(path, text)
  const minuteAgo = new Date(Date.now() - 60_000)
  await utimes(path, minuteAgo, minuteAgo)
}

/** Writes `text` as `file` in a fresh vault, sets the status, and returns the note's new text. */
async function afterUpdate(text: string, status: NodeStatus = 'done', file = 'step.md'): Promise<string> {
  const dir = await tempDir()
  await mkdir(dirname(join(dir, file)), { recursive: true })
  await writeSavedNote(join(dir, file), text)
  await updateStatus(dir, file.replace(/\.md$/, ''), status, { fsync: false })
  return readFile(join(dir, file), 'utf8')
}

const body = '# Review\n\nRead the draft.\n\n## Next\n- approved -> [[send]]\n'

describe('updateStatus changes the status value and no other byte', () => {
  it('LF', async () => {
    expect(await afterUpdate(`---\ntype: step\nstatus: pending\nrole: review\n---\n${body}`)).toBe(`---\ntype: step\nstatus: done\nrole: review\n---\n${body}`)
  })

  it('CRLF', async () => {
    const crlf = (text: string) => text.replace(/\n/g, '\r\n')
    expect(await afterUpdate(crlf(`---\nstatus: pending\nrole: review\n---\n${body}`), 'active')).toBe(crlf(`---\nstatus: active\nrole: review\n---\n${body}`))
  })

  it('comments, odd spacing and key order', async () => {
    const before = '---\n# knobs first\nrole:   review   # the strong model\nstatus:    pending   # executor-owned\n  # indented comment\ntags: [a,  b]\n---\n'
    const after = '---\n# knobs first\nrole:   review   # the strong model\nstatus:    done   # executor-owned\n  # indented comment\ntags: [a,  b]\n---\n'
    expect(await afterUpdate(before + body)).toBe(after + body)
  })

  it('double and single quotes stay', async () => {
    expect(await afterUpdate(`---\nstatus: "pending"\n---\n${body}`)).toBe(`---\nstatus: "done"\n---\n${body}`)
    expect(await afterUpdate(`---\nstatus: 'pending'\n---\n${body}`)).toBe(`---\nstatus: 'done'\n---\n${body}`)
  })

  it('an empty `status:` gets a value', async () => {
    expect(await afterUpdate(`---\nstatus:\ntype: start\n---\n${body}`)).toBe(`---\nstatus: done\ntype: start\n---\n${body}`)
    expect(await afterUpdate(`---\ntype: start\nstatus:\n---\n${body}`)).toBe(`---\ntype: start\nstatus: done\n---\n${body}`)
  })

  it('an empty `status:` with trailing space or a comment keeps the comment a comment', async () => {
    expect(await afterUpdate(`---\nstatus: \ntype: start\n---\n${body}`)).toBe(`---\nstatus: done\ntype: start\n---\n${body}`)
    expect(await afterUpdate(`---\nstatus: # set by vaultplan\ntype: start\n---\n${body}`)).toBe(
      `---\nstatus: done # set by vaultplan\ntype: start\n---\n${body}`,
    )
  })

  it('a `status:` written as a block value leaves the next key on its own line', async () => {
    const next = await afterUpdate(`---\nstatus: |\n  pending\ntype: start\n---\n${body}`)
    expect(next).toBe(`---\nstatus: done\ntype: start\n---\n${body}`)
    const crlf = await afterUpdate(`---\r\nstatus: >-\r\n  pending\r\ntype: start\r\n---\r\n${body}`)
    expect(crlf).toBe(`---\r\nstatus: done\r\ntype: start\r\n---\r\n${body}`)
    const list = await afterUpdate(`---\nstatus:\n  - pending\ntype: start\n---\n${body}`)
    expect(list).toBe(`---\nstatus:\n  done\ntype: start\n---\n${body}`)
  })

  it('a frontmatter without `status` gains it as its last key', async () => {
    expect(await afterUpdate(`---\ntype: start # entry\ntags: [x]\n---\n${body}`)).toBe(`---\ntype: start # entry\ntags: [x]\nstatus: done\n---\n${body}`)
    expect(await afterUpdate(`---\r\ntype: start\r\n---\r\n# T\r\n`)).toBe(`---\r\ntype: start\r\nstatus: done\r\n---\r\n# T\r\n`)
  })

  it('an empty frontmatter, or one of only comments, gains the key', async () => {
    expect(await afterUpdate(`---\n---\n${body}`)).toBe(`---\nstatus: done\n---\n${body}`)
    expect(await afterUpdate(`---\n# nothing yet\n---\n${body}`)).toBe(`---\n# nothing yet\nstatus: done\n---\n${body}`)
  })

  it('a note without frontmatter gains one, in its line endings', async () => {
    expect(await afterUpdate(body)).toBe(`---\nstatus: done\n---\n${body}`)
    expect(await afterUpdate('# T\r\n\r\nBody.\r\n')).toBe('---\r\nstatus: done\r\n---\r\n# T\r\n\r\nBody.\r\n')
    expect(await afterUpdate('')).toBe('---\nstatus: done\n---\n')
  })

  it('a byte order mark stays first', async () => {
    expect(await afterUpdate(`\uFEFF---\nstatus: pending\n---\n${body}`)).toBe(`\uFEFF---\nstatus: done\n---\n${body}`)
    expect(await afterUpdate(`\uFEFF${body}`)).toBe(`\uFEFF---\nstatus: done\n---\n${body}`)
  })

  it('a note whose closing fence ends the file', async () => {
    expect(await afterUpdate('---\nstatus: pending\n---')).toBe('---\nstatus: done\n---')
    expect(await afterUpdate('---\ntype: start\n---')).toBe('---\ntype: start\nstatus: done\n---')
  })

  it('a note in a subfolder, by its id', async () => {
    expect(await afterUpdate(`---\nstatus: active\n---\n${body}`, 'waiting', 'review/final.md')).toBe(`---\nstatus: waiting\n---\n${body}`)
  })

  it('the file loads back with the new status and everything else equal', async () => {
    const dir = await tempDir()
    const text = `---\n# mine\ntags: [x] # keep\nstatus: 'pending'\nmax_visits: 2\n---\n${body}`
    await writeSavedNote(join(dir, 'review.md'), text)
    const before = (await loadPlan(dir)).node('review')
    await updateStatus(dir, 'review', 'waiting', { fsync: false })
    const after = (await loadPlan(dir)).node('review')
    expect(after).toEqual({ ...before, status: 'waiting', frontmatter: { ...before.frontmatter, status: 'waiting' } })
  })

  it('leaves the file alone when the status is already set', async () => {
    const dir = await tempDir()
    await writeFile(join(dir, 'a.md'), '---\nstatus: done\n---\n')
    const before = await stat(join(dir, 'a.md'))
    await updateStatus(dir, 'a', 'done', { fsync: false })
    // A rewrite would replace the file (a new inode), which sync tools and editors notice.
    expect((await stat(join(dir, 'a.md'))).ino).toBe(before.ino)
  })
})

describe('updateStatus refuses what it cannot do', () => {
  it('a status outside the four', async () => {
    const dir = await tempDir()
    await writeFile(join(dir, 'a.md'), body)
    await expect(updateStatus(dir, 'a', 'finished' as NodeStatus)).rejects.toThrow(
      'Expected `status` to be one of `pending`, `active`, `done`, `waiting`, got `finished`',
    )
    expect(await readFile(join(dir, 'a.md'), 'utf8')).toBe(body)
  })

  it('a note that does not exist', async () => {
    const dir = await tempDir()
    await expect(updateStatus(dir, 'missing', 'done')).rejects.toThrow('no note `missing.md`')
  })

  it('an id that climbs out of the vault', async () => {
    const dir = await tempDir()
    await mkdir(join(dir, 'vault'))
    await writeFile(join(dir, 'outside.md'), body)
    // Notes are found by listing the vault: an id that climbs out names none.
    await expect(updateStatus(join(dir, 'vault'), '../outside', 'done')).rejects.toThrow('no note `../outside.md` (nor any note with that id)')
    expect(await readFile(join(dir, 'outside.md'), 'utf8')).toBe(body)
  })

  it('frontmatter that is not a block mapping, leaving the note as it was', async () => {
    for (const text of ['---\n{status: pending}\n---\n# T\n', '---\n- a list\n---\n# T\n', '---\nstatus: [unclosed\n---\n# T\n']) {
      const dir = await tempDir()
      await writeFile(join(dir, 'a.md'), text)
      await expect(updateStatus(dir, 'a', 'done')).rejects.toThrow(/cannot set `status`/)
      expect(await readFile(join(dir, 'a.md'), 'utf8')).toBe(text)
    }
  })

  it('frontmatter it cannot patch without changing another value', async () => {
    // `...` ends the YAML document, so a key added after it would not be YAML;
    // `*state` refers to the status value, so patching it would change `shown` too.
    for (const text of ['---\ntype: start\n...\n---\n# T\n', '---\nstatus: &state pending\nshown: *state\n---\n# T\n']) {
      const dir = await tempDir()
      await writeFile(join(dir, 'a.md'), text)
      await expect(updateStatus(dir, 'a', 'done')).rejects.toThrow(
        'cannot set `status`: this frontmatter cannot be patched in place without changing other values; set `status:` by hand',
      )
      expect(await readFile(join(dir, 'a.md'), 'utf8')).toBe(text)
    }
  })

  it('a `---js` block, rather than stacking a second frontmatter above it', async () => {
    const dir = await tempDir()
    const text = '---js\n{ status: "pending" }\n---\n# T\n'
    await writeFile(join(dir, 'a.md'), text)
    await expect(updateStatus(dir, 'a', 'done')).rejects.toThrow(/cannot set `status`.*`js`/)
    expect(await readFile(join(dir, 'a.md'), 'utf8')).toBe(text)
  })
})
