import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { loadPlan, type Edge } from 'vaultplan'
import { issuesOf } from './helpers/issues.js'
import { writeVault } from './helpers/vault.js'

const fixtures = fileURLToPath(new URL('./fixtures/', import.meta.url))
const vaults = fileURLToPath(new URL('../vaults/', import.meta.url))

/** Loads a one-note vault and returns that note's node. */
async function only(text: string, file = 'step.md') {
  return (await loadPlan(await writeVault({ [file]: text }))).node(file.replace(/\.md$/, ''))
}

const edge = (label: string, target: string, conditional = label !== '' && label.toLowerCase() !== 'next'): Edge => ({ label, target, conditional })

describe('loadPlan reads the example vaults', () => {
  it('draft-review: every field of every node', async () => {
    const graph = await loadPlan(join(vaults, 'draft-review'))
    expect([...graph.nodes.values()]).toEqual([
      {
        id: 'draft',
        title: 'Draft the announcement',
        body:
          'Write a short announcement email (under 250 words) for the release described\nin the query. Lead with what the reader can now do that they could not before;\nput upgrade steps last.\n\n' +
          'If there is earlier review feedback in the outputs, address every point of it\nand say briefly what changed.',
        type: 'start',
        status: 'pending',
        maxVisits: 3,
        edges: [edge('', 'review')],
        file: 'draft.md',
        frontmatter: { type: 'start', status: 'pending', max_visits: 3 },
      },
      {
        id: 'review',
        title: 'Review the draft',
        body:
          'Read the latest draft critically. Approved, or what must change?\n\nCheck that:\n1. every ' +
          'claim about the release matches the changelog,\n2. the upgrade steps are complete and in order,\n3. ' +
          'the tone is friendly and free of marketing filler.',
        type: 'step',
        status: 'pending',
        tools: ['fetch_url'],
        role: 'review',
        maxVisits: 3,
        edges: [edge('approved', 'send'), edge('needs revision', 'draft')],
        file: 'review.md',
        frontmatter: { type: 'step', status: 'pending', tools: ['fetch_url'], role: 'review', max_visits: 3 },
      },
      {
        id: 'send',
        title: 'Send the announcement',
        body: 'Send the approved draft to the release mailing list and return the message id.',
        type: 'step',
        status: 'pending',
        tools: ['send_email'],
        maxVisits: 3,
        edges: [],
        file: 'send.md',
        frontmatter: { status: 'pending', tools: ['send_email'] },
      },
    ])
    expect(graph.startNode().id).toBe('draft')
  })

  it('linear: a path graph, `next ->` read as unconditional', async () => {
    const graph = await loadPlan(join(vaults, 'linear'))
    expect([...graph.nodes.values()].map((node) => [node.id, node.edges])).toEqual([
      ['draft', [edge('next', 'publish')]],
      ['outline', [edge('', 'draft')]],
      ['publish', []],
      ['research', [edge('', 'outline')]],
    ])
  })

  it('branching: nested ids, checkbox items and the `→` arrow', async () => {
    const graph = await loadPlan(join(vaults, 'branching'))
    expect([...graph.nodes.keys()]).toEqual(['bugs/fix', 'bugs/reproduce', 'bugs/verify', 'support/reply', 'triage'])
    expect(graph.node('triage').edges).toEqual([edge('the ticket reports a bug', 'bugs/reproduce'), edge('the ticket is a question', 'support/reply')])
    expect(graph.node('bugs/verify').body).toBe('## Checks\n\nRun the regression test and the whole test suite. Report the numbers.')
  })

  it('CRLF notes: same graph, positions on the right lines', async () => {
    const dir = join(fixtures, 'crlf')
    const graph = await loadPlan(dir)
    expect(graph.node('draft').body).toBe('Written on Windows, so every line ends in CRLF.')
    expect(graph.node('review').edges).toEqual([edge('approved', 'send'), edge('needs revision', 'draft')])
    expect(graph.node('send')).toMatchObject({ title: 'Send', body: 'Starts with a byte order mark and has no frontmatter.', frontmatter: {} })
    expect(graph.validate()).toEqual([])
    // Break one link and check its position points into the CRLF file.
    const broken = await writeVault({
      'a.md': '---\r\ntype: start\r\n---\r\n# A\r\n\r\n## Next\r\n- ok -> [[gone]]\r\n- [[b]]\r\n',
      'b.md': '# B\r\n',
    })
    expect((await issuesOf(broken)).map(({ code, line, column }) => [code, line, column])).toEqual([['dangling-edge', 7, 9]])
  })

  it('frontmatter with comments: knobs and user keys read, quoted values unquoted', async () => {
    const graph = await loadPlan(join(fixtures, 'frontmatter-comments'))
    expect(graph.node('draft').frontmatter).toEqual({ type: 'start', status: 'pending', tags: ['writing'], aliases: ['First draft'], reviewed: null })
    expect(graph.node('review')).toMatchObject({ status: 'pending', maxVisits: 4, role: 'review' })
    expect(graph.node('draft').edges).toEqual([edge('', 'review')])
    expect(graph.validate()).toEqual([])
  })
})

describe('which files are notes', () => {
  it('every .md file below the vault, not 00_plan-trace/ at any depth, dot-folders or other files', async () => {
    const dir = await writeVault({
      'start.md': '---\ntype: start\n---\n',
      'a/b/deep.md': '',
      'UPPER.MD': '',
      '00_plan-trace/trace.md': '## Next\n- [[start]]\n',
      'sub/00_plan-trace/kept.md': '',
      '.obsidian/workspace.md': '',
      '.trash/old.md': '',
      'a/.hidden/x.md': '',
      'image.png': '\x89PNG',
      'notes.txt': 'text',
      'board.canvas': '{}',
    })
    // SPEC section 2, amended: a run's folder holds no notes of the plan at any depth.
    expect([...(await loadPlan(dir)).nodes.keys()]).toEqual(['UPPER', 'a/b/deep', 'start'])
  })

  it('the Obsidian folder of ordinary notes loads with diagnostics, never a crash', async () => {
    const dir = join(fixtures, 'obsidian-notes')
    const graph = await loadPlan(dir)
    expect([...graph.nodes.keys()]).toEqual(['Daily/2024-05-01', 'Garden', 'Home', 'People/Alice', 'Projects/Website redesign', 'Reading list'])
    expect(graph.node('Home').edges).toEqual([])
    expect(graph.node('Projects/Website redesign').edges).toEqual([edge('ask', 'People/Alice')])
    expect(graph.node('Projects/Website redesign').frontmatter).toEqual({
      status: 'Draft',
      tags: ['project', 'work'],
      due: '2024-06-30',
      aliases: ['Redesign'],
    })
    expect(await issuesOf(dir)).toMatchInlineSnapshot(`
      [
        {
          "code": "no-start",
          "message": "no note is marked \`type: start\` and 5 notes have no incoming edge (\`Daily/2024-05-01\`, \`Garden\`, \`Home\`, \`Projects/Website redesign\`, \`Reading list\`); mark the entry note with \`type: start\`",
          "severity": "error",
        },
        {
          "code": "dangling-edge",
          "column": 15,
          "file": "Daily/2024-05-01.md",
          "line": 7,
          "message": "edge \`tomorrow\` -> \`[[2024-05-02]]\` matches no note",
          "node": "Daily/2024-05-01",
          "severity": "error",
        },
        {
          "code": "invalid-frontmatter",
          "column": 9,
          "file": "Projects/Website redesign.md",
          "line": 2,
          "message": "\`status\` must be one of \`pending\`, \`active\`, \`done\`, \`waiting\`, got \`"Draft"\`",
          "node": "Projects/Website redesign",
          "severity": "error",
        },
        {
          "code": "invalid-frontmatter",
          "column": 9,
          "file": "Reading list.md",
          "line": 2,
          "message": "\`status\` must be one of \`pending\`, \`active\`, \`done\`, \`waiting\`, got \`"reading"\`",
          "node": "Reading list",
          "severity": "error",
        },
      ]
    `)
  })
})

describe('title and body', () => {
  it('the title is the first `# ` heading, and leaves the body when it opens the note', async () => {
    const node = await only('---\nstatus: done\n---\n\n# Write the report\n\nUse the data.\n\n# A second h1\n')
    expect([node.title, node.body]).toEqual(['Write the report', 'Use the data.\n\n# A second h1'])
  })

  it('without a heading the title is the id', async () => {
    const node = await only('Just do it.\n', 'ops/deploy.md')
    expect([node.id, node.title, node.body]).toEqual(['ops/deploy', 'ops/deploy', 'Just do it.'])
  })

  it('a heading after some text is the title but stays in the body', async () => {
    const node = await only('Context first.\n\n# Title\n\nMore.\n')
    expect([node.title, node.body]).toEqual(['Title', 'Context first.\n\n# Title\n\nMore.'])
  })

  it('inline markdown in the title is read as text', async () => {
    expect((await only('# Review **the** `draft`\n')).title).toBe('Review the draft')
  })

  it('`## Next` (with its subsections) and `## Feedback` are not part of the body; other sections are', async () => {
    const node = await only(
      '# Step\n\nDo the work.\n\n## Next\n- [[a]]\n\n### Why these\nNotes on the edges.\n\n## Context\nKeep this.\n\n## Feedback\nMake it shorter.\n\n## After\nAnd this.\n',
    )
    expect(node.body).toBe('Do the work.\n\n## Context\nKeep this.\n\n## After\nAnd this.')
  })

  it('a `# ` line inside a code block is not the title', async () => {
    const node = await only('```bash\n# install\nnpm ci\n```\n')
    expect(node.title).toBe('step')
  })
})

describe('edges come only from list items under `## Next`', () => {
  it('reads label, target and conditional from each item', async () => {
    const node = await only(
      '## Next\n- approved -> [[send]]\n- needs revision → [[draft]]\n- [ ] checked later -> [[later]]\n- [x] ticked -> [[ticked]]\n- next -> [[fallback]]\n',
    )
    expect(node.edges).toEqual([
      edge('approved', 'send'),
      edge('needs revision', 'draft'),
      edge('checked later', 'later'),
      edge('ticked', 'ticked'),
      edge('next', 'fallback', false),
    ])
  })

  it('a bare link is unconditional; `Next` in any case too', async () => {
    expect((await only('## Next\n- [[a]]\n')).edges).toEqual([edge('', 'a', false)])
    expect((await only('## Next\n- NEXT -> [[a]]\n')).edges).toEqual([edge('NEXT', 'a', false)])
    expect((await only('## Next\n- [ ] [[a]]\n')).edges).toEqual([edge('', 'a', false)])
  })

  it('the heading is matched in any case and with inline formatting', async () => {
    expect((await only('## NEXT\n- [[a]]\n')).edges).toEqual([edge('', 'a', false)])
    expect((await only('## **Next**\n- [[a]]\n')).edges).toEqual([edge('', 'a', false)])
    expect((await only('## Next ##\n- [[a]]\n')).edges).toEqual([edge('', 'a', false)])
  })

  it('label formatting is read as text', async () => {
    expect((await only('## Next\n- **approved** by _the_ `reviewer` -> [[send]]\n')).edges).toEqual([edge('approved by the reviewer', 'send')])
  })

  it('numbered and `*` / `+` lists count', async () => {
    expect((await only('## Next\n1. ok -> [[a]]\n2. [[b]]\n')).edges).toEqual([edge('ok', 'a'), edge('', 'b', false)])
    expect((await only('## Next\n* ok -> [[a]]\n+ no -> [[b]]\n')).edges).toEqual([edge('ok', 'a'), edge('no', 'b')])
  })

  it.each([
    ['prose before the heading', 'See [[a]] for context.\n\n## Next\n- [[b]]\n'],
    ['prose under the heading', '## Next\nWhen done, go to [[a]].\n\n- [[b]]\n'],
    ['a fenced code block under the heading', '## Next\n```\n- [[a]]\n```\n- [[b]]\n'],
    ['a `## Next` inside a fenced code block', '```markdown\n## Next\n- [[a]]\n```\n\n## Next\n- [[b]]\n'],
    ['an indented code block', '## Next\n\n    - [[a]]\n\n- [[b]]\n'],
    ['inline code', '## Next\n- `[[a]]` is how you link\n- [[b]]\n'],
    ['an embed', '## Next\n- ![[a]]\n- [[b]]\n'],
    ['an embed as a target', '## Next\n- approved -> ![[a]]\n- [[b]]\n'],
    ['a list under another heading', '## Links\n- [[a]]\n\n## Next\n- [[b]]\n'],
    ['a list after the section ends', '## Next\n- [[b]]\n\n## Notes\n- [[a]]\n'],
    ['a `### Next` heading', '### Next\n- [[a]]\n\n## Next\n- [[b]]\n'],
    ['a `# Next` heading', '# Next\n- [[a]]\n\n## Next\n- [[b]]\n'],
    ['a `## Next steps` heading', '## Next steps\n- [[a]]\n\n## Next\n- [[b]]\n'],
    ['a `## Next` in a callout', '> [!tip] Routing\n> ## Next\n> - [[a]]\n\n## Next\n- [[b]]\n'],
    ['a `## Next` in a blockquote', '> ## Next\n> - [[a]]\n\n## Next\n- [[b]]\n'],
    ['an HTML comment', '## Next\n<!-- - [[a]] -->\n- [[b]]\n'],
    ['a nested item', '## Next\n- [[b]]\n  - see also [[a]]\n'],
    ['the frontmatter', '---\nrelated: "[[a]]"\n---\n## Next\n- [[b]]\n'],
  ])('not from %s', async (_, text) => {
    expect((await only(text)).edges.map((found) => found.target)).toEqual(['b'])
  })

  it('an item with two links is a multiple-targets diagnostic, not two edges', async () => {
    const dir = await writeVault({ 'start.md': '---\ntype: start\n---\n## Next\n- [[a]] or [[b]]\n- [[c]]\n', 'c.md': '' })
    expect((await loadPlan(dir)).node('start').edges).toEqual([edge('', 'c', false)])
    expect((await issuesOf(dir)).map(({ code, line, column }) => [code, line, column])).toEqual([['multiple-targets', 5, 1]])
  })
})

describe('loadPlan refuses a path that is not a vault', () => {
  it('a path that does not exist, naming it', async () => {
    const missing = join(tmpdir(), 'vaultplan-no-such-vault-4f1c')
    await expect(loadPlan(missing)).rejects.toMatchObject({
      name: 'VaultPathError',
      code: 'vault-missing',
      message: `\`${missing}\` does not exist; pass the folder that holds the plan's notes`,
    })
  })

  it('a file instead of a folder, naming it', async () => {
    const dir = await writeVault({ 'note.md': '# A note\n' })
    const file = join(dir, 'note.md')
    await expect(loadPlan(file)).rejects.toMatchObject({
      name: 'VaultPathError',
      code: 'vault-not-folder',
      message: `\`${file}\` is not a folder; pass the folder that holds the plan's notes`,
    })
  })

  it('an empty vault loads, and validation says it has no start', async () => {
    const dir = await writeVault({})
    const graph = await loadPlan(dir)
    expect(graph.nodes.size).toBe(0)
    expect(await issuesOf(dir)).toEqual([{ code: 'no-start', severity: 'error', message: 'the plan has no notes' }])
  })
})
