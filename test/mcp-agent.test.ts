import { join } from 'node:path'
import { ResourceUpdatedNotificationSchema } from '@modelcontextprotocol/sdk/types.js'
import { describe, expect, it } from 'vitest'
import { decide, RunStateError } from 'vaultplan'
import { memoryClient, stdioClient, until } from './helpers/mcp.js'
import { edit, note, read, tempDir, writeVault } from './helpers/vault.js'

/*
 * What an agent driving a plan over MCP meets, beyond the walk itself
 * (issue 28): arguments it may pass, calls it may repeat, refusals it can
 * act on. The server of src/ in this process, unless a test needs the CLI.
 */

/** A root with the vault `p`: `a` -> `b` -> `c`. */
async function chain() {
  const root = await tempDir()
  await writeVault(
    {
      'p/a.md': note({ front: { type: 'start' }, title: 'A', next: ['[[b]]'] }),
      'p/b.md': note({ title: 'B', next: ['[[c]]'] }),
      'p/c.md': note({ title: 'C' }),
    },
    root,
  )
  return root
}

/** A root with the vault `h`: `a` is decided by a person, along `yes`, `no` or `maybe`. */
async function personDecides() {
  const root = await tempDir()
  await writeVault(
    {
      'h/a.md': note({ front: { type: 'start', judge: 'human' }, title: 'A', next: ['yes -> [[y]]', 'no -> [[n]]', 'maybe -> [[m]]'] }),
      'h/y.md': note({ title: 'Y' }),
      'h/n.md': note({ title: 'N' }),
      'h/m.md': note({ title: 'M' }),
    },
    root,
  )
  return root
}

const libraryWords = /nextStep|completeStep|runPlan|run the vault again|the plan's maxSteps/

describe('plan_next', () => {
  it('takes maxSteps (recorded with the run: plan_finish keeps it) and fresh, and refuses an argument it does not know', async () => {
    const root = await chain()
    const agent = await memoryClient(root)
    expect(await agent.refuse('plan_next', { vault: 'p', query: 'q', maxStep: 1 })).toContain(
      'plan_next takes no argument `maxStep`; it takes `vault`, `query`, `fresh`, `maxSteps`',
    )
    let { step } = await agent.call('plan_next', { vault: 'p', query: 'q', maxSteps: 1 })
    expect(step).toMatchObject({ kind: 'work', vault: 'p', node: { id: 'a' } })
    // A work step names its run in its key only.
    const first = step.key.split(':')[0]
    ;({ step } = await agent.call('plan_finish', { vault: 'p', key: step.key, output: 'a done' }))
    expect(step).toEqual({
      kind: 'stopped',
      vault: 'p',
      runId: first,
      stop: { budget: 'maxSteps', node: 'b', visit: 1, loop: [] },
      reason: 'The run used its step budget (`maxSteps`) at `b`.',
      todo: 'Call plan_next with a larger `maxSteps` to go on.',
    })
    ;({ step } = await agent.call('plan_next', { vault: 'p', maxSteps: 5 }))
    expect(step).toMatchObject({ kind: 'work', key: `${first}:b:1`, step: 2, node: { id: 'b' } })
    ;({ step } = await agent.call('plan_next', { vault: 'p', fresh: true, query: 'again' }))
    expect(step).toMatchObject({ kind: 'work', step: 1, query: 'again', node: { id: 'a' } })
    expect(step.key.split(':')[0]).not.toBe(first)
  })

  it('takes its default step budget from `vaultplan mcp --max-steps`', async () => {
    const root = await chain()
    const agent = await stdioClient(root, {}, { args: ['--max-steps', '1'] })
    const { step } = await agent.call('plan_next', { vault: 'p', query: 'q' })
    expect((await agent.call('plan_finish', { vault: 'p', key: step.key, output: 'a done' })).step).toMatchObject({
      kind: 'stopped',
      stop: { budget: 'maxSteps' },
    })
  })
})

describe('plan_finish', () => {
  it('repeated with the key and output it saved answers the current step and says so; another output is stale', async () => {
    const root = await chain()
    const agent = await memoryClient(root)
    const { step: a } = await agent.call('plan_next', { vault: 'p', query: 'q' })
    const { step: b } = await agent.call('plan_finish', { vault: 'p', key: a.key, output: 'a done' })
    const trace = await read(join(root, 'p'), '00_plan-trace/trace.md')
    // The answer was lost, so it comes whole, the run's query too.
    expect(await agent.call('plan_finish', { vault: 'p', key: a.key, output: 'a done' })).toEqual({
      step: { ...b, query: 'q' },
      agent: expect.stringMatching(/-[0-9a-f]{6}$/),
      saved: true,
      note: 'This output of `key` was saved by an earlier call: the step above is where the run is now.',
    })
    expect(await read(join(root, 'p'), '00_plan-trace/trace.md')).toBe(trace)
    expect(await agent.refusal('plan_finish', { vault: 'p', key: a.key, output: 'something else' })).toMatchObject({
      error: { code: 'stale-step', data: { pending: { key: b.key, node: 'b' } } },
    })
  })

  it('says a choice passed at a note a person decides was ignored', async () => {
    const agent = await memoryClient(await personDecides())
    const { step } = await agent.call('plan_next', { vault: 'h', query: 'q' })
    const finished = await agent.call('plan_finish', { vault: 'h', key: step.key, output: 'asked', choice: 'yes' })
    expect(finished).toMatchObject({ step: { kind: 'waiting', waiting: [{ node: 'a' }] }, note: '`choice` was ignored: a person decides `a` (judge: human).' })
  })
})

describe('two boxes ticked by hand', () => {
  it('decide along one of them unticks the others; along another box it is refused, naming the way out', async () => {
    const root = await personDecides()
    const agent = await memoryClient(root)
    const { step } = await agent.call('plan_next', { vault: 'h', query: 'q' })
    await agent.call('plan_finish', { vault: 'h', key: step.key, output: 'asked' })
    const vault = join(root, 'h')
    await edit(vault, 'a.md', (text) => text.replace('- [ ] yes', '- [x] yes').replace('- [ ] no', '- [x] no'))

    const stuck = await agent.refusal('plan_next', { vault: 'h' })
    expect(stuck.error).toMatchObject({ code: 'ambiguous-decision', data: { node: 'a', file: 'a.md', ticked: ['yes', 'no'] } })
    expect(stuck.error.todo).toBe(
      'Ask the person which they meant, then call plan_decide with `node` `a` and `edge` one of `yes`, `no`: the other boxes are unticked. Or they untick the boxes they do not mean in `a.md`.',
    )
    const refused = await agent.refusal('plan_decide', { vault: 'h', node: 'a', edge: 'maybe' })
    expect(refused.error.code).toBe('ambiguous-decision')
    expect(refused.error.message).toContain('`edge` names another box')

    const before = await read(vault, 'a.md')
    await decide(vault, 'a', { edge: 'no' })
    expect(await read(vault, 'a.md')).toBe(before.replace('- [x] yes', '- [ ] yes'))
    expect((await agent.call('plan_next', { vault: 'h' })).step).toMatchObject({ kind: 'work', node: { id: 'n' } })
  })

  it('plan_decide along one of them says which it unticked, and the trace records it with the decision', async () => {
    const root = await personDecides()
    const agent = await memoryClient(root)
    const { step } = await agent.call('plan_next', { vault: 'h', query: 'q' })
    await agent.call('plan_finish', { vault: 'h', key: step.key, output: 'asked' })
    await edit(join(root, 'h'), 'a.md', (text) => text.replace('- [ ] yes', '- [x] yes').replace('- [ ] no', '- [x] no'))

    const decided = await agent.call('plan_decide', { vault: 'h', node: 'a', edge: 'no' })
    expect(decided).toMatchObject({ next: { kind: 'work', node: 'n' }, decided: { node: 'a', edge: 'no', unticked: ['yes'] } })
    // The next call follows the decision (and claims `n` for whoever makes it).
    expect((await agent.call('plan_next', { vault: 'h' })).step).toMatchObject({ kind: 'work', node: { id: 'n' } })
    const { hops } = await agent.call('plan_status', { vault: 'h' })
    expect(hops.find((hop: { node: string }) => hop.node === 'a')).toMatchObject({ to: 'n', choice: 'no', decidedBy: 'human', unticked: ['yes'] })
  })

  it('decide along a box that is not ticked is refused by the library too', async () => {
    const root = await personDecides()
    const agent = await memoryClient(root)
    const { step } = await agent.call('plan_next', { vault: 'h', query: 'q' })
    await agent.call('plan_finish', { vault: 'h', key: step.key, output: 'asked' })
    const vault = join(root, 'h')
    await edit(vault, 'a.md', (text) => text.replace('- [ ] yes', '- [x] yes').replace('- [ ] no', '- [x] no'))
    const error = await decide(vault, 'a', { edge: 'maybe' }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(RunStateError)
    expect(error).toMatchObject({ code: 'ambiguous-decision', data: { ticked: ['yes', 'no'] } })
  })
})

describe('the ledger tools', () => {
  it('plan_invalidate twice writes once; an unknown id is refused with a code and no path; plan_revalidate and plan_ledger', async () => {
    const root = await chain()
    const agent = await memoryClient(root)
    const { id } = await agent.call('plan_assume', { vault: 'p', text: 'The API is stable.' })
    expect(await agent.call('plan_invalidate', { vault: 'p', id, reason: 'it changed' })).toEqual({ vault: 'p', id, valid: false })
    const ledger = await read(join(root, 'p'), '00_plan-trace/ledger.md')
    expect(await agent.call('plan_invalidate', { vault: 'p', id, reason: 'it changed' })).toEqual({
      vault: 'p',
      id,
      valid: false,
      note: '`A1` was invalidated already; nothing was written.',
    })
    expect(await read(join(root, 'p'), '00_plan-trace/ledger.md')).toBe(ledger)
    const unknown = await agent.refusal('plan_invalidate', { vault: 'p', id: 'A9', reason: 'why' })
    expect(unknown).toEqual({
      error: {
        code: 'unknown-assumption',
        message: 'The ledger of `p` has no assumption `A9`; it has `A1`.',
        data: { id: 'A9', assumptions: ['A1'] },
        todo: 'Pass `id` as one of those; plan_ledger lists the entries.',
      },
    })
    expect(await agent.call('plan_revalidate', { vault: 'p', id })).toEqual({ vault: 'p', id, valid: true })
    const read_ = await agent.call('plan_ledger', { vault: 'p' })
    expect(read_).toMatchObject({ vault: 'p', facts: [], decisions: [], assumptions: [{ id, text: 'The API is stable.', valid: true }] })
    expect(read_.assumptions[0].changes.map((change: { valid: boolean }) => change.valid)).toEqual([false, true])
  })
})

describe('plan_fork and plan_search', () => {
  it('fork a run at a step into a new vault that goes on from there; a search hit carries a readable uri', async () => {
    const root = await chain()
    const agent = await memoryClient(root)
    let { step } = await agent.call('plan_next', { vault: 'p', query: 'q' })
    ;({ step } = await agent.call('plan_finish', { vault: 'p', key: step.key, output: 'a found the zephyrine answer' }))
    await agent.call('plan_finish', { vault: 'p', key: step.key, output: 'b done' })
    expect(await agent.call('plan_fork', { vault: 'p', step: 1, into: 'forks/p1' })).toEqual({
      vault: 'forks/p1',
      from: { vault: 'p', step: 1 },
      todo: 'Call plan_next with `vault` `forks/p1` to go on from step 1.',
    })
    expect((await agent.call('plan_next', { vault: 'forks/p1' })).step).toMatchObject({ kind: 'work', step: 2, node: { id: 'b' } })
    expect((await agent.refusal('plan_fork', { vault: 'p', step: 1, into: 'forks/p1' })).error.code).toBe('exists')
    expect((await agent.refusal('plan_fork', { vault: 'p', step: 9, into: 'forks/p9' })).error.code).toBe('bad-step')

    const { hits } = await agent.call('plan_search', { query: 'zephyrine' })
    expect(hits.length).toBeGreaterThan(0)
    for (const hit of hits) {
      const { contents } = await agent.client.readResource({ uri: hit.uri })
      expect((contents[0] as { text: string }).text).toContain('zephyrine')
    }
  })
})

describe('what the other tools report', () => {
  it('plan_list shows a handed-out step as `ready` with its claim beside; plan_status names subplan folders relative to the vault', async () => {
    const root = await tempDir()
    await writeVault(
      {
        'r/outline.md': note({ front: { type: 'start' }, title: 'Outline', next: ['[[research]]'] }),
        'r/research.md': note({ front: { plan: 'research' }, title: 'Research' }),
        'r/research/find.md': note({ front: { type: 'start' }, title: 'Find' }),
      },
      root,
    )
    const agent = await memoryClient(root)
    const { step } = await agent.call('plan_next', { vault: 'r', query: 'q' })
    // A step handed out is the run's normal state: `ready`, with the claim beside the phase.
    expect((await agent.call('plan_list')).vaults).toEqual([
      { vault: 'r', phase: 'ready', query: 'q', node: 'outline', claims: [{ node: 'outline', agent: step.agent ?? expect.any(String) }] },
    ])
    await agent.call('plan_finish', { vault: 'r', key: step.key, output: 'outlined' })
    const status = await agent.call('plan_status', { vault: 'r' })
    expect(JSON.stringify(status)).not.toContain(root)
    // A subplan's notes after the note that runs them, by their paths from the vault.
    expect(status.nodes.map((node: { id: string }) => node.id)).toEqual(['outline', 'research', 'research/find'])
  })

  it('tells a subscriber whether a note was changed by the server or by someone else, a person’s edit right after a call included', async () => {
    const root = await chain()
    const agent = await memoryClient(root)
    const seen: { uri: string; writer: unknown }[] = []
    agent.client.setNotificationHandler(ResourceUpdatedNotificationSchema, (notification) => {
      seen.push({ uri: notification.params.uri, writer: notification.params._meta?.writer })
    })
    await agent.client.subscribeResource({ uri: 'vaultplan://p/a.md' })
    await agent.call('plan_next', { vault: 'p', query: 'q' })
    await until(() => seen.length > 0, 'the claim to be told')
    expect(seen).toEqual([{ uri: 'vaultplan://p/a.md', writer: 'vaultplan' }])
    // A person edits the note at once, well within half a second of the call: told by what was written, it is theirs.
    await edit(join(root, 'p'), 'a.md', (text) => `${text}\nA person's line.\n`)
    await until(() => seen.length > 1, 'the edit to be told')
    expect(seen[1]).toEqual({ uri: 'vaultplan://p/a.md', writer: 'other' })
  })

  it('refusals speak the tools’ language and name a way out', async () => {
    const root = await personDecides()
    const agent = await memoryClient(root)
    const { step } = await agent.call('plan_next', { vault: 'h', query: 'q' })
    const refusals = [
      await agent.refusal('plan_next', { vault: 'h', query: 'another' }),
      await agent.refusal('plan_finish', { vault: 'h', key: 'old', output: 'o' }),
      await agent.refusal('plan_decide', { vault: 'h', node: 'a', edge: 'yes' }),
    ]
    await agent.call('plan_finish', { vault: 'h', key: step.key, output: 'asked' })
    refusals.push(await agent.refusal('plan_decide', { vault: 'h', node: 'a', edge: 'perhaps' }))
    for (const { error } of refusals) {
      expect(`${error.message} ${error.todo}`).not.toMatch(libraryWords)
      expect(JSON.stringify(error)).not.toContain(root)
      expect(error.todo).toMatch(/plan_\w+|a person/i)
    }
    expect(refusals[0].error.todo).toContain('`fresh: true`')
    expect(refusals[3].error).toMatchObject({ code: 'bad-choice', todo: 'Call plan_decide with `edge` one of `yes`, `no`, `maybe`.' })
    expect(refusals[3].error.message).not.toContain('choice')
  })
})
