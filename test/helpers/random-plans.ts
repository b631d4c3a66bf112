import fc from 'fast-check'
import type { CallLLM, Predicate } from 'vaultplan'
import { conditionsIn, grid, scriptedJudge } from './scripted.js'
import { note } from './vault.js'

/*
 * Random plans for the property tests: a path of notes with edges forward
 * (so a terminal is reachable) and back (loops, bounded by `max_visits`),
 * conditions decided by predicates, by the judge or by the stepping
 * caller's choice, `judge: human` notes, and notes that run subplans (one
 * folder, or two as parallel branches) nested up to three deep, or that
 * `plan: generate` (a scripted planner writes their folder).
 */

/** An edge's condition: `next` (unconditional), a label a predicate decides (`p<n>`), or one the judge or the caller's choice decides (`c<n>`). */
export type EdgeKind = 'next' | 'pred' | 'choice'

export interface EdgeSpec {
  to: number
  kind: EdgeKind
}

export interface NoteSpec {
  edges: EdgeSpec[]
  human: boolean
  maxVisits: number | undefined
  /** The subplans the note runs: one folder, or two (parallel branches), or the folder a planner writes (`generate`). */
  plan: FolderSpec[] | 'generate' | undefined
}

export interface FolderSpec {
  notes: NoteSpec[]
}

const edgeKind = fc.constantFrom<EdgeKind>('next', 'pred', 'choice')

/** Note `index` of `count`: the last is the terminal; every other note has an edge forward and maybe others, back ones making loops. */
function noteSpec(index: number, count: number, depth: number): fc.Arbitrary<NoteSpec> {
  const terminal = index === count - 1
  const edges: fc.Arbitrary<EdgeSpec[]> = terminal
    ? fc.constant([])
    : fc
        .tuple(
          fc.record({ to: fc.integer({ min: index + 1, max: count - 1 }), kind: edgeKind }),
          fc.array(fc.record({ to: fc.integer({ min: 0, max: count - 1 }), kind: edgeKind }), { maxLength: 2 }),
        )
        .map(([forward, extra]) => [forward, ...extra])
  const plan: fc.Arbitrary<FolderSpec[] | 'generate' | undefined> =
    depth >= 3
      ? fc.constant(undefined)
      : fc.oneof(
          { weight: 4, arbitrary: fc.constant(undefined) },
          { weight: 1, arbitrary: fc.array(folderSpec(depth + 1), { minLength: 1, maxLength: 2 }) },
          { weight: 1, arbitrary: fc.constant('generate' as const) },
        )
  return fc.record({
    edges,
    // One note in five waits for a person; shrinks towards none.
    human: terminal ? fc.constant(false) : fc.integer({ min: 0, max: 4 }).map((n) => n === 4),
    maxVisits: fc.option(fc.integer({ min: 1, max: 3 }), { nil: undefined }),
    plan,
  })
}

/** A folder of notes nested `depth` deep: the top plan has 2 to 5, a subplan 1 to 3. */
export function folderSpec(depth = 0): fc.Arbitrary<FolderSpec> {
  return fc
    .integer({ min: depth === 0 ? 2 : 1, max: depth === 0 ? 5 : 3 })
    .chain((count) => fc.tuple(...Array.from({ length: count }, (_, index) => noteSpec(index, count, depth))))
    .map((notes) => ({ notes }))
}

/** The notes of a plan as files, path -> text: `n0` starts each folder; subplan folders are `f1`, `f2`, ... beside the note that runs them. */
export function planFiles(top: FolderSpec): Record<string, string> {
  const files: Record<string, string> = {}
  let count = 0
  const writeFolder = (folder: FolderSpec, dir: string) => {
    folder.notes.forEach((spec, index) => {
      const front: Record<string, string | number> = {}
      if (index === 0) front.type = 'start'
      if (spec.maxVisits !== undefined) front.max_visits = spec.maxVisits
      if (spec.human) front.judge = 'human'
      const subs = (spec.plan === 'generate' ? [] : (spec.plan ?? [])).map((sub) => [`f${++count}`, sub] as const)
      if (subs.length > 0) front.plan = subs.length === 1 ? subs[0]![0] : `[${subs.map(([name]) => name).join(', ')}]`
      if (spec.plan === 'generate') front.plan = 'generate'
      let unconditional = false
      const next = spec.edges.map((edge, at) => {
        // One unconditional edge a note: a second `next` becomes a condition.
        const kind = edge.kind === 'next' && unconditional ? 'choice' : edge.kind
        if (kind === 'next') unconditional = true
        const label = kind === 'next' ? '' : `${kind === 'pred' ? 'p' : 'c'}${at} -> `
        return `${spec.human ? '[ ] ' : ''}${label}[[n${edge.to}]]`
      })
      files[`${dir}n${index}.md`] = note({ front, title: `N${index}`, body: `Do n${index}.`, ...(next.length > 0 && { next }) })
      for (const [name, sub] of subs) writeFolder(sub, `${dir}${name}/`)
    })
  }
  writeFolder(top, '')
  return files
}

/** A small deterministic hash in [0, 1), so predicates and the judge answer alike for the same visit in any order of calls. */
function hash(text: string): number {
  let h = 2166136261
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 16777619)
  return (h >>> 0) / 2 ** 32
}

/** A seeded random source for a driver's own decisions (choices, boxes): `pick(n)` is in 0..n-1. */
export function randomPicks(seed: number): (n: number) => number {
  let state = seed >>> 0
  return (n) => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return Math.floor((((t ^ (t >>> 14)) >>> 0) / 2 ** 32) * n)
  }
}

/** Predicates for the labels `p0`..`p2`: each holds or not by the visit's note, visit and output. */
export function randomPredicates(seed: number): Record<string, Predicate> {
  const holds =
    (label: string): Predicate =>
    ({ node, visit, output }) =>
      hash(`${seed}|${label}|${node.id}|${visit}|${output}`) < 0.5
  return { p0: holds('p0'), p1: holds('p1'), p2: holds('p2') }
}

/**
 * A judge for the `c` labels: YES or NO per condition by the prompt (its
 * random fence left out); and a planner for `plan: generate` notes, which
 * writes one or two notes, the first of which sometimes decomposes again.
 */
export function randomJudge(seed: number): CallLLM & { calls: ReturnType<typeof scriptedJudge>['calls'] } {
  const judge = scriptedJudge((prompt) => {
    const conditions = conditionsIn(prompt)
    const plain = prompt.replace(/DATA-[0-9a-f]+/g, 'DATA')
    const yes = conditions.map((_, at) => at + 1).filter((at) => hash(`${seed}|${at}|${plain}`) < 0.4)
    return grid(conditions.length, yes)
  })
  const llm: CallLLM = async (prompt, options) => {
    if (options.role !== 'planning') return judge(prompt, options)
    judge.calls.push({ prompt, role: options.role, system: options.system })
    const roll = hash(`${seed}|plan|${prompt.replace(/DATA-[0-9a-f]+/g, 'DATA')}`)
    const again = roll < 0.3 ? 'plan: generate\n' : ''
    return roll < 0.6 ? `## g0\ntype: start\n${again}Do g0.\n### Next\n- [[g1]]\n\n## g1\nDo g1.\n` : `## g0\ntype: start\n${again}Do g0.\n`
  }
  return Object.assign(llm, { calls: judge.calls })
}
