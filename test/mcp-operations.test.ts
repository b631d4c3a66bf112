import { describe, expect, it } from 'vitest'
import { memoryClient, type TestClient } from './helpers/mcp.js'
import { tempDir } from './helpers/vault.js'

/*
 * The operations a coding agent expects from plan tools (issue 41's list,
 * with create, validate, a person's decision, invalidate and fork beside
 * it: 32), each tried as an agent would, through the SDK client, counting
 * the requests it takes: one natural call each, at most two awkward (two
 * calls), none impossible (each checks that it did what it says).
 */

/** A queue: a -> b -> c. */
const QUEUE = '## a\ntype: start\nDo a.\n### Next\n- [[b]]\n\n## b\nDo b.\n### Next\n- [[c]]\n\n## c\nDo c.\n'
/** Two branches at once, then a report. */
const SURVEY = `## research
type: start
plan: [web, papers]
Research both ways.
### Next
- [[report]]

## web/search
type: start
Search the web.

## papers/find
type: start
Find papers.

## report
Write the report.
`
const PROPOSAL = '## outline\ntype: start\nOutline the post.\n### Next\n- [[write]]\n\n## write\nWrite the post.\n'

/** Counts the requests (tool calls and resource reads) of every client given to it. */
function counter(): { add(client: TestClient): TestClient; requests(): number } {
  const clients: TestClient[] = []
  let reads = 0
  return {
    add(client) {
      const read = client.client.readResource.bind(client.client)
      client.client.readResource = (...args: Parameters<typeof read>) => {
        reads++
        return read(...args)
      }
      clients.push(client)
      return client
    },
    requests: () => clients.reduce((sum, client) => sum + client.calls.length, reads),
  }
}

describe('the operations of plan tools an agent calls, each one natural call', () => {
  it('32 operations: none impossible, at most two take two calls', async () => {
    const root = await tempDir()
    const { add, requests } = counter()
    const agent = add(await memoryClient(root, { name: 'ada' }))
    const calls: Record<string, number> = {}
    /** Runs one operation and notes how many requests it took. */
    const op = async <T>(name: string, body: () => Promise<T>): Promise<T> => {
      const before = requests()
      const result = await body()
      calls[name] = requests() - before
      return result
    }
    const q = 'queue'

    await op('create a plan', () => agent.call('plan_create', { vault: q, document: QUEUE }))
    expect((await op('validate', () => agent.call('plan_validate', { vault: q }))).valid).toBe(true)
    const a = (await op('next', () => agent.call('plan_next', { vault: q, query: 'ship it' }))).step
    expect(a.node.id).toBe('a')
    await op('add to the queue', () => agent.call('plan_edit', { vault: q, document: '## lint\nRun the linter.\n', after: 'b' }))
    await op('reorder', () => agent.call('plan_edit', { vault: q, document: '## c\n', after: 'a' }))
    await op('add a note', () => agent.call('plan_edit', { vault: q, document: '## docs\nWrite the docs.\n', after: 'lint' }))
    await op('edit a note', () => agent.call('plan_edit', { vault: q, document: '## docs\nWrite the docs, with examples.\n' }))
    await op('remove a note', () => agent.call('plan_edit', { vault: q, document: '## lint\n### Next\n', remove: ['docs'] }))
    expect((await agent.call('plan_status', { vault: q })).nodes.map((node: { id: string }) => node.id)).toEqual(['a', 'c', 'b', 'lint'])
    const fact = await op('facts', () => agent.call('plan_fact', { vault: q, text: 'The build takes 3 minutes.' }))
    const assumed = await op('assumptions', () => agent.call('plan_assume', { vault: q, text: 'Node 20 is enough.' }))
    await op('decisions', () => agent.call('plan_decision', { vault: q, text: 'Ship on Friday.', reason: 'the release train' }))
    await op('invalidate an assumption', () => agent.call('plan_invalidate', { vault: q, id: assumed.id, reason: 'a dependency needs 22' }))
    await op('revalidation', () => agent.call('plan_revalidate', { vault: q, id: assumed.id, reason: 'pinned an older one' }))
    expect((await op('the ledger', () => agent.call('plan_ledger', { vault: q }))).facts).toMatchObject([{ id: fact.id }])
    const split = await op('decompose the step in hand', () =>
      agent.call('plan_edit', { vault: q, document: '## a\nplan: a\n\n## a/plan\ntype: start\nPlan a.\n### Next\n- [[do]]\n\n## a/do\nDo it.\n' }),
    )
    expect(split.step).toMatchObject({ plan: 'a', node: { id: 'plan' } })
    const deferred = await op('defer', () => agent.call('plan_defer', { vault: q, key: split.step.key, reason: 'later' }))
    // Nothing else is ready: the step comes back.
    expect(deferred.step.key).toBe(split.step.key)
    const done = await op('done with a summary', () => agent.call('plan_finish', { vault: q, key: split.step.key, output: 'Planned: two steps.' }))
    expect(done.step.node.id).toBe('do')
    await op('status', () => agent.call('plan_status', { vault: q }))
    expect((await op('a picture', () => agent.call('plan_graph', { vault: q }))).picture).toContain('flowchart')
    const blocked = await op('block a note', () => agent.call('plan_block', { vault: q, key: done.step.key, reason: 'which server?' }))
    expect(blocked.step.kind).toBe('waiting')
    const person = add(await memoryClient(root, { name: 'person' }))
    await op('a person decides a note', () => person.call('plan_decide', { vault: q, node: 'a/do', edge: 'unblock', feedback: 'The staging one.' }))
    await agent.close()
    // A new session of the client (after a lost context): the step of the one that ended is taken at once.
    const again = add(await memoryClient(root, { name: 'ada' }))
    const resumed = await op('resume a session', () => again.call('plan_next', { vault: q }))
    expect(resumed.step).toMatchObject({ key: done.step.key, node: { id: 'do' } })
    const finished = await again.call('plan_finish', { vault: q, key: resumed.step.key, output: 'Done on staging.' })
    expect((await op('search history', () => again.call('plan_search', { query: 'staging' }))).hits.length).toBeGreaterThan(0)
    await op('fork a run', () => again.call('plan_fork', { vault: q, step: finished.step.step - 1, into: 'queue-again' }))

    await again.call('plan_create', { vault: 'survey', document: SURVEY })
    const bob = add(await memoryClient(root, { name: 'bob' }))
    const first = await op('several agents at once', async () => {
      const [one, two] = await Promise.all([again.call('plan_next', { vault: 'survey', query: 'solar' }), bob.call('plan_next', { vault: 'survey' })])
      return [one.step, two.step]
    })
    // Two requests, one for each agent: each agent's call is its own one call.
    calls['several agents at once']! /= 2
    expect(first.map((step: { plan?: string }) => step.plan).sort()).toEqual(['papers', 'web'])
    const cy = await memoryClient(root, { name: 'cy' })
    await cy.call('plan_create', { vault: 'survey2', document: SURVEY })
    const frontier = await op('the frontier', () => again.call('plan_next', { vault: 'survey2', query: 'wind' }))
    expect(frontier.ready).toEqual(['papers/find'])

    const proposed = await op('propose', () => again.call('plan_propose', { vault: 'post', query: 'A post', document: PROPOSAL }))
    const page = await op('a review page', () => again.client.readResource({ uri: proposed.proposal }))
    expect((page.contents[0] as { text: string }).text).toContain('- [ ] approve')
    await person.call('plan_decide', { vault: 'post', node: 'proposal', edge: 'revise', feedback: 'Outline it first.' })
    await op('revise with versions', () =>
      again.call('plan_propose', { vault: 'post', query: 'A post', document: PROPOSAL.replace('Write the post.', 'Write it.') }),
    )
    const listed = await op('list proposals with their versions', () => again.call('plan_list'))
    expect(listed.vaults.find((row: { vault: string }) => row.vault === 'post').proposal).toMatchObject({ version: 2, versions: [{ version: 1 }] })
    await op('approve', () => person.call('plan_decide', { vault: 'post', node: 'proposal', edge: 'approve' }))
    await again.call('plan_propose', { vault: 'post2', query: 'Another post', document: PROPOSAL })
    await op('decline', () => person.call('plan_decide', { vault: 'post2', node: 'proposal', edge: 'decline' }))

    const names = Object.keys(calls)
    expect(names).toHaveLength(32)
    const awkward = names.filter((name) => calls[name]! > 1)
    console.log(`operations: ${names.length}, one call: ${names.length - awkward.length}, awkward: ${awkward.join(', ') || 'none'}`)
    expect(awkward.length).toBeLessThanOrEqual(2)
    // Today every one is one call: pinned, so an operation that takes a second call is seen.
    expect(calls).toEqual(Object.fromEntries(names.map((name) => [name, 1])))
  })
})
