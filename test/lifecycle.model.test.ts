import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import fc from 'fast-check'
import { expect, it } from 'vitest'
import { loadPlan, runPlan, type CallLLM, type RunResult, type StepInput } from 'vaultplan'
import { writeVault } from './helpers/vault.js'

/** The plan: draft -> review, which asks for one revision, then send. */
const plan = {
  'draft.md': '---\ntype: start\ntags: [writing] # mine\n---\n# Draft\n\nWrite it.\n\n## Next\n- [[review]]\n',
  'review.md': '---\nmax_visits: 3\n---\n# Review\n\nJudge it.\n\n## Next\n- approved -> [[send]]\n- needs revision -> [[draft]]\n',
  'send.md': '# Send\n\nSend it.\n',
}
const path = ['1 draft 1 review', '2 review 1 draft', '3 draft 2 review', '4 review 2 send', '5 send 1 -']
const judge: CallLLM = async (prompt) => (/\(visit 1\)/.test(prompt) ? '1: NO\n2: YES' : '1: YES\n2: NO')

/** What the real vault should look like, as far as a person can tell. */
interface Model {
  /** The person's own lines appended to each note, in order. */
  edits: Record<string, string[]>
  finished: boolean
}

interface Real {
  vault: string
  /** Keys each visit was worked with, across crashes. */
  keys: Map<string, Set<string>>
  result: RunResult | undefined
}

async function hops(vault: string): Promise<string[]> {
  const trace = await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8').catch(() => '')
  return [...trace.matchAll(/^<!-- vaultplan:hop (.*) -->$/gm)]
    .map(([, json]) => JSON.parse(json!) as { kind: string; step: number; node: string; visit: number; next: string | null })
    .filter((hop) => hop.kind === 'hop')
    .map((hop) => `${hop.step} ${hop.node} ${hop.visit} ${hop.next ?? '-'}`)
}

/** Invariants after every command: the person's bytes, the statuses, the trace, the keys. */
async function check(model: Model, real: Real): Promise<void> {
  const recorded = await hops(real.vault)
  expect(path.slice(0, recorded.length)).toEqual(recorded)
  const graph = await loadPlan(real.vault)
  expect(() => graph.validate()).not.toThrow()
  const active = [...graph.nodes.values()].filter((node) => node.status === 'active')
  expect(active.length).toBeLessThanOrEqual(1)
  for (const [file, original] of Object.entries(plan)) {
    const text = await readFile(join(real.vault, file), 'utf8')
    // Everything but the status is the person's: the original note plus their edits, byte for byte.
    // (A note without frontmatter gained one holding only the status.)
    let withoutStatus = text.replace(/^status: (pending|active|done|waiting)\n/m, '')
    if (!original.startsWith('---')) withoutStatus = withoutStatus.replace(/^---\n---\n/, '')
    expect(withoutStatus).toBe(original + (model.edits[file] ?? []).join(''))
  }
  for (const keys of real.keys.values()) expect(keys.size).toBe(1)
  if (model.finished) expect(recorded).toEqual(path)
}

/**
 * Runs the vault; the worker throws (a crash of the process, as far as the
 * vault can tell) at its `crashAt`-th call, and a person may append to the
 * note being worked while its first work is under way, as in Obsidian.
 */
class Run implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly crashAt: number | undefined,
    readonly editDuringWork?: string,
  ) {}
  check = () => true
  async run(model: Model, real: Real) {
    let calls = 0
    const work = async (step: StepInput) => {
      const visit = `${step.node.id}:${step.visit}`
      real.keys.set(visit, (real.keys.get(visit) ?? new Set()).add(step.key))
      if (this.editDuringWork && calls === 0) {
        const file = `${step.node.id}.md`
        const note = join(real.vault, file)
        await writeFile(note, `${await readFile(note, 'utf8')}${this.editDuringWork}`)
        model.edits[file] = [...(model.edits[file] ?? []), this.editDuringWork]
      }
      if (this.crashAt !== undefined && ++calls === this.crashAt) throw new Error('crash')
      calls = Math.max(calls, 1)
      return `${step.node.id} v${step.visit}`
    }
    const outcome = await runPlan(real.vault, { query: 'q', work, llm: judge, fsync: false }).catch((error: Error) => error)
    if (!(outcome instanceof Error)) {
      real.result = outcome
      model.finished = true
      expect(outcome).toMatchObject({ status: 'completed', steps: 5, output: 'send v1', visits: { draft: 2, review: 2, send: 1 } })
    } else expect(outcome.message).toMatch(/crash/)
    await check(model, real)
  }
  toString = () => `run(crash at ${this.crashAt ?? 'never'}${this.editDuringWork ? ', edit during work' : ''})`
}

/** A person appends a paragraph to a note in their notes app, between runs. */
class Edit implements fc.AsyncCommand<Model, Real> {
  constructor(
    readonly file: keyof typeof plan,
    readonly line: string,
  ) {}
  check = () => true
  async run(model: Model, real: Real) {
    const path = join(real.vault, this.file)
    await writeFile(path, `${await readFile(path, 'utf8')}${this.line}`)
    model.edits[this.file] = [...(model.edits[this.file] ?? []), this.line]
    await check(model, real)
  }
  toString = () => `edit(${this.file}, ${JSON.stringify(this.line)})`
}

it("status life cycle: runs, crashes, resumes and a person's edits, in any order, keep the path, the keys and every byte of theirs", async () => {
  const commands = [
    fc
      .tuple(
        fc.option(fc.integer({ min: 1, max: 6 }), { nil: undefined }),
        fc.option(fc.constantFrom('\nWritten while the agent worked.\n'), { nil: undefined }),
      )
      .map(([crashAt, edit]) => new Run(crashAt, edit)),
    fc
      .tuple(
        fc.constantFrom<keyof typeof plan>('draft.md', 'review.md', 'send.md'),
        fc.constantFrom('\nA note of mine.\n', '\n> [!tip] kept\n', '\nstatus of the review: fine\n'),
      )
      .map(([file, line]) => new Edit(file, line)),
  ]
  await fc.assert(
    fc.asyncProperty(fc.commands(commands, { maxCommands: 8 }), async (cmds) => {
      const real: Real = { vault: await writeVault(plan), keys: new Map(), result: undefined }
      const model: Model = { edits: {}, finished: false }
      await fc.asyncModelRun(() => ({ model, real }), cmds)
      // Whatever happened, one more run (without crashes) completes the same path.
      await new Run(undefined).run(model, real)
    }),
    { numRuns: 40 },
  )
}, 120_000)

it('an edit made to a resumed note while it is worked again survives its status update', async () => {
  const vault = await writeVault(plan)
  await runPlan(vault, { query: 'q', llm: judge, fsync: false, work: async () => Promise.reject(new Error('crash')) }).catch(() => undefined)
  const draft = join(vault, 'draft.md')
  let edited = false
  await runPlan(vault, {
    query: 'q',
    llm: judge,
    fsync: false,
    work: async (step) => {
      if (!edited) {
        edited = true
        await writeFile(draft, `${await readFile(draft, 'utf8')}\nWritten while the agent worked.\n`)
      }
      return `${step.node.id} v${step.visit}`
    },
  })
  expect(await readFile(draft, 'utf8')).toBe(
    '---\ntype: start\ntags: [writing] # mine\nstatus: done\n---\n# Draft\n\nWrite it.\n\n## Next\n- [[review]]\n\nWritten while the agent worked.\n',
  )
})
