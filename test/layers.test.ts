import { readdirSync, readFileSync } from 'node:fs'
import { join, posix } from 'node:path'
import { describe, expect, it } from 'vitest'

/**
 * The house's one import rule (docs/architecture.md): each folder of src/ imports only from its own
 * layer and the layers below it. Type-only imports count too: a type from above is a design leak.
 * `run/` is layered inside too: the pure core, the read model, the driving of a hop and a tree, the
 * proposals every run passes, the entry points, then the features on top of them.
 */
const LAYERS = [
  'core',
  'vault',
  'plan',
  'store',
  'memory',
  'models',
  'run/core',
  'run/read',
  'run/drive',
  'run/proposals',
  'run/entry',
  'run/features',
  'surfaces',
  'cli',
  'entry',
] as const
const FOLDER_LAYER: Record<string, (typeof LAYERS)[number]> = {
  core: 'core',
  vault: 'vault',
  plan: 'plan',
  store: 'store',
  memory: 'memory',
  models: 'models',
  'run/core': 'run/core',
  'run/read': 'run/read',
  'run/drive': 'run/drive',
  'run/proposals': 'run/proposals',
  'run/entry': 'run/entry',
  'run/decide': 'run/features',
  'run/forks': 'run/features',
  'run/edits': 'run/features',
  'run/schedules': 'run/features',
  mcp: 'surfaces',
  queue: 'surfaces',
  board: 'surfaces',
  cli: 'cli',
  '.': 'entry',
}
const SRC = join(import.meta.dirname, '..', 'src')

function sourceFiles(folder = ''): string[] {
  return readdirSync(join(SRC, folder), { withFileTypes: true }).flatMap((entry) => {
    const path = folder ? `${folder}/${entry.name}` : entry.name
    if (entry.isDirectory()) return sourceFiles(path)
    return entry.name.endsWith('.ts') ? [path] : []
  })
}

/** Every relative module a file imports, statically or with `import()`, as paths under src/. */
export function importsOf(file: string, text: string): string[] {
  const specifiers = [...text.matchAll(/(?:\bfrom\s+|\bimport\s*\(\s*|^import\s+)'(\.{1,2}\/[^']+)'/gm)].map((match) => match[1]!)
  return specifiers.map((specifier) => posix.normalize(posix.join(posix.dirname(file), specifier)).replace(/\.js$/, '.ts'))
}

function layerOf(file: string) {
  const parts = file.split('/')
  // run/ is layered by its folders: a file of run/ sits in one of them.
  const folder = parts.length === 1 ? '.' : parts[0] === 'run' ? parts.slice(0, parts.length > 2 ? 2 : 1).join('/') : parts[0]!
  const layer = FOLDER_LAYER[folder]
  if (!layer) throw new Error(`src/${file} is in a folder no layer names; add \`${folder}\` to FOLDER_LAYER and to docs/architecture.md`)
  return LAYERS.indexOf(layer)
}

/** The imports of `files` that go up a layer, as `from -> to` lines. */
export function upwardImports(files: Map<string, string>): string[] {
  const found: string[] = []
  for (const [file, text] of files) {
    for (const target of importsOf(file, text)) {
      if (layerOf(target) > layerOf(file)) found.push(`src/${file} -> src/${target}`)
    }
  }
  return found
}

/** The loops of the import graph (strongly connected components of more than one file), each sorted. */
export function importCycles(files: Map<string, string>): string[][] {
  const edges = new Map([...files].map(([file, text]) => [file, importsOf(file, text).filter((target) => files.has(target))]))
  const order = new Map<string, number>()
  const low = new Map<string, number>()
  const stack: string[] = []
  const cycles: string[][] = []
  const visit = (file: string) => {
    order.set(file, order.size)
    low.set(file, order.get(file)!)
    stack.push(file)
    for (const target of edges.get(file)!) {
      if (!order.has(target)) {
        visit(target)
        low.set(file, Math.min(low.get(file)!, low.get(target)!))
      } else if (stack.includes(target)) low.set(file, Math.min(low.get(file)!, order.get(target)!))
    }
    if (low.get(file) !== order.get(file)) return
    const component = stack.splice(stack.indexOf(file))
    if (component.length > 1) cycles.push(component.sort())
  }
  for (const file of edges.keys()) if (!order.has(file)) visit(file)
  return cycles
}

describe('the layers of src/', () => {
  const files = new Map(sourceFiles().map((file) => [file, readFileSync(join(SRC, file), 'utf8')]))

  it('every file sits in a folder of a layer', () => {
    for (const file of files.keys()) expect(() => layerOf(file)).not.toThrow()
  })

  it('no file imports from a layer above its own', () => {
    expect(upwardImports(files)).toEqual([])
  })

  it('reports a file that imports from above, statically or dynamically', () => {
    const planted = new Map([
      ['vault/links.ts', "import { runPlan } from '../run/entry/executor.js'\n"],
      ['plan/plan-svg.ts', "const { readTrace } = await import('../run/read/trace.js')\n"],
      ['models/worker.ts', "import type { LedgerView } from '../memory/ledger.js'\nimport { x } from '../core/text.js'\n"],
    ])
    expect(upwardImports(planted)).toEqual(['src/vault/links.ts -> src/run/entry/executor.ts', 'src/plan/plan-svg.ts -> src/run/read/trace.ts'])
  })

  it("orders run/'s folders: the pure core imports nothing of the run above it, the entry points no feature", () => {
    const planted = new Map([
      ['run/core/vault-stand.ts', "import { RunDriver } from '../drive/run-driver.js'\nimport { stopOf } from './stops.js'\n"],
      ['run/read/observe-run.ts', "import type { Step } from '../entry/stepping.js'\n"],
      ['run/entry/executor.ts', "import { decide } from '../decide/decide.js'\nimport { PlanTree } from '../drive/plan-tree.js'\n"],
      ['run/forks/fork.ts', "import { editPlan } from '../edits/edit-plan.js'\n"],
    ])
    expect(upwardImports(planted)).toEqual([
      'src/run/core/vault-stand.ts -> src/run/drive/run-driver.ts',
      'src/run/read/observe-run.ts -> src/run/entry/stepping.ts',
      'src/run/entry/executor.ts -> src/run/decide/decide.ts',
    ])
  })

  it('no two files import each other, directly or round a longer loop', () => {
    expect(importCycles(files)).toEqual([])
  })

  it('reports an import loop', () => {
    const planted = new Map([
      ['plan/a.ts', "import { b } from './b.js'\n"],
      ['plan/b.ts', "import type { C } from './c.js'\n"],
      ['plan/c.ts', "export { a } from './a.js'\n"],
      ['plan/d.ts', "import { a } from './a.js'\n"],
    ])
    expect(importCycles(planted)).toEqual([['plan/a.ts', 'plan/b.ts', 'plan/c.ts']])
  })
})
