import { existsSync } from 'node:fs'
import { mkdir, readFile } from 'node:fs/promises'
import { basename, dirname, join } from 'node:path'
import { beforeAll, describe, expect, test } from 'vitest'
import { decide, runPlan, type RunStatus } from 'vaultplan'
import { draftReview, humanReview } from './helpers/plans.js'
import { noJudge, reviewJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, note, tempDir, writeVault } from './helpers/vault.js'
import { canvasProblems } from './helpers/json-canvas.js'
import { parseMermaid, parseSvg, renderDot } from './helpers/renderers.js'
import { bin, vaultplan } from './helpers/cli.js'

const query = 'Announce the release'

/** A vault in a temporary folder, and the binary run from that folder so paths show as `plan`. */
async function vaultIn(files: Record<string, string>): Promise<{ dir: string; cwd: string; name: string }> {
  const dir = await writeVault(files)
  return { dir, cwd: dirname(dir), name: basename(dir) }
}

/** The mermaid block of a note. */
function mermaidBlock(text: string): string {
  const match = /```mermaid\n([\s\S]*?)```/.exec(text)
  if (!match) throw new Error(`no mermaid block in:\n${text}`)
  return match[1]!
}

const RUN_LINE = /^run \d{8}-\d{6}-[\da-f]{6}, /m

beforeAll(() => {
  if (!existsSync(bin)) throw new Error(`\`${bin}\` is missing; run \`npm run build\` first (\`npm test\` does)`)
})

describe('vaultplan status', () => {
  test('fresh: a table of the notes and how to start, exit 0', async () => {
    const { cwd, name } = await vaultIn(draftReview())
    expect(await vaultplan(['status', name], { cwd })).toEqual({
      code: 0,
      stdout: [
        `${name}: fresh, no run yet (starts at draft)`,
        '',
        '   NODE    STATUS   VISITS',
        '>  draft   pending  0/3     start',
        '   review  pending  0/3',
        '   send    pending  0/3     terminal',
        '',
        `Next: Start the run: \`vaultplan run ${name} --query "..."\`. It starts at \`draft\`.`,
        '',
      ].join('\n'),
      stderr: '',
    })
  })

  test('interrupted: where the run goes on and the command that resumes it', async () => {
    const { dir, cwd, name } = await vaultIn(draftReview())
    const work = scriptedWorker((step) => {
      if (step.node.id === 'review') throw new Error('the network is down')
    })
    await expect(runPlan(dir, { query, work, llm: noJudge(), fsync: false })).rejects.toThrow('the network is down')

    const { code, stdout } = await vaultplan(['status', name], { cwd })
    expect(code).toBe(0)
    expect(stdout.replace(RUN_LINE, 'run <id>, ')).toBe(
      [
        `${name}: ready at review (visit 1, step 2)`,
        'run <id>, 1 step of 50, query: "Announce the release"',
        '',
        '   NODE    STATUS   VISITS',
        '   draft   done     1/3     start',
        '>  review  active   1/3',
        '   send    pending  0/3     terminal',
        '',
        'Last hops:',
        '  step 1  draft (visit 1)  -> review  [unconditional]',
        '',
        `Next: Resume the run: \`vaultplan run ${name}\` (it goes on at \`review\`, visit 1).`,
        '',
      ].join('\n'),
    )
  })

  test('waiting: the choices and the note to tick one in; once one is ticked, the run is ready to go on along it', async () => {
    const files = {
      ...draftReview(),
      'review.md': note({ front: { judge: 'human' }, title: 'Review', next: ['[ ] approved -> [[send]]', '[ ] needs revision -> [[draft]]'] }),
    }
    const { dir, cwd, name } = await vaultIn(files)
    await runPlan(dir, { query, work: scriptedWorker(), llm: noJudge(), fsync: false })
    const { code, stdout } = await vaultplan(['status', name], { cwd })
    expect(code).toBe(0)
    expect(stdout).toContain(`${name}: waiting for a person at review\n`)
    expect(stdout).toContain(`Waiting for a person:\n  review in ${name}/review.md: choices approved, needs revision\n`)
    expect(stdout).toContain(
      `Next: Tick one box under \`## Next\` in \`${name}/review.md\` (write under \`## Feedback\` if you like), then \`vaultplan run ${name}\`.\n`,
    )
    await edit(dir, 'review.md', (text) => text.replace('- [ ] approved', '- [x] approved'))
    const ticked = await vaultplan(['status', name], { cwd })
    expect(ticked.stdout).toContain(`${name}: ready at send (visit 1, step 3)\n`)
    expect(ticked.stdout).toContain(`Next: Resume the run: \`vaultplan run ${name}\` (it goes on at \`send\`, visit 1).\n`)
  })

  test('a decision along one of two boxes ticked by hand: its hop names the box it unticked', async () => {
    const { dir, cwd, name } = await vaultIn(humanReview())
    const options = { query, work: scriptedWorker(), llm: noJudge(), fsync: false }
    await runPlan(dir, options)
    await edit(dir, 'review.md', (text) => text.replace('- [ ] approved', '- [x] approved').replace('- [ ] needs revision', '- [x] needs revision'))
    await decide(dir, 'review', { edge: 'approved' })
    await runPlan(dir, options)

    const { stdout } = await vaultplan(['status', name], { cwd })
    expect(stdout).toContain('  step 2  review (visit 1)  approved -> send  [human; unticked needs revision]\n')
  })

  test('stopped: the budget, the reason and where to raise it', async () => {
    const { dir, cwd, name } = await vaultIn(draftReview({ reviewVisits: 1 }))
    const result = await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge(), fsync: false })

    const { code, stdout } = await vaultplan(['status', name], { cwd })
    expect(code).toBe(0)
    expect(stdout).toContain(`${name}: stopped by max_visits at review (visit 2 refused)\n`)
    expect(stdout).toContain('>  review  done     1/1\n')
    expect(stdout).toContain(`\n${result.reason}\n`)
    expect(stdout).toContain(`Next: Raise \`max_visits\` in \`${name}/review.md\` above 1 (or change the plan), then \`vaultplan run ${name}\`.\n`)
  })

  test('completed, as JSON: the whole status object', async () => {
    const { dir, cwd, name } = await vaultIn(draftReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge('review v1'), fsync: false })

    const { code, stdout, stderr } = await vaultplan(['status', name, '--json'], { cwd })
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    const status = JSON.parse(stdout) as RunStatus
    expect(status).toMatchObject({ vault: dir, phase: 'completed', result: { node: 'send', output: 'send v1' }, steps: 3, run: { query } })
    expect(status.hops.map((hop) => `${hop.node} ${hop.decidedBy}`)).toEqual(['draft unconditional', 'review llm', 'send terminal'])

    const text = await vaultplan(['status', name], { cwd })
    expect(text.stdout).toContain('Final output:\n  send v1\n')
  })

  test('invalid: the diagnostics with their places, exit 1', async () => {
    const { cwd, name } = await vaultIn({ ...draftReview(), 'send.md': note({ front: { max_visits: 0 }, title: 'Send' }) })
    const { code, stdout } = await vaultplan(['status', name], { cwd })
    expect(code).toBe(1)
    expect(stdout).toContain(`${name}: invalid plan, 1 error\n`)
    expect(stdout).toMatch(new RegExp(`^${name}/send\\.md:2:\\d+ error invalid-frontmatter `, 'm'))
  })

  test('bad usage and a missing vault: exit 2 with one line and the usage', async () => {
    expect(await vaultplan(['status'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "vaultplan: missing the vault folder\nUsage: vaultplan status <vault> [--json]\nRun 'vaultplan status --help' for details.\n",
    })
    expect(await vaultplan(['status', 'no/such/vault'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "vaultplan: `no/such/vault` does not exist; pass the folder that holds the plan's notes\n",
    })
    expect((await vaultplan(['status', '.', '--yaml'])).code).toBe(2)
    expect((await vaultplan(['help', 'status'])).stdout).toMatch(/^Usage: vaultplan status <vault> \[--json\]\n/)
  })
})

describe('vaultplan graph', () => {
  test('mermaid (the default) that mermaid parses, with the run state', async () => {
    const { dir, cwd, name } = await vaultIn(draftReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge('review v2'), fsync: false })

    const { code, stdout, stderr } = await vaultplan(['graph', name], { cwd })
    expect({ code, stderr }).toEqual({ code: 0, stderr: '' })
    const parsed = await parseMermaid(stdout)
    expect(parsed.vertices.map((vertex) => [vertex.text, vertex.classes])).toEqual([
      ['draft (2/3)', ['done']],
      ['review (2/3)', ['done']],
      ['send (1/3)', ['done']],
    ])
  })

  test('--format dot that Graphviz renders', async () => {
    const { cwd, name } = await vaultIn(draftReview())
    const { code, stdout } = await vaultplan(['graph', name, '--format', 'dot'], { cwd })
    expect(code).toBe(0)
    const rendered = await renderDot(stdout)
    expect(rendered.errors).toEqual([])
    expect((await parseSvg(rendered.svg!)).nodes).toEqual(['entry', 'n0', 'n1', 'n2'])
  })

  test('--format svg --write: an SVG drawn in-process, in its own file beside the mermaid note, which it leaves as it was', async () => {
    const { dir, cwd, name } = await vaultIn(draftReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge('review v1'), fsync: false })
    await vaultplan(['graph', name, '--write'], { cwd })
    const mermaid = await readFile(join(dir, '00_plan-trace', 'plan-graph.md'), 'utf8')
    const printed = await vaultplan(['graph', name, '--format', 'svg'], { cwd })
    expect({ code: printed.code, stderr: printed.stderr }).toEqual({ code: 0, stderr: '' })
    expect(await vaultplan(['graph', name, '--format', 'svg', '--write'], { cwd })).toEqual({
      code: 0,
      stdout: `wrote ${name}/00_plan-trace/plan-graph.svg\n`,
      stderr: '',
    })
    const svg = await readFile(join(dir, '00_plan-trace', 'plan-graph.svg'), 'utf8')
    expect(svg).toBe(printed.stdout)
    const picture = await parseSvg(svg)
    expect(picture).toMatchObject({ root: 'svg', namespace: 'http://www.w3.org/2000/svg' })
    expect(picture.nodes.filter((node) => !node.startsWith('legend_'))).toEqual(['entry', 'n0', 'n1', 'n2'])
    expect(
      picture.texts
        .map((text) => text.trim())
        .filter((text) => /[/]|approved|revision/.test(text))
        .sort(),
    ).toEqual(['approved', 'draft (1/3)', 'needs revision', 'review (1/3)', 'send (1/3)'])
    // The mermaid note is still the mermaid picture.
    expect(await readFile(join(dir, '00_plan-trace', 'plan-graph.md'), 'utf8')).toBe(mermaid)
  })

  test('the SVG has a legend (start, terminal, a person decides, the status colours), and a note a person decides is a hexagon', async () => {
    const { dir, cwd, name } = await vaultIn(humanReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge('review v1'), fsync: false })
    const { stdout } = await vaultplan(['graph', name, '--format', 'svg'], { cwd })
    const picture = await parseSvg(stdout)
    expect(picture.texts.map((text) => text.trim())).toEqual(
      expect.arrayContaining(['Legend', 'start', 'terminal', 'a person decides', 'pending', 'active', 'done', 'waiting']),
    )
    // The waiting review is drawn cyan, as the legend and the graph note say.
    expect(picture.fills).toContain('#cffafe')
    const dot = (await vaultplan(['graph', name, '--format', 'dot'], { cwd })).stdout
    expect(dot).toMatch(/n1 \[label="review \(1\/\d+\)".*shape=hexagon/)
    await vaultplan(['graph', name, '--write'], { cwd })
    expect(await readFile(join(dir, '00_plan-trace', 'plan-graph.md'), 'utf8')).toContain('Colours: grey pending, yellow active, green done, cyan waiting;')
  })

  test('--format canvas --write: a JSON Canvas of file cards, paths from the Obsidian vault that holds the plan', async () => {
    const cwd = await tempDir()
    const name = 'plan'
    const dir = await writeVault(draftReview(), join(cwd, name))
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge('review v2'), fsync: false })
    expect(await vaultplan(['graph', name, '--format', 'canvas', '--write'], { cwd })).toEqual({
      code: 0,
      stdout: `wrote ${name}/00_plan-trace/plan.canvas\n`,
      stderr: '',
    })
    const canvas = JSON.parse(await readFile(join(dir, '00_plan-trace', 'plan.canvas'), 'utf8')) as { nodes: { file?: string; color?: string }[] }
    expect(canvasProblems(canvas)).toEqual([])
    expect(canvas.nodes.map((card) => [card.file, card.color])).toEqual([
      ['draft.md', '4'],
      ['review.md', '4'],
      ['send.md', '4'],
    ])
    // The plan as a folder of a bigger Obsidian vault: the cards name the notes from that vault's root.
    await mkdir(join(cwd, '.obsidian'))
    const nested = JSON.parse((await vaultplan(['graph', name, '--format', 'canvas'], { cwd })).stdout) as { nodes: { file?: string }[] }
    expect(nested.nodes.map((card) => card.file)).toEqual([`${name}/draft.md`, `${name}/review.md`, `${name}/send.md`])
  })

  test('--write: a note with a mermaid block, not a node of the plan', async () => {
    const { dir, cwd, name } = await vaultIn(draftReview())
    await runPlan(dir, { query, work: scriptedWorker(), llm: reviewJudge('review v1'), fsync: false })

    expect(await vaultplan(['graph', name, '--write'], { cwd })).toEqual({ code: 0, stdout: `wrote ${name}/00_plan-trace/plan-graph.md\n`, stderr: '' })
    const written = await readFile(join(dir, '00_plan-trace', 'plan-graph.md'), 'utf8')
    expect(written).toMatch(/^---\nvaultplan: plan-graph\nwritten: \S+\n---\n# Plan graph\n/)
    const block = mermaidBlock(written)
    expect(block).toBe((await vaultplan(['graph', name], { cwd })).stdout)
    expect((await parseMermaid(block)).vertices.map((vertex) => vertex.text)).toEqual(['draft (1/3)', 'review (1/3)', 'send (1/3)'])
    // The note sits in the trace folder: the plan still has its three notes and its run.
    expect(JSON.parse((await vaultplan(['status', name, '--json'], { cwd })).stdout)).toMatchObject({
      phase: 'completed',
      nodes: [{ id: 'draft' }, { id: 'review' }, { id: 'send' }],
    })
  })

  test('an invalid plan is pictured, its missing note dashed, with a note on stderr', async () => {
    const { cwd, name } = await vaultIn({
      ...draftReview(),
      'review.md': note({ title: 'Review', next: ['approved -> [[sned]]', 'needs revision -> [[draft]]'] }),
    })
    const { code, stdout, stderr } = await vaultplan(['graph', name], { cwd })
    expect(code).toBe(0)
    expect(stderr).toBe(`vaultplan: the plan has 1 error; \`vaultplan validate ${name}\` lists them\n`)
    expect((await parseMermaid(stdout)).vertices.at(-1)).toEqual({ id: 'm0', text: 'sned (missing)', type: 'square', classes: ['missing'] })
  })

  test('bad usage: exit 2', async () => {
    const { cwd, name } = await vaultIn(draftReview())
    expect(await vaultplan(['graph', name, '--format', 'png'], { cwd })).toEqual({
      code: 2,
      stdout: '',
      stderr:
        "vaultplan: --format takes mermaid, dot, svg, canvas, got 'png'\nUsage: vaultplan graph <vault> [--format mermaid|dot|svg|canvas] [--write]\nRun 'vaultplan graph --help' for details.\n",
    })
    expect((await vaultplan(['graph', name, '--write', '--format', 'dot'], { cwd })).stderr).toMatch(
      /^vaultplan: --write writes mermaid, svg or canvas for Obsidian; DOT is printed only\n/,
    )
    expect((await vaultplan(['graph'], { cwd })).code).toBe(2)
  })
})
