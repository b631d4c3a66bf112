import { mkdir, readdir, readFile, stat, symlink, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, test } from 'vitest'
import MiniSearch from 'minisearch'
import { decide, forkRun, proposePlan, runPlan, RunStateError, searchRuns } from 'vaultplan'
import { draftReview, linear } from './helpers/plans.js'
import { reviewJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, readTree, tempDir, writeVault } from './helpers/vault.js'

/*
 * Paths that come out of files, not arguments (issue 26): a proposal's
 * `notes:`, a trace hop's `output`, a search index's documents. Each goes
 * through the one path gate (src/vault/path-gate.ts) before a file is read,
 * written or moved; test/path-gate.property.test.ts fuzzes the same fields.
 */

const QUERY = 'Write a post about tide pools'
const V1 = '## research\ntype: start\nFind three sources on tide pools.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft.\n'
const V2 = '## outline\ntype: start\nOutline the post first.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft from the outline.\n'
const DIARY = '# Diary\n\nThe combination is 4-8-15.\n'

function planner() {
  return scriptedJudge((_prompt, call) => [V1, V2][call] ?? V2)
}

/** A proposal in `<jail>/post`, a diary beside it (outside the vault), and the planner. */
async function proposalBesideDiary() {
  const jail = await tempDir()
  await writeFile(join(jail, 'diary.md'), DIARY)
  const llm = planner()
  const vault = await proposePlan(QUERY, { into: join(jail, 'post'), llm, fsync: false })
  await savedAMinuteAgo(vault)
  return { jail, vault, llm }
}

/** Marks the proposal as saved a minute ago: a note saved a moment ago is watched for a second before it is rewritten, which proves nothing here. */
async function savedAMinuteAgo(vault: string): Promise<void> {
  const minuteAgo = new Date(Date.now() - 60_000)
  await utimes(join(vault, '00_plan-trace/proposal.md'), minuteAgo, minuteAgo)
}

describe('a proposal revised', () => {
  test('moves and sends only notes inside the vault: `..`, absolute paths and links out in `notes:` are left where they are', async () => {
    const { jail, vault, llm } = await proposalBesideDiary()
    await symlink(join(jail, 'diary.md'), join(vault, 'linked.md'))
    await edit(vault, '00_plan-trace/proposal.md', (text) =>
      text.replace(
        'notes: ["research.md","draft.md"]',
        `notes: ["research.md","draft.md","../diary.md",${JSON.stringify(join(jail, 'diary.md'))},"linked.md"]`,
      ),
    )
    await savedAMinuteAgo(vault)
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
    expect(await runPlan(vault, { work: scriptedWorker(), llm, fsync: false })).toMatchObject({ status: 'waiting' })
    // The diary stays beside the vault, unread by the planner; the link is no note of the proposal either.
    expect(await readFile(join(jail, 'diary.md'), 'utf8')).toBe(DIARY)
    expect(llm.calls[1]!.prompt).toContain('Find three sources on tide pools.')
    expect(llm.calls[1]!.prompt).not.toContain('4-8-15')
    expect(Object.keys(await readTree(join(vault, '00_plan-trace/proposals/v1')))).toEqual(['draft.md', 'proposal.md', 'research.md'])
  })

  test('refuses a symlinked `00_plan-trace/proposals`: neither the old notes nor the archived proposal land outside the vault', async () => {
    const { jail, vault, llm } = await proposalBesideDiary()
    await mkdir(join(jail, 'elsewhere'))
    await symlink(join(jail, 'elsewhere'), join(vault, '00_plan-trace/proposals'))
    await decide(vault, 'proposal', { edge: 'revise', feedback: 'Start with an outline.' })
    await expect(runPlan(vault, { work: scriptedWorker(), llm, fsync: false })).rejects.toSatisfy(
      (error) => error instanceof RunStateError && error.code === 'trace-outside-vault',
    )
    expect(await readdir(join(jail, 'elsewhere'))).toEqual([])
    // Nothing moved: version 1's notes are where they were.
    expect((await readdir(vault)).sort()).toEqual(['00_plan-trace', 'draft.md', 'research.md'])
  })
})

describe('a fork', () => {
  test("refuses a trace whose hop names an `output` outside the source's trace folder: nothing is copied from or to outside", async () => {
    const jail = await tempDir()
    const source = await writeVault(draftReview(), join(jail, 'runs/source'))
    await runPlan(source, { query: 'q', work: scriptedWorker(), llm: reviewJudge('review v1'), fsync: false })
    await writeFile(join(jail, 'runs/secret.md'), DIARY)
    await edit(source, '00_plan-trace/trace.md', (text) => text.replace('"output":"outputs/0001-draft.md"', '"output":"../../secret.md"'))
    const into = join(jail, 'forks/fork')
    await expect(forkRun(source, { step: 2, into, fsync: false })).rejects.toSatisfy(
      (error) => error instanceof RunStateError && error.code === 'trace-outside-vault',
    )
    // Outside the source and the fork (and its unfinished copy), the jail holds what it held, and the secret is nowhere else.
    const tree = await readTree(jail)
    expect(Object.keys(tree).filter((file) => !/^(runs\/source|forks\/fork[^/]*)\//.test(file))).toEqual(['runs/secret.md'])
    expect(Object.keys(tree).filter((file) => tree[file]!.includes('4-8-15'))).toEqual(['runs/secret.md'])
  })
})

/** A root with one run (vault `v`, whose note `a` answered about tide pools) and a diary beside the root. */
async function searchedRoot() {
  const jail = await tempDir()
  const root = join(jail, 'root')
  await writeVault(linear(), join(root, 'v'))
  await runPlan(join(root, 'v'), { query: 'q', fsync: false, work: async (step) => `${step.node.id}: tide pools at dawn` })
  await writeFile(join(jail, 'diary.md'), `---\nx: 1\n---\n${DIARY}tide pools are where I hid it.\n`)
  return { jail, root, index: join(root, '.vaultplan/search-index.json') }
}

describe('the search index', () => {
  test('drops a planted document whose `file` leads outside the root: no search returns its text', async () => {
    const { root, index } = await searchedRoot()
    const clean = await searchRuns(root, 'tide pools')
    const saved = JSON.parse(await readFile(index, 'utf8'))
    // The engine as the index writes it, with one more document: a run file of nobody's, outside the root.
    const options = { fields: ['text'], storeFields: ['kind', 'vault', 'runId', 'file', 'node', 'step', 'shown'], autoVacuum: false }
    const engine = MiniSearch.loadJS(saved.index, options)
    engine.add({ id: '../diary.md#0', text: 'tide pools combination', kind: 'output', vault: 'v', runId: 'r', file: '../diary.md', node: 'a', step: 9 })
    await writeFile(index, JSON.stringify({ ...saved, index: engine.toJSON() }))
    const hits = await searchRuns(root, 'tide pools')
    expect(JSON.stringify(hits)).not.toContain('4-8-15')
    expect(hits).toEqual(clean)
  })

  test('is rebuilt when it is JSON of the wrong shape, instead of failing every search', async () => {
    const { root, index } = await searchedRoot()
    const clean = await searchRuns(root, 'tide pools')
    const saved = JSON.parse(await readFile(index, 'utf8'))
    const folder = await stat(root)
    // The root's entry with its real stamp (so it is trusted) and no list of files.
    await writeFile(index, JSON.stringify({ ...saved, folders: { ...saved.folders, '': { m: folder.mtimeMs, i: folder.ino, dirs: ['v'], files: null } } }))
    expect(await searchRuns(root, 'tide pools')).toEqual(clean)
    expect(JSON.parse(await readFile(index, 'utf8')).folders['']).toMatchObject({ dirs: ['v'], files: [] })
  })
})

describe("a run's archive", () => {
  test.each(['.', '..', '', '.hidden'])('keeps an old run whose trace names its run id `%s` in a folder of its own under archive/', async (id) => {
    const vault = await writeVault(linear())
    const work = async (step: { node: { id: string } }) => `${step.node.id} of this run`
    await runPlan(vault, { query: 'first', fsync: false, work })
    await edit(vault, '00_plan-trace/trace.md', (text) => text.replace(/^run: .*$/m, `run: ${JSON.stringify(id)}`))
    expect(await runPlan(vault, { query: 'second', fresh: true, fsync: false, work })).toMatchObject({ status: 'completed' })
    // The first trace is kept whole, one folder down, in a folder the search index reads (no dot-folder).
    const kept = Object.entries(await readTree(join(vault, '00_plan-trace/archive'))).filter(([file]) => file.endsWith('trace.md'))
    expect(kept.map(([file, text]) => [/^[^./][^/]*\/trace\.md$/.test(file), /^query: (.*)$/m.exec(text)?.[1]])).toEqual([[true, 'first']])
  })
})

describe('a run resumed', () => {
  test("hands its worker only outputs from its own trace folder: a hop's `output` naming another vault's output note is not read", async () => {
    const jail = await tempDir()
    const other = await writeVault(linear(), join(jail, 'other'))
    await runPlan(other, { query: 'q', fsync: false, work: async (step) => `${step.node.id}: ${DIARY}` })
    const vault = await writeVault(linear(), join(jail, 'v'))
    await runPlan(vault, { query: 'q', fsync: false, maxSteps: 1, work: async (step) => `${step.node.id} here` })
    await edit(vault, '00_plan-trace/trace.md', (text) =>
      text.replace('"output":"outputs/0001-a.md"', '"output":"../../other/00_plan-trace/outputs/0001-a.md"'),
    )
    const work = scriptedWorker()
    await runPlan(vault, { fsync: false, work, maxSteps: 50 })
    expect(work.calls.map((call) => call.node)).toEqual(['b', 'c'])
    expect(JSON.stringify(work.calls)).not.toContain('4-8-15')
  })
})

describe("a vault's note journal, replayed after a restart", () => {
  test('writes only files inside the vault: an entry naming a file outside it is not restored', async () => {
    const jail = await tempDir()
    const vault = await writeVault(linear(), join(jail, 'v'))
    // Empty files read as torn: a replay would give them the journaled text.
    await writeFile(join(jail, 'authorized_keys'), '')
    await writeFile(join(jail, 'output.md'), '')
    const entries = [
      { k: 'note', f: '../authorized_keys', t: 'ssh-ed25519 AAAA planted\n' },
      { k: 'file', f: '00_plan-trace/../../output.md', t: 'planted\n' },
    ]
    // No boot entry: written before this machine started, so the notes are repaired from it.
    await mkdir(join(vault, '00_plan-trace'))
    await writeFile(join(vault, '00_plan-trace/.journal'), entries.map((entry) => `${JSON.stringify(entry)}\n`).join(''))
    // The journal is kept when every write is flushed.
    await runPlan(vault, { query: 'q', work: async (step) => `${step.node.id} done` })
    expect(await readFile(join(jail, 'authorized_keys'), 'utf8')).toBe('')
    expect(await readFile(join(jail, 'output.md'), 'utf8')).toBe('')
  })
})
