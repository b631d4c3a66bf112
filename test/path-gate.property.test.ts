import { lstat, mkdir, readdir, readFile, readlink, realpath, rm, symlink, utimes, writeFile } from 'node:fs/promises'
import { join, relative } from 'node:path'
import fc from 'fast-check'
import MiniSearch from 'minisearch'
import { describe, expect, it } from 'vitest'
import { decide, forkRun, proposePlan, runPlan, searchRuns } from 'vaultplan'
import { isInside } from '../src/vault/fs-atomic.js'
import { confine, confineSync, PathRefusal, type GateMemo } from '../src/vault/path-gate.js'
import { draftReview, linear } from './helpers/plans.js'
import { reviewJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, tempDir, writeVault } from './helpers/vault.js'

/*
 * Paths that come out of files (issue 26), fuzzed: a proposal's `notes:`, a
 * trace hop's `output` (forked, and resumed), a note journal's entries and
 * a search index's documents are filled with `..`, absolute paths, symlinks
 * out, links to nothing and aliases inside a jail folder. Whatever the
 * operation answers, nothing outside the jail is read (its secret shows up
 * nowhere), written, created or moved.
 */

const SECRET = 'the-secret-outside-the-jail'
const settings = { seed: Number(process.env.PATH_GATE_SEED ?? 26), numRuns: Number(process.env.PATH_GATE_RUNS ?? 10) }

/** A folder holding the jail, and beside the jail the things it must never reach. */
async function world(): Promise<{ top: string; jail: string; outside: string }> {
  const top = await realpath(await tempDir())
  const outside = join(top, 'outside')
  await mkdir(join(outside, 'folder'), { recursive: true })
  // Shaped as output notes, so that a reader of outputs would take them.
  const note = `---\nvaultplan: output\nnode: a\nvisit: 1\nstep: 1\nrun: r\n---\n${SECRET} tide pools\n`
  await writeFile(join(outside, 'secret.md'), note)
  await writeFile(join(outside, 'folder/0001-draft.md'), note)
  // Empty files read as torn: a journal replay would fill them.
  await writeFile(join(outside, 'empty.md'), '')
  await writeFile(join(outside, 'folder/empty.md'), '')
  const jail = join(top, 'jail')
  await mkdir(jail)
  return { top, jail, outside }
}

/** Links planted in `folder` of the jail: out of it (to a file, to a folder, by absolute path), to nothing, and an alias inside. */
async function plantLinks(folder: string, outside: string): Promise<void> {
  await mkdir(folder, { recursive: true })
  await symlink(join(outside, 'secret.md'), join(folder, 'secret-link.md'))
  await symlink(relative(folder, join(outside, 'folder')), join(folder, 'out'))
  await symlink(join(outside, 'nothing-yet.md'), join(folder, 'dangling.md'))
  await symlink('.', join(folder, 'alias'))
}

/**
 * A path as a hostile file may hold it: some `..` (often exactly `depth`,
 * which climbs from the field's folder to beside the jail), a few of the
 * planted links and folders, then a name; with `/` or `\\` between; or an
 * absolute path outside.
 */
function hostilePath(depth: number, names: string[], outside: string): fc.Arbitrary<string> {
  const ups = fc.oneof(fc.constant(0), fc.constant(depth), fc.integer({ min: 0, max: depth + 1 })).map((count) => Array<string>(count).fill('..'))
  const middle = fc.oneof(
    fc.constant<string[]>([]),
    fc.constantFrom(['outside'], ['out'], ['alias'], ['alias', 'out'], ['outside', 'folder']),
    fc.array(fc.constantFrom('out', 'alias', 'outside', 'folder', '.', ''), { maxLength: 3 }),
  )
  const name = fc.constantFrom('secret.md', 'secret-link.md', 'dangling.md', '0001-draft.md', 'empty.md', ...names)
  return fc.oneof(
    { weight: 4, arbitrary: fc.tuple(ups, middle, name, fc.boolean()).map(([up, mid, last, back]) => [...up, ...mid, last].join(back ? '\\' : '/')) },
    {
      weight: 1,
      arbitrary: fc.constantFrom(join(outside, 'secret.md'), join(outside, 'folder/0001-draft.md'), `${outside}/folder/../secret.md`, 'C:\\secret.md'),
    },
  )
}

/** Every entry under `folder` but the jail: path -> file text, link target or `dir`, links never followed. */
async function snapshot(folder: string, jail: string): Promise<Record<string, string>> {
  const found: Record<string, string> = {}
  const walk = async (dir: string): Promise<void> => {
    for (const name of await readdir(dir)) {
      const path = join(dir, name)
      if (path === jail) continue
      const info = await lstat(path)
      const key = relative(folder, path)
      if (info.isSymbolicLink()) found[key] = `-> ${await readlink(path)}`
      else if (info.isDirectory()) {
        found[key] = 'dir'
        await walk(path)
      } else found[key] = `${info.mtimeMs} ${await readFile(path, 'utf8')}`
    }
  }
  await walk(folder)
  return found
}

/** The text of every file in the jail, links never followed: where a read secret would have been written. */
async function jailTexts(jail: string): Promise<string> {
  const texts: string[] = []
  const walk = async (dir: string): Promise<void> => {
    for (const name of await readdir(dir)) {
      const info = await lstat(join(dir, name))
      if (info.isDirectory()) await walk(join(dir, name))
      else if (info.isFile()) texts.push(await readFile(join(dir, name), 'utf8'))
    }
  }
  await walk(jail)
  return texts.join('\n')
}

/** Runs `operation`, whose failures are fine, and checks that the world outside the jail is as it was and the secret appears nowhere. */
async function confined(top: string, jail: string, operation: () => Promise<unknown>): Promise<void> {
  const before = await snapshot(top, jail)
  const answer = await operation().then(
    (value) => JSON.stringify(value) ?? '',
    (error: Error) => error.message,
  )
  expect(await snapshot(top, jail)).toEqual(before)
  expect(answer).not.toContain(SECRET)
  expect(await jailTexts(jail)).not.toContain(SECRET)
}

describe('paths read from files never lead outside the jail', () => {
  it('the gate itself: a path it lets through is inside its folder, symlinks followed', async () => {
    const { jail, outside } = await world()
    await plantLinks(jail, outside)
    await fc.assert(
      fc.asyncProperty(hostilePath(1, ['x.md'], outside), async (path) => {
        try {
          const { path: found } = await confine(jail, path, 'a path')
          expect(isInside(jail, found)).toBe(true)
          // What it found, when there is something there, is inside too once every link is followed: a link to nothing is not.
          if (await lstat(found).catch(() => undefined)) expect(isInside(jail, await realpath(found).catch(() => '/nowhere'))).toBe(true)
        } catch (error) {
          if (!(error instanceof PathRefusal)) throw error
        }
      }),
      { ...settings, numRuns: settings.numRuns * 10, examples: [['dangling.md'], ['out/0001-draft.md'], ['../outside/secret.md'], ['alias/alias/x.md']] },
    )
  })

  it('the gate over many paths in one pass (folders looked at once): the same answer for each as the gate of it alone', async () => {
    const { jail, outside } = await world()
    await plantLinks(jail, outside)
    await plantLinks(join(jail, 'sub'), outside)
    const answer = (path: string, seen?: GateMemo) => {
      try {
        return confineSync(jail, path, 'a path', seen)
      } catch (error) {
        if (!(error instanceof PathRefusal)) throw error
        return error.code
      }
    }
    await fc.assert(
      fc.property(
        fc.array(
          fc.oneof(
            hostilePath(1, ['x.md'], outside),
            hostilePath(2, ['sub/x.md'], outside).map((path) => `sub/${path}`),
          ),
          { maxLength: 12 },
        ),
        (paths) => {
          const seen: GateMemo = new Map()
          expect(paths.map((path) => answer(path, seen))).toEqual(paths.map((path) => answer(path)))
        },
      ),
      {
        ...settings,
        numRuns: settings.numRuns * 10,
        examples: [[['alias/out/0001-draft.md', 'alias/x.md', 'out/0001-draft.md', 'sub/alias/alias/x.md', 'sub/out/x.md']]],
      },
    )
  })

  it("a proposal's `notes:`, revised", async () => {
    const V1 = '## research\ntype: start\nFind sources.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft.\n'
    const V2 = '## outline\ntype: start\nOutline it.\n'
    await fc.assert(
      fc.asyncProperty(fc.array(hostilePath(1, ['research.md', 'draft.md'], '/placeholder'), { minLength: 1, maxLength: 8 }), async (notes) => {
        const { top, jail, outside } = await world()
        // The jail is the vault itself here: a note of the proposal never comes from beside it.
        const llm = scriptedJudge((_prompt, call) => (call === 0 ? V1 : V2))
        await proposePlan('q', { into: jail, llm, fsync: false })
        await plantLinks(jail, outside)
        const entries = notes.map((note) => note.replace('/placeholder', outside))
        await edit(jail, '00_plan-trace/proposal.md', (text) => text.replace(/^notes: .*$/m, `notes: ${JSON.stringify(entries)}`))
        // Saved a minute ago: a note saved a moment ago is watched for a second before it is rewritten, which proves nothing here.
        const minuteAgo = new Date(Date.now() - 60_000)
        await utimes(join(jail, '00_plan-trace/proposal.md'), minuteAgo, minuteAgo)
        await decide(jail, 'proposal', { edge: 'revise', feedback: 'again' })
        await confined(top, jail, () => runPlan(jail, { work: scriptedWorker(), llm, fsync: false }))
        expect(llm.calls.map((call) => call.prompt).join('\n')).not.toContain(SECRET)
      }),
      { ...settings, numRuns: settings.numRuns * 3, examples: [[['../outside/secret.md', 'secret-link.md', 'out/0001-draft.md']]] },
    )
  })

  it("a trace hop's `output`, forked", async () => {
    const { top, jail, outside } = await world()
    const source = await writeVault(draftReview(), join(jail, 'source'))
    await runPlan(source, { query: 'q', work: scriptedWorker(), llm: reviewJudge('review v1'), fsync: false })
    await plantLinks(join(source, '00_plan-trace'), outside)
    await plantLinks(join(source, '00_plan-trace/outputs'), outside)
    const trace = await readFile(join(source, '00_plan-trace/trace.md'), 'utf8')
    let forks = 0
    await fc.assert(
      // Every hop of the run names an output of its own choosing, the fork keeps them all.
      fc.asyncProperty(fc.array(hostilePath(3, ['outputs', '0001-draft.md'], outside), { minLength: 3, maxLength: 3 }), async (outputs) => {
        let hop = 0
        await writeFile(
          join(source, '00_plan-trace/trace.md'),
          trace.replace(/"output":"[^"]*"/g, () => `"output":${JSON.stringify(outputs[hop++])}`),
        )
        const into = join(jail, 'forks', `fork-${forks++}`)
        await confined(top, jail, () => forkRun(source, { step: 3, into, fsync: false }))
      }),
      {
        ...settings,
        numRuns: settings.numRuns * 3,
        // Besides the random ones, each way out at least once: `..` from the trace folder, a link to a file, a link to a folder.
        examples: [[['../../../outside/secret.md', 'secret-link.md', 'outputs/out/0001-draft.md']]],
      },
    )
  })

  it("a trace hop's `output`, resumed", async () => {
    const { top, jail, outside } = await world()
    let runs = 0
    await fc.assert(
      fc.asyncProperty(hostilePath(3, ['outputs', '0001-a.md'], outside), async (output) => {
        const vault = await writeVault(linear(), join(jail, `v${runs++}`))
        await runPlan(vault, { query: 'q', fsync: false, maxSteps: 1, work: async (step) => `${step.node.id} here` })
        await plantLinks(join(vault, '00_plan-trace'), outside)
        await plantLinks(join(vault, '00_plan-trace/outputs'), outside)
        await edit(vault, '00_plan-trace/trace.md', (text) => text.replace('"output":"outputs/0001-a.md"', `"output":${JSON.stringify(output)}`))
        const work = scriptedWorker()
        await confined(top, jail, () => runPlan(vault, { fsync: false, work }))
        expect(JSON.stringify(work.calls)).not.toContain(SECRET)
      }),
      { ...settings, numRuns: settings.numRuns * 3, examples: [['../../../outside/secret.md'], ['secret-link.md'], ['outputs/out/0001-draft.md']] },
    )
  })

  it("a note journal's entries, replayed after a restart", async () => {
    const { top, jail, outside } = await world()
    let runs = 0
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.tuple(fc.constantFrom('note', 'file'), hostilePath(1, ['a.md', '00_plan-trace'], outside)), { minLength: 1, maxLength: 4 }),
        async (entries) => {
          const vault = await writeVault(linear(), join(jail, `v${runs++}`))
          await plantLinks(vault, outside)
          await mkdir(join(vault, '00_plan-trace'))
          // No boot entry: written before this machine started, so the run repairs files from it.
          const journal = entries.map(([k, f]) => `${JSON.stringify({ k, f, t: `${SECRET}\n` })}\n`).join('')
          await writeFile(join(vault, '00_plan-trace/.journal'), journal)
          await confined(top, jail, async () => {
            await runPlan(vault, { query: 'q', work: async (step) => `${step.node.id} done` })
            // The journal itself holds the secret as planted: not a read of anything outside.
            await rm(join(vault, '00_plan-trace/.journal'), { force: true })
          })
        },
      ),
      {
        ...settings,
        numRuns: settings.numRuns * 3,
        examples: [
          [
            [
              ['note', '../outside/empty.md'],
              ['file', 'out/empty.md'],
            ],
          ],
        ],
      },
    )
  })

  it("a search index's documents, searched", async () => {
    const { top, jail, outside } = await world()
    await writeVault(linear(), join(jail, 'v'))
    await runPlan(join(jail, 'v'), { query: 'q', fsync: false, work: async (step) => `${step.node.id}: tide pools` })
    await plantLinks(join(jail, 'v/00_plan-trace/outputs'), outside)
    await searchRuns(jail, 'tide')
    const indexFile = join(jail, '.vaultplan/search-index.json')
    const saved = JSON.parse(await readFile(indexFile, 'utf8'))
    const options = { fields: ['text'], storeFields: ['kind', 'vault', 'runId', 'file', 'node', 'step', 'shown'], autoVacuum: false }
    const folderOf = (file: string) => (file.includes('/') ? file.slice(0, file.lastIndexOf('/')) : '')
    await fc.assert(
      fc.asyncProperty(hostilePath(1, ['v/00_plan-trace/outputs/secret-link.md', 'v/00_plan-trace/outputs/out/0001-draft.md'], outside), async (file) => {
        // Planted as a refresh would have written it: a document of a listed file, in a listed folder.
        const engine = MiniSearch.loadJS(saved.index, options)
        engine.add({ id: `${file}#0`, text: 'tide pools planted', kind: 'output', vault: 'v', runId: 'r', file, node: 'a', step: 1 })
        const folder = saved.folders[folderOf(file)] ?? { m: 0, i: 0, dirs: [], files: [] }
        const planted = {
          ...saved,
          folders: { ...saved.folders, [folderOf(file)]: { ...folder, files: [...folder.files, file] } },
          files: { ...saved.files, [file]: { ...(saved.files[file] ?? { m: 0, s: 0, i: 0 }), docs: [`${file}#0`] } },
          index: engine.toJSON(),
        }
        await writeFile(indexFile, JSON.stringify(planted))
        await confined(top, jail, () => searchRuns(jail, 'tide pools', { limit: 50 }))
      }),
      { ...settings, numRuns: settings.numRuns * 10, examples: [['../outside/secret.md'], ['v/00_plan-trace/outputs/secret-link.md']] },
    )
  })
})
