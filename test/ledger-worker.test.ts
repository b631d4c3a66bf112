import { describe, expect, it } from 'vitest'
import { chooseEdge, createWorker, loadPlan, readLedger, recordEntry, invalidate, runPlan, type CallLLM, type StepInput } from 'vaultplan'
import { note, writeVault } from './helpers/vault.js'
import { linear } from './helpers/plans.js'

interface Call {
  prompt: string
  system: string
}

/**
 * A model for the built-in worker: `choose(prompt, n)` answers the n-th tool
 * grid with the name of the tool to call (or nothing), `args` gives each
 * tool's arguments, the work call answers `done`.
 */
function scriptedModel(choose: (prompt: string, n: number) => string | undefined, args: Record<string, unknown>): CallLLM & { calls: Call[] } {
  const calls: Call[] = []
  let grids = 0
  const llm: CallLLM = async (prompt, options) => {
    const system = options.system ?? ''
    calls.push({ prompt, system })
    if (system.includes('which tools')) {
      const wanted = choose(prompt, grids++)
      return [...prompt.matchAll(/^(\d+)\. (\w+):/gm)].map(([, n, name]) => `${n}: ${name === wanted ? 'YES' : 'NO'}`).join('\n')
    }
    if (system.includes('arguments')) {
      const tool = /Call the tool `(\w+)`/.exec(prompt)![1]!
      return JSON.stringify(args[tool])
    }
    return 'done'
  }
  return Object.assign(llm, { calls })
}

/** What the run core hands a worker for a visit of `id` in `vault`, ledger and vault included. */
async function stepIn(vault: string, id: string, step = 4): Promise<StepInput> {
  const node = (await loadPlan(vault)).node(id)!
  return { node, query: 'plan the launch', visit: 1, step, outputs: [], key: `run:${id}:1`, vault, ledger: await readLedger(vault) }
}

const gridNames = (prompt: string) => [...prompt.matchAll(/^\d+\. (\w+):/gm)].map((match) => match[1])

/** a -> b -> c, where `b` names the ledger tools it may use. */
function withTools(tools: string): Record<string, string> {
  return { ...linear(), 'b.md': note({ front: { tools }, title: 'B', body: 'Do b.', next: ['[[c]]'] }) }
}

describe('the built-in worker’s ledger tools', () => {
  it('records a fact and invalidates an assumption through its tools, naming the note and step', async () => {
    const vault = await writeVault(withTools('[record_fact, invalidate_assumption]'))
    await recordEntry(vault, { kind: 'assumption', text: 'The launch is in May.' })
    const order = ['record_fact', 'invalidate_assumption']
    const llm = scriptedModel((_, n) => order[n], {
      record_fact: { text: 'The venue holds 200 people.', reason: 'its booking page' },
      invalidate_assumption: { id: 'A1', reason: 'the launch moved to June' },
    })
    const output = await createWorker(llm)(await stepIn(vault, 'b'))

    expect(output).toBe('done')
    expect(await readLedger(vault)).toEqual({
      facts: [{ id: 'F1', text: 'The venue holds 200 people.', reason: 'its booking page', node: 'b', step: 4, at: expect.any(String) }],
      assumptions: [
        {
          id: 'A1',
          text: 'The launch is in May.',
          valid: false,
          at: expect.any(String),
          changes: [{ valid: false, reason: 'the launch moved to June', node: 'b', step: 4, at: expect.any(String) }],
        },
      ],
      decisions: [],
    })
    const work = llm.calls.at(-1)!.prompt
    expect(work).toContain('Tool call 1: record_fact({"text":"The venue holds 200 people.","reason":"its booking page"})\nResult:\nrecorded as F1')
    expect(work).toContain('Tool call 2: invalidate_assumption({"id":"A1","reason":"the launch moved to June"})\nResult:\nA1 is now invalid')
    // The worker saw the ledger as it stood when the visit began.
    // (fenced as data in the tool-choice prompt, like the outputs)
    expect(llm.calls[0]!.prompt).toMatch(/Recorded in the plan's ledger so far:\n<<<DATA-\w+\nAssumptions \(valid\):\nA1: The launch is in May\./)
  })

  it('offers them only with a vault, scoped by the note’s `tools:`, and not when switched off', async () => {
    const vault = await writeVault({
      ...linear(),
      'scoped.md': note({ front: { tools: '[lookup, record_decision]' }, title: 'Scoped', body: 'Decide.' }),
    })
    const lookup = { name: 'lookup', description: 'look a thing up', schema: (await import('zod')).z.object({}), execute: () => 'found' }

    // A note that names no tools is offered none: no tool grid, only the work call.
    const plain = scriptedModel(() => undefined, {})
    await createWorker(plain)(await stepIn(vault, 'a'))
    expect(plain.calls).toHaveLength(1)

    const named = scriptedModel(() => undefined, {})
    await createWorker(named)(await stepIn(await writeVault(withTools('[record_fact, record_assumption, record_decision, invalidate_assumption]')), 'b'))
    // invalidate_assumption only while an assumption is valid: none is.
    expect(gridNames(named.calls[0]!.prompt)).toEqual(['record_fact', 'record_assumption', 'record_decision'])

    const scoped = scriptedModel(() => undefined, {})
    await createWorker(scoped, { tools: [lookup] })(await stepIn(vault, 'scoped'))
    expect(gridNames(scoped.calls[0]!.prompt)).toEqual(['lookup', 'record_decision'])

    const noVault = scriptedModel(() => undefined, {})
    const { vault: _vault, ...without } = await stepIn(vault, 'scoped')
    await createWorker(noVault)(without)
    expect(noVault.calls.map((call) => call.system)).toEqual(['You carry out one step of a plan at a time and reply with the result of that step.'])

    const off = scriptedModel(() => undefined, {})
    await createWorker(off, { tools: [lookup], ledgerTools: false })(await stepIn(vault, 'scoped'))
    expect(gridNames(off.calls[0]!.prompt)).toEqual(['lookup'])
  })

  it('a caller’s tool of the same name wins over the built-in one', async () => {
    const vault = await writeVault(linear())
    const seen: unknown[] = []
    const own = {
      name: 'record_fact',
      description: 'my own facts',
      schema: (await import('zod')).z.object({ text: (await import('zod')).z.string() }),
      execute: (args: unknown) => seen.push(args),
    }
    const llm = scriptedModel((_, n) => (n === 0 ? 'record_fact' : undefined), { record_fact: { text: 'mine' } })
    await createWorker(llm, { tools: [own] })(await stepIn(vault, 'a'))
    expect(seen).toEqual([{ text: 'mine' }])
    expect(gridNames(llm.calls[0]!.prompt).filter((name) => name === 'record_fact')).toHaveLength(1)
    expect((await readLedger(vault)).facts).toEqual([])
  })

  it('records from inside a real run, through the runner’s lock', async () => {
    const vault = await writeVault(withTools('[record_decision]'))
    const llm = scriptedModel((prompt) => (prompt.includes('This step: B') && !prompt.includes('Tool call 1') ? 'record_decision' : undefined), {
      record_decision: { text: 'Use the small room.', reason: 'fewer than 50 guests' },
    })
    // The built-in worker of runPlan: the run hands it the vault and the ledger of the moment.
    const result = await runPlan(vault, { query: 'q', fsync: false, llm })
    expect(result.status).toBe('completed')
    expect((await readLedger(vault)).decisions).toEqual([
      { id: 'D1', text: 'Use the small room.', reason: 'fewer than 50 guests', node: 'b', step: 2, run: expect.any(String), at: expect.any(String) },
    ])
  })
})

describe('the judge and the ledger', () => {
  it('sees the facts and valid assumptions as data, and never an invalidated one nor the decisions', async () => {
    const vault = await writeVault({
      'review.md': note({ front: { type: 'start' }, title: 'Review', body: 'Check the plan.', next: ['approved -> [[send]]'] }),
      'send.md': note({ title: 'Send', body: 'Send it.' }),
    })
    await recordEntry(vault, { kind: 'fact', text: 'The venue holds 200 people.' })
    await recordEntry(vault, { kind: 'assumption', text: 'The launch is in May.' })
    await recordEntry(vault, { kind: 'assumption', text: 'Guests come by train.' })
    await recordEntry(vault, { kind: 'decision', text: 'Use the small room.' })
    await invalidate(vault, 'A1', 'moved to June')
    const node = (await loadPlan(vault)).node('review')!
    const prompts: string[] = []
    const llm: CallLLM = async (prompt) => {
      prompts.push(prompt)
      return '1: YES'
    }
    await chooseEdge(node, { query: 'q', node, visit: 1, step: 1, output: 'looks fine', outputs: [], ledger: await readLedger(vault) }, llm)
    const fence = /<<<(DATA-[0-9a-f]+)\n/.exec(prompts[0]!)![1]!
    const block = new RegExp(`Facts and valid assumptions recorded in the plan's ledger:\\n<<<${fence}\\n([\\s\\S]*?)\\n${fence}>>>`).exec(prompts[0]!)
    expect(block?.[1]).toBe('Facts:\nF1: The venue holds 200 people.\n\nAssumptions (valid):\nA2: Guests come by train.')
    expect(prompts[0]).not.toContain('The launch is in May.')
    expect(prompts[0]).not.toContain('Use the small room.')

    // Without a ledger, or with an empty one, the prompt has no ledger block.
    await chooseEdge(
      node,
      { query: 'q', node, visit: 1, step: 1, output: 'looks fine', outputs: [], ledger: { facts: [], assumptions: [], decisions: [] } },
      llm,
    )
    expect(prompts[1]).not.toContain("plan's ledger")
  })

  it('clips a long ledger', async () => {
    const vault = await writeVault({
      'review.md': note({ front: { type: 'start' }, title: 'Review', next: ['approved -> [[send]]'] }),
      'send.md': note({ title: 'Send' }),
    })
    for (let index = 0; index < 30; index++) await recordEntry(vault, { kind: 'fact', text: `${index} ${'x'.repeat(400)}` }, { fsync: false })
    const node = (await loadPlan(vault)).node('review')!
    let prompt = ''
    await chooseEdge(
      node,
      { query: 'q', node, visit: 1, step: 1, output: 'o', outputs: [], ledger: await readLedger(vault) },
      async (text) => ((prompt = text), '1: YES'),
    )
    expect(prompt).toContain('F1: 0 xxx')
    expect(prompt).not.toContain('F30: 29')
    expect(prompt).toMatch(/\[\.\.\. \d+ more characters\]/)
  })
})
