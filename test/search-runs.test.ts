import { appendFile, mkdir, readFile, rm, symlink, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { recordEntry, runPlan, searchRuns, type SearchHit } from 'vaultplan'
import { refreshRunIndex } from '../src/memory/run-index.js'
import { draftReview, linear } from './helpers/plans.js'
import { scriptedJudge } from './helpers/scripted.js'
import { read, tempDir, writeVault } from './helpers/vault.js'

/** Runs the linear plan a -> b -> c in `root/name`, each note answering with `outputs[id]`. */
async function runLinear(root: string, name: string, outputs: Record<string, string>, options: { fresh?: boolean } = {}): Promise<string> {
  const vault = join(root, name)
  if (!options.fresh) await writeVault(linear(), vault)
  await runPlan(vault, { query: `run ${name}`, fsync: false, ...options, work: async (step) => outputs[step.node.id] ?? `${step.node.id} done` })
  return runIdOf(vault)
}

async function runIdOf(vault: string): Promise<string> {
  return /^run: (\S+)$/m.exec(await read(vault, '00_plan-trace/trace.md'))![1]!
}

/** Three vaults under one root: alpha and beta ran once, gamma twice (its first run archived), plus a judged loop and a ledger. */
async function pastRuns() {
  const root = await tempDir()
  const alpha = await runLinear(root, 'alpha', { a: 'The vendor API answers 429 past its rate limit; back off for a minute.', b: 'Retry with jitter.' })
  const beta = await runLinear(root, 'teams/beta', { a: 'The venue holds 200 guests and has a stage.', c: 'Booked the venue for June.' })
  const gammaFirst = await runLinear(root, 'gamma', { b: 'The zebra migration happens in spring.' })
  const gammaSecond = await runLinear(root, 'gamma', { b: 'Nothing about animals this time.' }, { fresh: true })
  const loop = join(root, 'loop')
  await writeVault(draftReview(), loop)
  const judge = scriptedJudge((_prompt, call) => (call === 0 ? '1: NO\n2: YES\nThe changelog lacks a migration note.' : '1: YES\n2: NO\nReady.'))
  await runPlan(loop, { query: 'release', fsync: false, llm: judge, work: async (step) => `${step.node.id} visit ${step.visit}` })
  await recordEntry(join(root, 'alpha'), { kind: 'fact', text: 'The staging server is called hornbeam.', node: 'a', step: 1 })
  return { root, alpha, beta, gammaFirst, gammaSecond, loop: await runIdOf(loop) }
}

const brief = (hits: SearchHit[]) => hits.map(({ vault, kind, file, node, step }) => ({ vault, kind, file, node, step }))

describe('searchRuns', () => {
  it('finds the run that produced an output among several, with its run id, note, step and a snippet', async () => {
    const runs = await pastRuns()
    const hits = await searchRuns(runs.root, 'rate limit')
    expect(hits[0]).toEqual({
      vault: 'alpha',
      runId: runs.alpha,
      kind: 'output',
      node: 'a',
      step: 1,
      file: 'alpha/00_plan-trace/outputs/0001-a.md',
      snippet: 'The vendor API answers 429 past its rate limit; back off for a minute.',
      score: expect.any(Number),
    })
    expect(hits.every((hit) => hit.vault === 'alpha')).toBe(true)
    const venue = brief(await searchRuns(runs.root, 'venue')).sort((x, y) => (x.file < y.file ? -1 : 1))
    expect(venue).toEqual([
      { vault: 'teams/beta', kind: 'final', file: 'teams/beta/00_plan-trace/final.md', node: 'c', step: undefined },
      { vault: 'teams/beta', kind: 'output', file: 'teams/beta/00_plan-trace/outputs/0001-a.md', node: 'a', step: 1 },
      { vault: 'teams/beta', kind: 'output', file: 'teams/beta/00_plan-trace/outputs/0003-c.md', node: 'c', step: 3 },
    ])
  })

  it('searches archived runs, ledgers and the judges’ rationales too', async () => {
    const runs = await pastRuns()
    expect(await searchRuns(runs.root, 'zebra')).toEqual([
      expect.objectContaining({
        vault: 'gamma',
        runId: runs.gammaFirst,
        kind: 'output',
        node: 'b',
        step: 2,
        file: `gamma/00_plan-trace/archive/${runs.gammaFirst}/outputs/0002-b.md`,
      }),
    ])
    expect(await searchRuns(runs.root, 'hornbeam')).toEqual([
      {
        vault: 'alpha',
        runId: runs.alpha,
        kind: 'ledger',
        node: 'a',
        step: 1,
        file: 'alpha/00_plan-trace/ledger.md',
        snippet: 'F1: The staging server is called hornbeam.',
        score: expect.any(Number),
      },
    ])
    expect(await searchRuns(runs.root, 'changelog migration')).toEqual([
      {
        vault: 'loop',
        runId: runs.loop,
        kind: 'rationale',
        node: 'review',
        step: 2,
        file: 'loop/00_plan-trace/trace.md',
        snippet: '1: NO 2: YES The changelog lacks a migration note.',
        score: expect.any(Number),
      },
    ])
  })

  it('ranks best first and keeps to the limit', async () => {
    const runs = await pastRuns()
    const all = await searchRuns(runs.root, 'done', { limit: 50 })
    expect(all.length).toBeGreaterThan(3)
    expect(all.map((hit) => hit.score)).toEqual([...all.map((hit) => hit.score)].sort((a, b) => b - a))
    expect(await searchRuns(runs.root, 'done', { limit: 2 })).toEqual(all.slice(0, 2))
  })

  it('takes a query as words: quotes, dashes and operators are text, never syntax', async () => {
    const runs = await pastRuns()
    // Every word but the operators is in alpha's first output; `-` excludes nothing, `AND`/`OR` are words.
    const operators = await searchRuns(runs.root, '"rate-limit" AND -vendor OR (429) NOT backoff*')
    expect(operators[0]).toMatchObject({ vault: 'alpha', file: 'alpha/00_plan-trace/outputs/0001-a.md' })
    expect((await searchRuns(runs.root, '-zebra'))[0]).toMatchObject({ vault: 'gamma' })
    expect(await searchRuns(runs.root, '"" -- () * :')).toEqual([])
    // No field syntax either: `title:zebra` is the words `title` and `zebra`.
    expect(brief(await searchRuns(runs.root, 'title:zebra'))).toEqual([expect.objectContaining({ vault: 'gamma', kind: 'output', node: 'b' })])
  })

  it('rebuilds the index when it was deleted or is unreadable, and answers the same', async () => {
    const runs = await pastRuns()
    const first = await searchRuns(runs.root, 'zebra')
    const file = join(runs.root, '.vaultplan/search-index.json')
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ vaultplan: 'search-index', format: 1 })
    await rm(join(runs.root, '.vaultplan'), { recursive: true })
    expect((await refreshRunIndex(runs.root)).report).toMatchObject({ rebuilt: true, removed: 0 })
    expect(await searchRuns(runs.root, 'zebra')).toEqual(first)
    await writeFile(file, '{"vaultplan": "search-index", "format": 1, "engine": "minisearch@7", "folders": {}, "files": {}, "index": {"bad": true}}')
    expect((await refreshRunIndex(runs.root)).report.rebuilt).toBe(true)
    await writeFile(file, 'not json')
    expect(await searchRuns(runs.root, 'zebra')).toEqual(first)
    expect(JSON.parse(await readFile(file, 'utf8'))).toMatchObject({ vaultplan: 'search-index' })
  })

  it('updates the index with a new run’s files and a new ledger entry, reading only what changed', async () => {
    const runs = await pastRuns()
    expect(await searchRuns(runs.root, 'quokka')).toEqual([])
    expect((await refreshRunIndex(runs.root)).report).toMatchObject({ rebuilt: false, read: 0, removed: 0 })

    const delta = await runLinear(runs.root, 'delta', { c: 'A quokka was seen near the pier.' })
    // The new run's trace, three outputs and final answer; nothing of the other runs.
    expect((await refreshRunIndex(runs.root)).report).toMatchObject({ rebuilt: false, read: 5, removed: 0 })
    expect(brief(await searchRuns(runs.root, 'quokka')).sort((x, y) => (x.file < y.file ? -1 : 1))).toEqual([
      { vault: 'delta', kind: 'final', file: 'delta/00_plan-trace/final.md', node: 'c', step: undefined },
      { vault: 'delta', kind: 'output', file: 'delta/00_plan-trace/outputs/0003-c.md', node: 'c', step: 3 },
    ])
    expect((await searchRuns(runs.root, 'quokka'))[0]!.runId).toBe(delta)

    await recordEntry(join(runs.root, 'teams/beta'), { kind: 'decision', text: 'Serve lemonade.' })
    expect((await refreshRunIndex(runs.root)).report).toMatchObject({ read: 1, removed: 0 })
    expect(await searchRuns(runs.root, 'lemonade')).toEqual([expect.objectContaining({ vault: 'teams/beta', kind: 'ledger', snippet: 'D1: Serve lemonade.' })])

    // An append leaves its folder's stamp alone (no lock taken here): the ledger is checked by its own stamp.
    const other = await writeVault(linear())
    await recordEntry(other, { kind: 'assumption', text: 'first' })
    const before = await read(other, '00_plan-trace/ledger.md')
    await recordEntry(other, { kind: 'assumption', text: 'Gulls nest on the roof.' })
    await appendFile(join(runs.root, 'teams/beta/00_plan-trace/ledger.md'), (await read(other, '00_plan-trace/ledger.md')).slice(before.length))
    expect(await searchRuns(runs.root, 'gulls')).toEqual([
      expect.objectContaining({ vault: 'teams/beta', kind: 'ledger', snippet: 'A2: Gulls nest on the roof.' }),
    ])

    // A fresh start moves alpha's run into its archive: the hits follow the files.
    await runLinear(runs.root, 'alpha', { a: 'Nothing about limits now.' }, { fresh: true })
    expect((await searchRuns(runs.root, 'vendor'))[0]).toMatchObject({
      vault: 'alpha',
      runId: runs.alpha,
      file: `alpha/00_plan-trace/archive/${runs.alpha}/outputs/0001-a.md`,
    })

    await rm(join(runs.root, 'gamma'), { recursive: true })
    expect((await refreshRunIndex(runs.root)).report.removed).toBeGreaterThan(0)
    expect(await searchRuns(runs.root, 'zebra')).toEqual([])
  })

  it('answers searches racing in one process alike', async () => {
    const runs = await pastRuns()
    const race = () => Promise.all([searchRuns(runs.root, 'quokka'), searchRuns(runs.root, 'quokka'), searchRuns(runs.root, 'quokka')])
    expect(await race()).toEqual([[], [], []])
    // The loaded index has a new run to take in: three refreshes at once must not add its documents three times.
    await runLinear(runs.root, 'delta', { c: 'A quokka was seen near the pier.' })
    const [first, ...others] = await race()
    expect(first).toHaveLength(2)
    expect(others).toEqual([first, first])
  })

  it('leaves out dot-folders, node_modules and anything behind a symlink', async () => {
    const root = await tempDir()
    const outside = await tempDir()
    await runLinear(outside, 'away', { a: 'A narwhal outside the root.' })
    await runLinear(root, '.hidden', { a: 'A narwhal in a dot-folder.' })
    await runLinear(root, 'node_modules/pkg', { a: 'A narwhal in node_modules.' })
    await symlink(join(outside, 'away'), join(root, 'linked'))
    await mkdir(join(root, 'real'), { recursive: true })
    await symlink(join(outside, 'away', '00_plan-trace'), join(root, 'real', '00_plan-trace'))
    await runLinear(root, 'home', { a: 'Nothing to see.' })
    expect(await searchRuns(root, 'narwhal')).toEqual([])
    expect((await searchRuns(root, 'nothing'))[0]).toMatchObject({ vault: 'home' })
  })

  it('searches a single vault as the root, and a root the cache cannot be written into', async () => {
    const runs = await pastRuns()
    expect(await searchRuns(join(runs.root, 'alpha'), 'vendor')).toEqual([
      expect.objectContaining({ vault: '.', file: '00_plan-trace/outputs/0001-a.md', runId: runs.alpha }),
    ])
    await writeFile(join(runs.root, 'teams', '.vaultplan'), 'a file where the cache folder would go')
    expect(await searchRuns(join(runs.root, 'teams'), 'venue')).toHaveLength(3)
    expect(await searchRuns(join(runs.root, 'teams'), 'stage')).toEqual([expect.objectContaining({ vault: 'beta', node: 'a' })])
    expect((await refreshRunIndex(join(runs.root, 'teams'))).report).toMatchObject({ rebuilt: false, read: 0 })
  })

  it('throws a TypeError naming a bad argument', async () => {
    const root = await tempDir()
    await expect(searchRuns(join(root, 'missing'), 'x')).rejects.toThrow(TypeError)
    await expect(searchRuns(root, 'x', { limit: 0 })).rejects.toThrow('Expected `limit` to be an integer from 1 up, got `0`')
    // @ts-expect-error not a string
    await expect(searchRuns(root, 42)).rejects.toThrow('Expected `query` to be a string of words, got `42`')
  })
})
