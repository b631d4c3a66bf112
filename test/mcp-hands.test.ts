import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { memoryClient } from './helpers/mcp.js'
import { note, read, tempDir, writeVault } from './helpers/vault.js'

/** A root holding the vault `survey`: a start note, `research` with two branches at once (`web`, `papers`), a report. */
async function surveyRoot(): Promise<string> {
  const root = await tempDir()
  await writeVault(
    {
      'survey/start.md': note({ front: { type: 'start' }, title: 'Start', body: 'Frame the survey.', next: ['[[research]]'] }),
      'survey/research.md': note({ front: { plan: '[web, papers]' }, title: 'Research', body: 'Both ways.', next: ['[[report]]'] }),
      'survey/report.md': note({ title: 'Report', body: 'Write it up.' }),
      'survey/web/search.md': note({ front: { type: 'start' }, title: 'Search', body: 'Search the web.' }),
      'survey/papers/find.md': note({ front: { type: 'start' }, title: 'Find', body: 'Find papers.' }),
    },
    root,
  )
  return root
}

const where = (step: { plan?: string; node: { id: string } }) => (step.plan ? `${step.plan}/${step.node.id}` : step.node.id)

describe('many hands over MCP (SDK clients, one agent per session)', () => {
  it('two clients work the two branches at once, a third is told busy, and the run completes', async () => {
    const root = await surveyRoot()
    const [ada, bob, cy] = [await memoryClient(root, { name: 'ada' }), await memoryClient(root, { name: 'bob' }), await memoryClient(root, { name: 'cy' })]
    const first = await ada.call('plan_next', { vault: 'survey', query: 'solar power' })
    expect(first.agent).toMatch(/^ada-[0-9a-f]{6}$/)
    const web = (await ada.call('plan_finish', { vault: 'survey', key: first.step.key, output: 'framed' })).step
    const papers = (await bob.call('plan_next', { vault: 'survey' })).step
    expect([where(web), where(papers)]).toEqual(['web/search', 'papers/find'])
    const busy = (await cy.call('plan_next', { vault: 'survey' })).step
    expect(busy.kind).toBe('busy')
    expect(busy.claims.map((item: { node: string; claim: { agent: string } }) => [item.node, item.claim.agent.split('-')[0]])).toEqual([
      ['web/search', 'ada'],
      ['papers/find', 'bob'],
    ])
    // Both hand in at once; whoever finishes last finds the join and the report.
    const [a, b] = await Promise.all([
      ada.call('plan_finish', { vault: 'survey', key: web.key, output: 'ten hits' }),
      bob.call('plan_finish', { vault: 'survey', key: papers.key, output: 'three papers' }),
    ])
    const report = [a.step, b.step].find((step) => step.kind === 'work')
    expect(where(report)).toBe('report')
    const other = [a.step, b.step].find((step) => step !== report)
    expect(other.kind).toBe('busy')
    const done = (await (report === a.step ? ada : bob).call('plan_finish', { vault: 'survey', key: report.key, output: 'the report' })).step
    expect(done.kind).toBe('completed')
  })

  it('plan_next shows the frontier beside the claimed step: the other notes ready now, ids only, without what other agents hold', async () => {
    const root = await surveyRoot()
    const ada = await memoryClient(root, { name: 'ada' })
    const start = await ada.call('plan_next', { vault: 'survey', query: 'solar power' })
    expect(start).not.toHaveProperty('ready')
    await ada.call('plan_finish', { vault: 'survey', key: start.step.key, output: 'framed' })
    const search = await ada.call('plan_next', { vault: 'survey' })
    expect([where(search.step), search.ready]).toEqual(['web/search', ['papers/find']])
    const bob = await memoryClient(root, { name: 'bob' })
    expect((await bob.call('plan_next', { vault: 'survey' })).ready).toBeUndefined()
    expect(await ada.call('plan_next', { vault: 'survey' })).not.toHaveProperty('ready')
  })

  it('a client whose session closed: its claim is taken by the next agent at once, with the same key', async () => {
    const root = await surveyRoot()
    const gone = await memoryClient(root, { name: 'gone' })
    const claimed = (await gone.call('plan_next', { vault: 'survey', query: 'solar power' })).step
    const other = await memoryClient(root, { name: 'other' })
    const busy = await other.call('plan_next', { vault: 'survey' })
    expect([busy.step.kind, busy.agent]).toEqual(['busy', expect.stringMatching(/^other-/)])
    // createMcpServer's close() lets go of what the session was handed (a killed session's claims wait for their lease: test/mcp-sessions.test.ts).
    await gone.close()
    const taken = await other.call('plan_next', { vault: 'survey' })
    expect([taken.step.key, taken.step.visit]).toEqual([claimed.key, 1])
  })

  it('plan_defer puts a step behind the other ready work; plan_block waits for a person, plan_decide `unblock` hands on their feedback', async () => {
    const root = await surveyRoot()
    const agent = await memoryClient(root)
    const start = (await agent.call('plan_next', { vault: 'survey', query: 'solar power' })).step
    const search = (await agent.call('plan_finish', { vault: 'survey', key: start.key, output: 'framed' })).step
    const find = (await agent.call('plan_defer', { vault: 'survey', key: search.key, reason: 'the engine is down' })).step
    expect(where(find)).toBe('papers/find')
    const blocked = (await agent.call('plan_block', { vault: 'survey', key: find.key, reason: 'which journals?' })).step
    // The deferred search comes back while papers/find waits for a person.
    expect([where(blocked), blocked.key]).toEqual(['web/search', search.key])
    await agent.call('plan_finish', { vault: 'survey', key: search.key, output: 'ten hits' })
    const waiting = (await agent.call('plan_next', { vault: 'survey' })).step
    expect(waiting).toMatchObject({ kind: 'waiting', waiting: [{ kind: 'blocked', node: 'papers/find', choices: ['unblock'], reason: 'which journals?' }] })
    const person = await memoryClient(root, { name: 'person' })
    const unblocked = await person.call('plan_decide', { vault: 'survey', node: 'papers/find', edge: 'unblock', feedback: 'Nature and Science.' })
    // A person's decision claims nothing: the step is ready for whichever agent asks next, here another one.
    expect(unblocked).toMatchObject({ next: { kind: 'work', node: 'papers/find', visit: 1 } })
    expect(unblocked).not.toHaveProperty('step')
    const other = await memoryClient(root, { name: 'other' })
    const back = await other.call('plan_next', { vault: 'survey' })
    expect([where(back.step), back.step.key, back.agent]).toEqual(['papers/find', find.key, expect.stringMatching(/^other-/)])
    const feedback = back.step.outputs.filter((output: { feedback?: boolean }) => output.feedback)
    expect(feedback).toMatchObject([{ node: 'find', visit: 1, feedback: true }])
    expect(feedback[0].output).toContain('Nature and Science.')
  })

  it('a person unblocks a blocked step by setting `status: pending` in its note: the next plan_next claims it with the same key', async () => {
    const root = await surveyRoot()
    const agent = await memoryClient(root)
    const start = (await agent.call('plan_next', { vault: 'survey', query: 'solar power' })).step
    const waiting = (await agent.call('plan_block', { vault: 'survey', key: start.key, reason: 'which sun?' })).step
    expect(waiting).toMatchObject({ kind: 'waiting', waiting: [{ kind: 'blocked', node: 'start', reason: 'which sun?' }] })
    const file = join(root, 'survey', 'start.md')
    await writeFile(file, (await readFile(file, 'utf8')).replace('status: waiting', 'status: pending'))
    const again = (await agent.call('plan_next', { vault: 'survey' })).step
    expect([again.kind, again.key]).toEqual(['work', start.key])
  })

  it('plan_edit adds a note the run then reaches; an invalid edit writes nothing', async () => {
    const root = await surveyRoot()
    const agent = await memoryClient(root)
    await agent.call('plan_next', { vault: 'survey', query: 'solar power' })
    const before = await read(join(root, 'survey'), 'report.md')
    const refused = await agent.refusal('plan_edit', { vault: 'survey', document: '## report\nWrite it.\n### Next\n- [[nowhere]]\n' })
    expect(refused.error.code).toBe('plan-invalid')
    expect(await read(join(root, 'survey'), 'report.md')).toBe(before)
    const edited = await agent.call('plan_edit', {
      vault: 'survey',
      document: '## report\nWrite it up.\n### Next\n- [[publish]]\n\n## publish\nPublish it.\n',
    })
    expect(edited).toMatchObject({ written: ['report', 'publish'], removed: [] })
    expect(await read(join(root, 'survey'), 'publish.md')).toContain('Publish it.')
    expect(await read(join(root, 'survey'), '00_plan-trace/trace.md')).toContain('vaultplan:edit')
  })
})
