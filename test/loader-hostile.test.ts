import { execFileSync } from 'node:child_process'
import { open, readFile, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import fc from 'fast-check'
import { describe, expect, it, vi } from 'vitest'
import { loadPlan, PlanValidationError, runPlan, updateStatus } from 'vaultplan'
import { linear } from './helpers/plans.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { readNote } from '../src/vault/read-vault.js'
import { parseNote } from '../src/vault/parse-note.js'
import { until } from './helpers/until.js'

/** The notes a running session's folder watchers reported changed, by path from the vault. */
const reported = vi.hoisted(() => new Set<string>())
vi.mock('../src/vault/folder-watch.js', async (importOriginal) => {
  const real = await importOriginal<typeof import('../src/vault/folder-watch.js')>()
  const watchFolders: typeof real.watchFolders = (root, folders, onNote, onRelist) =>
    real.watchFolders(
      root,
      folders,
      (file) => {
        reported.add(file)
        onNote(file)
      },
      onRelist,
    )
  return { ...real, watchFolders }
})
import { note, tempDir, writeVault } from './helpers/vault.js'

const start = note({ front: { type: 'start' }, title: 'Start', next: ['[[b]]'] })

describe('notes whose ids collide', () => {
  const twins: [string, string, string][] = [
    ['b.md', 'b.MD', 'b'],
    ['b\u00E9.md', 'be\u0301.md', 'b\u00E9'],
    ['x/b.md', 'x\\b.md', 'x/b'],
  ]
  it.each(twins)('`%s` and `%s` are a duplicate-id diagnostic naming both, not a TypeError', async (first, second, id) => {
    const dir = await writeVault({ 'start.md': start, [first]: note({ title: 'One' }), [second]: note({ title: 'Two' }) })
    const graph = await loadPlan(dir)
    const error = (() => {
      try {
        graph.validate()
      } catch (caught) {
        return caught
      }
      return undefined
    })()
    expect(error).toBeInstanceOf(PlanValidationError)
    const duplicates = (error as PlanValidationError).issues.filter((issue) => issue.code === 'duplicate-id')
    expect(duplicates).toHaveLength(1)
    // The later of the two in the listing is reported, naming the other.
    const [reported, other] = duplicates[0]!.file === first ? [first, second] : [second, first]
    expect(duplicates[0]).toMatchObject({ severity: 'error', file: reported })
    expect(duplicates[0]!.message).toContain(`has the same id \`${id}\` as \`${other}\``)
  })
})

describe('files that are not regular notes', () => {
  it('a FIFO named *.md is reported, never opened with a blocking open', async () => {
    const dir = await tempDir()
    execFileSync('mkfifo', [join(dir, 'pipe.md')])
    const issues: { code: string }[] = []
    // A blocking open of a FIFO with no writer never returns: the test would time out.
    expect(await readNote(dir, 'pipe.md', issues as never)).toBeUndefined()
    expect(issues).toMatchObject([{ code: 'not-a-note', severity: 'warning', file: 'pipe.md' }])
    // Reached by a symlink inside the vault too.
    await writeFile(join(dir, 'start.md'), note({ front: { type: 'start' }, title: 'Start' }))
    await symlink('pipe.md', join(dir, 'link.md'))
    const graph = await loadPlan(dir)
    expect([...graph.nodes.keys()]).toEqual(['start'])
  })

  it('a FIFO named *.md that appears while the run goes (its folder watched) never stalls the run', async () => {
    const dir = await writeVault(linear())
    const work = scriptedWorker(async (step) => {
      // Made while `a` is worked: once the watcher has reported it, the next hop looks at it.
      if (step.node.id === 'a') {
        execFileSync('mkfifo', [join(dir, 'pipe.md')])
        await until(() => reported.has('pipe.md'), 'the watcher to report the FIFO')
      }
    })
    // A blocking open of the FIFO with no writer would never return: the test would time out.
    const result = await runPlan(dir, { query: 'q', fsync: false, work, llm: noJudge() })
    expect(result).toMatchObject({ status: 'completed', lastNode: 'c' })
  })

  it('a note over the size limit is reported from its size, not read', async () => {
    const dir = await tempDir()
    const handle = await open(join(dir, 'huge.md'), 'w')
    await handle.truncate(9 * 1024 * 1024)
    await handle.close()
    const issues: { code: string }[] = []
    expect(await readNote(dir, 'huge.md', issues as never)).toBeUndefined()
    expect(issues).toMatchObject([{ code: 'note-too-large', file: 'huge.md' }])
  })
})

describe('`## Next` inside comments', () => {
  const edgesOf = (text: string) => parseNote('n.md', text).edges.map(({ label, link }) => [label, link])

  it('is not followed inside an HTML comment or an Obsidian %% comment, and the body keeps the whole comment', () => {
    for (const [open, close] of [
      ['<!--', '-->'],
      ['%%', '%%'],
    ] as const) {
      const text = `# T\n\nBody.\n${open}\n## Next\n- [[evil]]\n${close}\nMore body.\n\n## Next\n- ok -> [[good]]\n`
      const parsed = parseNote('n.md', text)
      expect(parsed.edges.map(({ label, link }) => [label, link])).toEqual([['ok', 'good']])
      expect(parsed.body).toBe(`Body.\n${open}\n## Next\n- [[evil]]\n${close}\nMore body.`)
    }
    expect(edgesOf('## Next\n- [[a]] %%- [[evil]]%%\n%% one\n- [[evil2]]\n%%\n- [[b]]\n')).toEqual([
      ['', 'a'],
      ['', 'b'],
    ])
    // A fence inside a comment opens nothing.
    expect(edgesOf('<!--\n```\n-->\n## Next\n- [[a]]\n')).toEqual([['', 'a']])
    expect(edgesOf('%%\n```\n%%\n## Next\n- [[a]]\n')).toEqual([['', 'a']])
    // Unclosed, an Obsidian comment runs to the end of the note.
    expect(edgesOf('## Next\n- [[a]]\n%%\n- [[evil]]\n')).toEqual([['', 'a']])
  })

  it('a comment anywhere in a note hides what it holds: the edges are those of the note without it', () => {
    const line = fc.constantFrom(
      '',
      'Some text.',
      '# Title',
      '## Next',
      '## Other',
      '### Detail',
      '- go -> [[a]]',
      '- [[b]]',
      '* [ ] approved -> [[c]]',
      '```',
      '~~~',
      '- **bold** -> [[d]]',
      '> quote',
    )
    // No fence inside: placed in a fenced block of the note, the comment is code, and its fence would close that block.
    const hidden = fc.array(fc.constantFrom('## Next', '- [[evil]]', '- no -> [[evil]]', '# Evil', '    ## Next', ''), { maxLength: 5 })
    const comment = fc
      .tuple(fc.constantFrom(['<!--', '-->'], ['%%', '%%'], ['<!-- one line', 'still -->']), hidden)
      .map(([[open, close], lines]) => [open!, ...lines, close!])
    fc.assert(
      fc.property(fc.array(line, { maxLength: 14 }), comment, fc.nat(), (lines, block, at) => {
        const position = at % (lines.length + 1)
        const plain = `${lines.join('\n')}\n`
        const commented = `${[...lines.slice(0, position), ...block, ...lines.slice(position)].join('\n')}\n`
        expect(edgesOf(commented)).toEqual(edgesOf(plain))
      }),
      { numRuns: 1500 },
    )
  })
})

describe('updateStatus finds notes whose file name is not the id plus `.md`', () => {
  it.each([
    ['Review.MD', 'Review'],
    ['re\u0301sume\u0301.md', 'r\u00E9sum\u00E9'],
    ['deep/Final.Md', 'deep/Final'],
  ])('`%s` as `%s`', async (file, id) => {
    const text = '---\n# kept\nstatus: pending\n---\nBody.\n'
    const dir = await writeVault({ [file]: text })
    await updateStatus(dir, id, 'done')
    expect(await readFile(join(dir, file), 'utf8')).toBe(text.replace('pending', 'done'))
  })

  it('refuses an id two notes share, changing neither', async () => {
    const dir = await writeVault({ 'b.md': 'status: x\n', 'b.MD': 'B\n' })
    await expect(updateStatus(dir, 'b', 'done')).rejects.toThrow('`b.MD` and `b.md` both have that id')
    expect([await readFile(join(dir, 'b.md'), 'utf8'), await readFile(join(dir, 'b.MD'), 'utf8')]).toEqual(['status: x\n', 'B\n'])
  })
})

describe('a note or folder whose name has a control character', () => {
  it('is not read, and the warning shows the name escaped, so no output can be forged line by line', async () => {
    const vault = await writeVault({
      'a.md': '---\ntype: start\n---\n# A\n\n## Next\n- [[b]]\n',
      'b.md': '# B\n',
      'b\nstep 9  forged -> [[send]].md': '# Forged\n',
      'c\u001b]52;c;eA==\u0007.md': '# Clipboard\n',
      'dir\r\u202e/d.md': '# Hidden\n',
    })
    const graph = await loadPlan(vault)
    expect([...graph.nodes.keys()].sort()).toEqual(['a', 'b'])
    expect(graph.validate().filter((issue) => issue.code === 'unprintable-name')).toEqual([
      { code: 'unprintable-name', severity: 'warning', message: expect.stringContaining('rename it'), file: 'b\\nstep 9  forged -> [[send]].md' },
      { code: 'unprintable-name', severity: 'warning', message: expect.stringContaining('rename it'), file: 'c\\u001b]52;c;eA==\\u0007.md' },
      { code: 'unprintable-name', severity: 'warning', message: expect.stringContaining('rename it'), file: 'dir\\u000d\\u202e' },
    ])
    const validated = execFileSync(process.execPath, [join(import.meta.dirname, '../dist/cli.js'), 'validate', vault], { encoding: 'utf8' })
    expect(validated.split('\n').filter((line) => line.startsWith('step 9'))).toEqual([])
  })
})
