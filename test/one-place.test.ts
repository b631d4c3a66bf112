import { readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'

/*
 * Decisions written once (issue 25): the walk into a plan's subplans, the
 * "is this note decided by a person" test and the default `maxSteps`. A
 * second copy drifts from the first at its next edit, so a copy fails here,
 * with the file and line that holds it.
 */

const SRC = join(import.meta.dirname, '..', 'src')

/** Every source file under src/, by its path from the repository (`src/run/decide/decide.ts`). */
function sourceFiles(folder = ''): string[] {
  return readdirSync(join(SRC, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = folder ? `${folder}/${entry.name}` : entry.name
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [`src/${path}`] : []
  })
}

const FILES = new Map(sourceFiles().map((file) => [file, readFileSync(join(SRC, '..', file), 'utf8')]))

/** The lines of code (comments left out) of `files` that match `pattern`, as `file:line`. */
export function linesMatching(pattern: RegExp, files: ReadonlyMap<string, string> = FILES): string[] {
  const found: string[] = []
  for (const [file, text] of files) {
    text.split('\n').forEach((line, index) => {
      if (/^\s*(\*|\/\/|\/\*)/.test(line)) return
      if (pattern.test(line)) found.push(`${file}:${index + 1}`)
    })
  }
  return found
}

/** The files of `found` lines, one entry a line, sorted: what a test pins (line numbers move with every edit). */
function filesOf(found: string[]): string[] {
  return found.map((at) => at.replace(/:\d+$/, '')).sort()
}

/** A path checked for leaving its folder: `isInside(`, or a segment found to be `..`. */
const LEAVES_FOLDER = /\bisInside\(|===\s*'\.\.'|'\.\.'\s*===|\.includes\('\.\.'\)|startsWith\(['`]\.\.\//

/** The default step budget, as run-options.ts writes it. */
const DEFAULT_BUDGET = /\bDEFAULT_MAX_STEPS = (\d+)/.exec(FILES.get('src/run/core/run-options.ts') ?? '')?.[1] ?? 'missing'

/**
 * Going through a whole `subplans` collection rather than looking one
 * folder up (`.get`, `.has`): a `for ... of x.subplans`, `x.subplans ?? []`,
 * a spread, or its `entries`/`values`/`keys`/`forEach`.
 */
const WALKS_SUBPLANS = /\bof\s+[\w.!?()]*\.subplans\b|\.subplans\s*\?\?\s*\[\]|\.\.\.\s*\(?[\w.!?]*\.subplans\b|\.subplans\??\.(entries|values|keys|forEach)\(/

/** A note's `judge` compared with `human`, either way round, or a `case 'human'`. */
const IS_HUMAN = /\bjudge\)?\s*[!=]==?\s*['"`]human['"`]|['"`]human['"`]\s*[!=]==?\s*[\w.?]*\bjudge\b|\bcase\s+['"`]human['"`]/

/** A default step budget applied: `maxSteps ??`, `?? DEFAULT_MAX_STEPS`, `DEFAULTS.maxSteps`, or the default's number on a line about the step budget. */
const MAX_STEPS_DEFAULT = new RegExp(
  String.raw`\bmaxSteps\s*\?\?|\?\?\s*DEFAULT_MAX_STEPS\b|\bDEFAULTS\.maxSteps\b|\bmax[-_ ]?steps\b.*\b${DEFAULT_BUDGET}\b`,
  'i',
)

/** The step budget compared with what was spent: `>= maxSteps`, `< options.maxSteps`. */
const BUDGET_COMPARED = /[<>]=?\s*[\w.?()]*\bmaxSteps\b/
/** The outputs of a note's branches joined under their folders' headings. */
const BRANCHES_JOINED = /`## \$\{written\}/
/** The order of a stepping call's passes over the claims. */
const CLAIM_PASSES = /\[\s*'own',\s*'fresh'|\[\s*'fresh',\s*'any'\s*\]/
/** A note's planner call decided: its `plan: generate` folder found without notes. */
const PLANNER_CALL_DUE = /isGenerate\([^)]*\)\s*&&\s*!/

describe('comments', () => {
  it('point at docs/, never at a SPEC section or an issue the repository does not hold', () => {
    const cited = /\bsection \d+\b|\bSPEC\b|\bissue #?\d+\b/i
    const found = [...FILES].flatMap(([file, text]) => text.split('\n').flatMap((line, index) => (cited.test(line) ? [`${file}:${index + 1}`] : [])))
    expect(found).toEqual([])
  })
})

describe('one place for each decision', () => {
  it("decides a run tree's order, budget, joins and planner calls only in the pure core (src/run/core/)", () => {
    const outside = (pattern: RegExp) => linesMatching(pattern).filter((at) => at.startsWith('src/run/') && !at.startsWith('src/run/core/'))
    expect({
      budget: outside(BUDGET_COMPARED),
      joins: outside(BRANCHES_JOINED),
      order: outside(CLAIM_PASSES),
      planner: outside(PLANNER_CALL_DUE),
    }).toEqual({ budget: [], joins: [], order: [], planner: [] })
    // Each is in the core, once: a second copy there is a copy too.
    expect(filesOf(linesMatching(BRANCHES_JOINED))).toEqual(['src/run/core/tree-rules.ts'])
    expect(filesOf(linesMatching(PLANNER_CALL_DUE))).toEqual(['src/run/core/tree-rules.ts'])
  })

  it('walks into subplans only through subplanTree (graphs and records) and snapshotNodes (a snapshot)', () => {
    const found = linesMatching(WALKS_SUBPLANS)
    // Each file here walks a tree no other file walks, once; a new walk over `subplans` is a copy.
    expect(filesOf(found), found.join('\n')).toEqual(
      [
        // The one walk over a loaded plan's subplans and over a run's records.
        'src/plan/subplan-tree.ts',
        // The pictures: one cluster per subplan of the graph being drawn, nested as the picture nests.
        'src/plan/plan-clusters.ts',
        // Prints the nested status of `readRunStatus`, notes then their subplans' rows.
        'src/cli/cli-status.ts',
        'src/cli/cli-status.ts',
        // The one walk over a snapshot's nested notes (`snapshotNodes`).
        'src/run/core/run-snapshot.ts',
        // The fork's runs per visit of a subplan note, archived runs included: not the folders' records.
        'src/run/forks/fork-cut.ts',
        'src/run/forks/fork-cut.ts',
      ].sort(),
    )
    // A subplan's trace is read with the run's records (readRecords) or by the driver that opens it, never on a walk of its own.
    expect(linesMatching(/\breadTrace\(\s*join\(/)).toEqual([])
  })

  it('asks whether a note waits for a person only in waitsForPerson', () => {
    const found = linesMatching(IS_HUMAN)
    expect(filesOf(found), found.join('\n')).toEqual(['src/core/knobs.ts'])
  })

  it('writes the default maxSteps once and applies it once (stepBudget)', () => {
    expect(DEFAULT_BUDGET).toMatch(/^\d+$/)
    expect(filesOf(linesMatching(/\bDEFAULT_MAX_STEPS\s*=/))).toEqual(['src/run/core/run-options.ts'])
    const found = linesMatching(MAX_STEPS_DEFAULT)
    expect(filesOf(found), found.join('\n')).toEqual(['src/run/core/run-options.ts'])
  })

  it('decides whether a path leads out of its folder in the path gate, and elsewhere only where no file is opened by it', () => {
    const found = linesMatching(LEAVES_FOLDER)
    expect(filesOf(found), found.join('\n')).toEqual(
      [
        // The gate (insideSegments, confineSync, pathInVault), and isInside itself.
        'src/vault/path-gate.ts',
        'src/vault/path-gate.ts',
        'src/vault/path-gate.ts',
        'src/vault/fs-atomic.ts',
        // The loader's listing: a symlinked note it found is read only when it leads to a file inside.
        'src/vault/read-vault.ts',
        // Whether a live runner's vault is above this one: no path from a file.
        'src/vault/lock.ts',
        // Whether the working folder (its config) lies in a vault being run: no path from a file.
        'src/vault/runner-config.ts',
        // A wikilink or a `plan:` resolved against its note's folder names a note or a folder of the listing, never opens a file.
        'src/vault/next-section.ts',
        'src/vault/subplan-folders.ts',
        // Arguments: the canvas's folder option, and how the CLI shows a path.
        'src/plan/plan-canvas.ts',
        'src/cli/cli-support.ts',
      ].sort(),
    )
  })

  it('catches a copy', () => {
    const copy = new Map([
      [
        'src/run/copy.ts',
        'for (const [folder, inner] of graph.subplans ?? []) visit(folder)\nif (node.judge === "human") wait()\nconst budget = options.maxSteps ?? 50\n',
      ],
      ['src/cli/help.ts', '  --max-steps N   works allowed (default 50)\n'],
    ])
    expect(linesMatching(WALKS_SUBPLANS, copy)).toEqual(['src/run/copy.ts:1'])
    expect(linesMatching(IS_HUMAN, copy)).toEqual(['src/run/copy.ts:2'])
    expect(linesMatching(MAX_STEPS_DEFAULT, copy)).toEqual(['src/run/copy.ts:3', 'src/cli/help.ts:1'])
    const paths = new Map([['src/run/copy.ts', "if (file.split('/').includes('..')) return\nif (!isInside(vault, real)) throw refused\n"]])
    expect(linesMatching(LEAVES_FOLDER, paths)).toEqual(['src/run/copy.ts:1', 'src/run/copy.ts:2'])
  })
})

/** A per-key line of promises kept by hand: a map of promise tails, or a tail begun with `?? Promise.resolve()`. */
const KEYED_LINE = /new Map<[^>]*,\s*Promise<|\?\?\s*Promise\.resolve\(\)/
/** A look at a path that may find nothing, made by hand: a stat told not to throw, or one whose error is swallowed. */
const STAT_OR_NOTHING = /throwIfNoEntry|\bl?stat(Sync)?\([^)]*\)\s*\.(catch\(|then\([^,)]*,)/
/** A wait made by hand: a promise resolved by a timer, or Node's promise timers. */
const HAND_SLEEP = /setTimeout\(\s*(resolve|done|r)\s*,|new Promise[^\n]*setTimeout|node:timers\/promises/

describe('one helper for each small job', () => {
  it('keeps calls one at a time per key only in KeyedMutex', () => {
    expect(new Set(filesOf(linesMatching(KEYED_LINE)))).toEqual(new Set(['src/core/keyed-mutex.ts']))
  })

  it('looks at a path that may hold nothing only through statOrNothing', () => {
    expect(new Set(filesOf(linesMatching(STAT_OR_NOTHING)))).toEqual(new Set(['src/vault/stat-or-nothing.ts']))
  })

  it('waits only through sleep', () => {
    expect(linesMatching(HAND_SLEEP)).toEqual([])
  })

  it('catches a copy', () => {
    const copy = new Map([
      [
        'src/run/copy.ts',
        [
          'const before = queues.get(key) ?? Promise.resolve()',
          'const info = await stat(path).catch(() => undefined)',
          'const info = lstatSync(path, { throwIfNoEntry: false })',
          'await new Promise((resolve) => setTimeout(resolve, 50))',
        ].join('\n'),
      ],
    ])
    expect(linesMatching(KEYED_LINE, copy)).toEqual(['src/run/copy.ts:1'])
    expect(linesMatching(STAT_OR_NOTHING, copy)).toEqual(['src/run/copy.ts:2', 'src/run/copy.ts:3'])
    expect(linesMatching(HAND_SLEEP, copy)).toEqual(['src/run/copy.ts:4'])
  })
})
