import { execFile, spawn } from 'node:child_process'
import { cp, mkdir, readdir, readFile, rename, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { bin, root as repository, vaultplan } from './helpers/cli.js'
import { recordedSession, renderTranscript, type RecordedCall } from '../scripts/docs-mcp.js'
import { DOCUMENT, stdioClient, until } from './helpers/mcp.js'
import { draftReview } from './helpers/plans.js'
import { tempDir, writeVault } from './helpers/vault.js'

// These tests run the built CLI (`npm test` builds first), as a coding agent starts it.
describe('vaultplan mcp over stdio, driven by the SDK client', () => {
  it('creates a plan from a document and walks it to the end: choices, a person decides, stale keys and bad choices refused', async () => {
    const root = await tempDir()
    const agent = await stdioClient(root)

    const created = await agent.call('plan_create', { vault: 'plans/release', document: DOCUMENT })
    expect(created).toMatchObject({ vault: 'plans/release', start: 'draft', warnings: [] })
    expect(created.notes).toEqual(['approve', 'draft', 'review', 'send'])
    expect(await agent.call('plan_list')).toEqual({ vaults: [{ vault: 'plans/release', phase: 'fresh', node: 'draft' }], truncated: false })

    const vault = 'plans/release'
    expect(await agent.refuse('plan_next', { vault })).toMatch(/^Error \(query-needed\): `plans\/release` has not run yet/)
    let { step } = await agent.call('plan_next', { vault, query: 'announce 0.2' })
    expect(step).toMatchObject({
      kind: 'work',
      step: 1,
      visit: 1,
      maxVisits: 3,
      query: 'announce 0.2',
      outputs: [],
    })
    // Its title is its id (the document gave none) and its body is whole: neither title nor uri is sent.
    expect(step.node).toEqual({ id: 'draft', body: 'Write a two-line release note for vaultplan 0.2.' })
    expect(step.node.body).toContain('Write a two-line release note')
    // Asking again counts nothing: the same step, the same key.
    expect((await agent.call('plan_next', { vault })).step).toEqual(step)
    const firstKey = step.key

    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'vaultplan 0.2: plans you can step through.' }))
    expect(step).toMatchObject({ kind: 'work', step: 2, node: { id: 'review' }, conditions: ['approved', 'needs revision'] })
    expect(step.outputs).toEqual([{ node: 'draft', visit: 1, output: 'vaultplan 0.2: plans you can step through.' }])

    const stale = await agent.refuse('plan_finish', { vault, key: firstKey, output: 'again' })
    expect(stale).toMatch(/^Error \(stale-step\): [\s\S]*call plan_next/)
    // The pending step, in the tools' words; paths never as the server's disk has them.
    expect(stale).toContain(`The pending step is \`review\` (visit 1, key \`${step.key}\`)`)
    expect(stale).not.toContain(root)
    const badChoice = await agent.refuse('plan_finish', { vault, key: step.key, output: 'looks fine', choice: 'maybe' })
    expect(badChoice).toMatch(/^Error \(bad-choice\)/)
    expect(badChoice).toContain('approved')
    // Without a choice the configured judge decides, and the server has none: it says so and writes nothing.
    expect(await agent.refuse('plan_finish', { vault, key: step.key, output: 'looks fine' })).toMatch(/^Error \(model-not-configured\)[\s\S]*Pass `choice`/)
    expect(await agent.refuse('plan_decide', { vault, node: 'review', edge: 'approved' })).toMatch(/^Error \(not-waiting\)/)
    // Nothing was written: the review is still the pending step.
    expect((await agent.call('plan_next', { vault })).step.key).toBe(step.key)

    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'Too vague.', choice: 'needs revision' }))
    expect(step).toMatchObject({ kind: 'work', step: 3, visit: 2, node: { id: 'draft' } })
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'vaultplan 0.2: plan_next and plan_finish over MCP.' }))
    expect(step).toMatchObject({ kind: 'work', node: { id: 'review' }, visit: 2 })
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'Accurate and short.', choice: 'approved' }))
    expect(step).toMatchObject({ kind: 'work', node: { id: 'approve', judge: 'human' } })
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'Ready for a person to approve.' }))
    expect(step).toMatchObject({
      kind: 'waiting',
      waiting: [{ node: 'approve', uri: 'vaultplan://plans%2Frelease/approve.md', choices: ['send it', 'rewrite'] }],
    })
    expect((await agent.call('plan_next', { vault })).step.kind).toBe('waiting')

    expect(await agent.refuse('plan_decide', { vault, node: 'approve', edge: 'ship it' })).toMatch(/^Error \(bad-choice\)/)
    // A person's decision claims nothing: it says what comes next, and plan_next takes it.
    const decided = await agent.call('plan_decide', { vault, node: 'approve', edge: 'send it', feedback: 'Good to go.' })
    expect(decided).toEqual({
      vault,
      decided: { node: 'approve', edge: 'send it' },
      next: { kind: 'work', node: 'send', visit: 1, step: 6 },
      todo: 'Call plan_next to take `send`: a decision claims nothing.',
    })
    expect(await readFile(join(root, vault, 'approve.md'), 'utf8')).toContain('> Good to go.')

    ;({ step } = await agent.call('plan_next', { vault }))
    // A new step: what the session was handed already (the query, older outputs) is not sent again.
    expect(step).toMatchObject({ kind: 'work', step: 6, node: { id: 'send', terminal: true }, earlierOutputs: 4 })
    expect(step).not.toHaveProperty('query')
    expect(step).not.toHaveProperty('conditions')
    expect(await agent.refuse('plan_decide', { vault, node: 'approve', edge: 'rewrite' })).toMatch(/^Error \(not-waiting\)/)
    // The previous hop's output and the person's new feedback in full, the feedback labelled.
    const recent = [
      { node: 'approve', visit: 1, feedback: true, output: expect.stringContaining('Good to go.') },
      { node: 'approve', visit: 1, output: 'Ready for a person to approve.' },
    ]
    expect(step.outputs).toEqual(recent)
    // Asked again for the same step, the agent lost it: the whole view, the query and older outputs by their resource.
    ;({ step } = await agent.call('plan_next', { vault }))
    expect(step).toMatchObject({ query: 'announce 0.2', outputs: [...recent, ...Array(4).fill(expect.objectContaining({ uri: expect.any(String) }))] })
    expect(step.outputs[2]).toEqual({
      node: 'review',
      visit: 2,
      preview: 'Accurate and short.',
      uri: 'vaultplan://plans%2Frelease/00_plan-trace/outputs/0004-review.md',
    })
    expect(await agent.refuse('plan_finish', { vault, key: step.key, output: 'Posted.', choice: 'next' })).toMatch(/^Error \(bad-choice\)/)
    ;({ step } = await agent.call('plan_finish', { vault, key: step.key, output: 'Posted.' }))
    expect(step).toMatchObject({ kind: 'completed', node: 'send', output: 'Posted.' })

    const status = await agent.call('plan_status', { vault })
    expect(status).toMatchObject({ vault, phase: 'completed', result: { node: 'send' } })
    // In plan order: the start, then along the edges.
    expect(status.nodes.map((node: { id: string; visits: number }) => [node.id, node.visits])).toEqual([
      ['draft', 2],
      ['review', 2],
      ['approve', 1],
      ['send', 1],
    ])
    // The session in docs/mcp.md is this one: `npm run docs` records it (`VAULTPLAN_MCP_TRANSCRIPT=<file>`) and renders it there.
    const transcript = process.env.VAULTPLAN_MCP_TRANSCRIPT
    if (transcript) await writeFile(transcript, `${JSON.stringify(agent.calls, null, 2)}\n`)
    else {
      // The recorded session is what the server answers now, run ids and times aside: else `npm run docs` records it anew.
      const recorded = JSON.parse(await readFile(recordedSession, 'utf8')) as RecordedCall[]
      const sameRun = (text: string) => text.replace(/\d{8}-\d{6}-[0-9a-f]{6}/g, '<run>').replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, '<time>')
      expect(sameRun(renderTranscript(agent.calls))).toBe(sameRun(renderTranscript(recorded)))
    }
  })

  it('keeps results small: a long body and a long output are clipped, the rest readable in parts of its resource; older outputs by uri', async () => {
    const root = await tempDir()
    const body = 'Read this closely. '.repeat(600)
    await writeVault(
      {
        'long/a.md': `---\ntype: start\n---\n# A\n\n${body}\n\n## Next\n- [[b]]\n`,
        'long/b.md': '# B\n\nDo b.\n\n## Next\n- [[c]]\n',
        'long/c.md': '# C\n\nDo c.\n',
      },
      root,
    )
    const agent = await stdioClient(root)
    let { step } = await agent.call('plan_next', { vault: 'long', query: 'q' })
    expect(step.node.body).toBe(body.trim().slice(0, 8000))
    expect(step.node.more).toBe(`${body.trim().length - 8000} more characters: read vaultplan://long/a.md`)
    const output = Array.from({ length: 5000 }, (_, n) => `w${n}`).join(' ')
    ;({ step } = await agent.call('plan_finish', { vault: 'long', key: step.key, output }))
    const [shown] = step.outputs
    expect(shown.output).toBe(output.slice(0, 20_000))
    const uri = 'vaultplan://long/00_plan-trace/outputs/0001-a.md'
    expect(shown.more).toBe(`${output.length - 20_000} more characters: read ${uri}?part=2 (part 2 of 2, 20000 characters each)`)
    // The parts put together are the output note, the output in it.
    const parts = []
    for (const part of [1, 2]) parts.push(((await agent.client.readResource({ uri: `${uri}?part=${part}` })).contents[0] as { text: string }).text)
    expect(parts[0]).toHaveLength(20_000)
    const whole = ((await agent.client.readResource({ uri })).contents[0] as { text: string }).text
    expect(parts.join('')).toBe(whole)
    expect(whole).toContain(output)
    await expect(agent.client.readResource({ uri: `${uri}?part=3` })).rejects.toThrow(/asks for part 3, and the file has 2/)
    // A hop on, the session has had that output: it is counted, not sent again.
    ;({ step } = await agent.call('plan_finish', { vault: 'long', key: step.key, output: 'b done' }))
    expect(step.outputs).toEqual([{ node: 'b', visit: 1, output: 'b done' }])
    expect(step.earlierOutputs).toBe(1)
    // plan_next is where an agent that lost its context starts again: older outputs by their resource with a preview.
    const again = await agent.call('plan_next', { vault: 'long' })
    step = again.step
    expect(step.outputs).toEqual([
      { node: 'b', visit: 1, output: 'b done' },
      { node: 'a', visit: 1, preview: `${output.slice(0, 200)}…`, uri },
    ])
    expect(step).not.toHaveProperty('earlierOutputs')
    // Another session (another agent, or one reconnected) is handed them too.
    const other = await stdioClient(root)
    expect((await other.call('plan_next', { vault: 'long', agent: again.agent })).step.outputs).toHaveLength(2)
  })

  it('refuses, as tool errors, vaults outside the root: `..`, absolute paths, symlinks out', async () => {
    const root = await tempDir()
    const outside = await writeVault(draftReview())
    await mkdir(join(root, 'plans'))
    await symlink(outside, join(root, 'plans', 'linked'))
    const agent = await stdioClient(root)
    expect(await agent.refuse('plan_status', { vault: '../x' })).toMatch(/^Error \(outside-root\)/)
    expect(await agent.refuse('plan_validate', { vault: outside })).toMatch(/^Error \(outside-root\): `.*` is absolute/)
    expect(await agent.refuse('plan_status', { vault: 'plans/linked' })).toMatch(/^Error \(outside-root\): [^\n]*symlink/)
    expect(await agent.refuse('plan_next', { vault: 'plans/linked', query: 'q' })).toMatch(/^Error \(outside-root\): [^\n]*symlink/)
    expect(await agent.refuse('plan_create', { vault: 'plans/linked/new', document: DOCUMENT })).toMatch(/^Error \(outside-root\)/)
    expect(await agent.refuse('plan_graph', { vault: 'nowhere' })).toMatch(/^Error \(not-found\)/)
    await expect(agent.client.readResource({ uri: 'vaultplan://plans%2Flinked/draft.md' })).rejects.toThrow(/symlink/)
    await expect(agent.client.readResource({ uri: 'vaultplan://plans/..%2F..%2Fetc/passwd.md' })).rejects.toThrow(/encoded `\/`|climbs out/)
    // The outside vault is untouched, and nothing was created in the root but the folder made above.
    expect(await readFile(join(outside, 'draft.md'), 'utf8')).toBe(draftReview()['draft.md'])
    expect(await agent.call('plan_list')).toEqual({ vaults: [], truncated: false })
  })

  it('refuses an invalid document and an existing folder, writing nothing', async () => {
    const root = await tempDir()
    const agent = await stdioClient(root)
    const invalid = await agent.refuse('plan_create', { vault: 'broken', document: '## a\ntype: start\n### Next\n- [[nowhere]]\n' })
    expect(invalid).toMatch(/^Error \(plan-invalid\): The plan has 1 error:/)
    expect(invalid).toMatch(/a \(line 4:3\) error dangling-edge edge `next` -> `\[\[nowhere\]\]` matches no note/)
    await agent.call('plan_create', { vault: 'release', document: DOCUMENT })
    expect(await agent.refuse('plan_create', { vault: 'release', document: DOCUMENT })).toMatch(/^Error \(exists\)/)
    expect(await agent.refuse('plan_create', { vault: 'release/inner', document: DOCUMENT })).toMatch(/^Error \(exists\): [^\n]*inside the vault `release`/)
    expect((await agent.call('plan_list')).vaults.map((row: { vault: string }) => row.vault)).toEqual(['release'])
  })

  it('serves notes and the trace as resources, and tells a subscriber when a note changes on disk', async () => {
    const root = await tempDir()
    const vault = join(root, 'blog')
    await writeVault(draftReview(), vault)
    const agent = await stdioClient(root)
    const { resources } = await agent.client.listResources()
    expect(resources.map((resource) => resource.uri)).toEqual(['vaultplan://blog/draft.md', 'vaultplan://blog/review.md', 'vaultplan://blog/send.md'])
    const read = await agent.client.readResource({ uri: 'vaultplan://blog/review.md' })
    expect(read.contents).toEqual([{ uri: 'vaultplan://blog/review.md', mimeType: 'text/markdown', text: draftReview()['review.md'] }])

    await agent.client.subscribeResource({ uri: 'vaultplan://blog/review.md' })
    await agent.client.subscribeResource({ uri: 'vaultplan://blog/send.md' })
    // A person edits the note in their editor.
    await writeFile(join(vault, 'review.md'), `${draftReview()['review.md']}\nA line a person added.\n`)
    await until(() => agent.updated.includes('vaultplan://blog/review.md'), 'the update of review.md')
    // An atomic save (a new file renamed over the note) counts too.
    await writeFile(join(vault, '.send.tmp'), 'Send it now.\n')
    await rename(join(vault, '.send.tmp'), join(vault, 'send.md'))
    await until(() => agent.updated.includes('vaultplan://blog/send.md'), 'the update of send.md')
    expect(new Set(agent.updated)).toEqual(new Set(['vaultplan://blog/review.md', 'vaultplan://blog/send.md']))

    await agent.client.unsubscribeResource({ uri: 'vaultplan://blog/review.md' })
    const seen = agent.updated.length
    await writeFile(join(vault, 'review.md'), 'rewritten\n')
    await writeFile(join(vault, 'send.md'), 'rewritten too\n')
    await until(() => agent.updated.slice(seen).includes('vaultplan://blog/send.md'), 'the update of send.md after the unsubscription')
    // review.md was written first: had its update been sent, it would have come before this one.
    expect(new Set(agent.updated.slice(seen))).toEqual(new Set(['vaultplan://blog/send.md']))

    // The trace appears in the list once the plan runs, and is readable.
    await agent.call('plan_next', { vault: 'blog', query: 'q' })
    const after = (await agent.client.listResources()).resources.map((resource) => resource.uri)
    expect(after).toContain('vaultplan://blog/00_plan-trace/trace.md')
    const trace = await agent.client.readResource({ uri: 'vaultplan://blog/00_plan-trace/trace.md' })
    expect((trace.contents[0] as { text: string }).text).toContain('vaultplan: trace')
  })

  it('lists the notes of subfolders (subplans) and their traces, each path segment encoded on its own', async () => {
    const root = await tempDir()
    await writeVault(
      {
        'research.md': '---\ntype: start\nplan: research\n---\n# Research\n\n## Next\n- [[write up]]\n',
        'write up.md': '# Write up\n',
        'research/find sources.md': '---\ntype: start\n---\n# Find sources\n\n## Next\n- [[read]]\n',
        'research/read.md': '# Read\n',
        'research/00_plan-trace/trace.md': '---\nvaultplan: trace\n---\n',
        'research/00_plan-trace/outputs/0001-find sources.md': '---\nvaultplan: output\n---\nthree sources\n',
        '.obsidian/workspace.md': 'not a note of the plan\n',
      },
      join(root, 'Team plans', 'q3'),
    )
    const agent = await stdioClient(root)
    const { resources } = await agent.client.listResources()
    expect(resources.map((resource) => resource.uri)).toEqual([
      'vaultplan://Team%20plans%2Fq3/research.md',
      'vaultplan://Team%20plans%2Fq3/research/00_plan-trace/trace.md',
      'vaultplan://Team%20plans%2Fq3/research/find%20sources.md',
      'vaultplan://Team%20plans%2Fq3/research/read.md',
      'vaultplan://Team%20plans%2Fq3/write%20up.md',
    ])
    // An output note is not listed, but readable: results that clip an output point to it.
    const output = await agent.client.readResource({ uri: 'vaultplan://Team%20plans%2Fq3/research/00_plan-trace/outputs/0001-find%20sources.md' })
    expect((output.contents[0] as { text: string }).text).toContain('three sources')
    await expect(agent.client.readResource({ uri: 'vaultplan://Team%20plans%2Fq3/research/missing.md' })).rejects.toThrow(/does not exist/)
    await expect(agent.client.readResource({ uri: 'vaultplan://Team%20plans%2Fq3/00_plan-trace/.lock-holder.json' })).rejects.toThrow(/not a markdown note/)
  })

  it('ends when the client closes its stdin', async () => {
    const child = spawn(process.execPath, [bin, 'mcp', '--root', await tempDir()], { stdio: ['pipe', 'ignore', 'pipe'] })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    await until(() => stderr.includes('over stdio'), 'the server to start')
    const exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)))
    child.stdin.end()
    expect(await exited).toBe(0)
  })

  it('says so when the root is itself a vault (a vault is a folder inside the root)', async () => {
    const agent = await stdioClient(await writeVault(draftReview()))
    expect(await agent.call('plan_list')).toEqual({ vaults: [], truncated: false, note: expect.stringContaining('--root set to the folder above it') })
  })

  it('pictures a plan as mermaid, DOT, SVG and an Obsidian canvas', async () => {
    const root = await tempDir()
    await writeVault(
      { ...Object.fromEntries(Object.entries(draftReview()).map(([file, text]) => [`notes/plans/blog/${file}`, text])), 'notes/.obsidian/app.json': '{}' },
      root,
    )
    const agent = await stdioClient(root)
    const vault = 'notes/plans/blog'
    const mermaid = await agent.call('plan_graph', { vault })
    expect(mermaid).toMatchObject({ vault, format: 'mermaid', picture: expect.stringContaining('n1 -->|"approved"| n2') })
    expect((await agent.call('plan_graph', { vault, format: 'dot' })).picture).toMatch(/^digraph/)
    expect((await agent.call('plan_graph', { vault, format: 'svg' })).picture).toContain('<svg')
    const canvas = JSON.parse((await agent.call('plan_graph', { vault, format: 'canvas' })).picture)
    // Card paths are relative to the Obsidian vault that holds the plan (`notes/`, inside the root).
    expect(
      canvas.nodes
        .map((node: { file?: string }) => node.file)
        .filter(Boolean)
        .sort(),
    ).toEqual(['plans/blog/draft.md', 'plans/blog/review.md', 'plans/blog/send.md'])
    expect(await agent.refuse('plan_graph', { vault, format: 'png' })).toMatch(/format/)
  })

  it('offers the run_plan prompt for a vault', async () => {
    const agent = await stdioClient(await tempDir())
    const { prompts } = await agent.client.listPrompts()
    expect(prompts.map((prompt) => [prompt.name, prompt.arguments])).toEqual([
      ['run_plan', [{ name: 'vault', description: expect.any(String), required: true }]],
    ])
    const prompt = await agent.client.getPrompt({ name: 'run_plan', arguments: { vault: 'plans/release' } })
    const text = (prompt.messages[0]!.content as { text: string }).text
    expect(text).toContain('plan_next with {"vault": "plans/release"}')
    expect(text).toContain('plan_finish')
    expect(text).toContain('plan_decide')
  })

  it('keeps tools/list small: every tool listed in --help, each description under 600 characters, no output schema', async () => {
    const agent = await stdioClient(await tempDir())
    const listed = await agent.client.listTools()
    const names = listed.tools.map((tool) => tool.name).sort()
    expect(names).toEqual([
      'plan_assume',
      'plan_block',
      'plan_create',
      'plan_decide',
      'plan_decision',
      'plan_defer',
      'plan_edit',
      'plan_fact',
      'plan_finish',
      'plan_fork',
      'plan_graph',
      'plan_invalidate',
      'plan_ledger',
      'plan_list',
      'plan_next',
      'plan_propose',
      'plan_revalidate',
      'plan_search',
      'plan_status',
      'plan_validate',
    ])
    // The help names every tool the server lists, so it cannot drift.
    const help = (await vaultplan(['mcp', '--help'])).stdout
    const tools = help.slice(help.indexOf('Tools:'), help.indexOf('Options:'))
    expect([...tools.matchAll(/plan_\w+/g)].map((match) => match[0]).sort()).toEqual(names)
    for (const tool of listed.tools) {
      expect(tool.description?.length ?? 0, tool.name).toBeLessThan(600)
      // An output schema is paid for on every turn; results carry their shape in structuredContent.
      expect(tool.outputSchema, tool.name).toBeUndefined()
    }
    // At most 3,000 o200k tokens on the wire for every tool, 2,600 for names, descriptions and input schemas: bounds in
    // characters at 4.2 a token, the ratio js-tiktoken measured on these 20 tools (11,754 characters, 2,824 tokens on the
    // wire; 10,404 and 2,486 for the essentials). `npm run bench` counts the tokens themselves.
    expect(JSON.stringify(listed.tools).length).toBeLessThan(3_000 * 4.2)
    const essentials = listed.tools.map((tool) => ({ name: tool.name, description: tool.description, inputSchema: tool.inputSchema }))
    expect(JSON.stringify(essentials).length).toBeLessThan(2_600 * 4.2)
  })

  it('says how to install the SDK when it is missing', async () => {
    // The built CLI with every dependency but the optional peer: what a user has who installed vaultplan alone.
    const bare = await tempDir()
    await cp(join(repository, 'dist'), join(bare, 'dist'), { recursive: true })
    await writeFile(join(bare, 'package.json'), JSON.stringify({ name: 'vaultplan', version: '0.0.0-test', type: 'module' }))
    await mkdir(join(bare, 'node_modules'))
    for (const name of await readdir(join(repository, 'node_modules'))) {
      if (name !== '@modelcontextprotocol' && name !== '.bin') await symlink(join(repository, 'node_modules', name), join(bare, 'node_modules', name))
    }
    const run = await new Promise<{ code: number | null; stderr: string }>((done) => {
      execFile(process.execPath, [join(bare, 'dist', 'cli.js'), 'mcp', '--root', bare], { cwd: bare }, (error, _stdout, stderr) =>
        done({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stderr }),
      )
    })
    expect(run).toEqual({ code: 2, stderr: expect.stringContaining('npm install @modelcontextprotocol/sdk') })
    expect(run.stderr).not.toContain('internal error')
  })

  it('checks its command line', async () => {
    expect(await vaultplan(['mcp', 'extra'])).toMatchObject({ code: 2, stderr: expect.stringContaining("'mcp' takes no arguments") })
    expect(await vaultplan(['mcp', '--http', 'nowhere'])).toMatchObject({ code: 2, stderr: expect.stringContaining('--http takes HOST:PORT') })
    expect(await vaultplan(['mcp', '--allowed-host', 'example.com'])).toMatchObject({
      code: 2,
      stderr: expect.stringContaining('--allowed-host is for --http'),
    })
    expect(await vaultplan(['mcp', '--root', '/nonexistent/folder'])).toMatchObject({ code: 2, stderr: expect.stringContaining('does not exist') })
    expect((await vaultplan(['mcp', '--help'])).stdout).toContain("Usage: vaultplan mcp [--root DIR] [--http HOST:PORT] [--check NAME='CMD'] [options]")
  })
})
