import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { memoryClient } from './helpers/mcp.js'
import { linear } from './helpers/plans.js'
import { branchedPlan } from './helpers/subplans.js'
import { read, tempDir, vaultBytes, writeVault } from './helpers/vault.js'

/** A root holding the vault `p`: a -> b -> c. */
async function planRoot(): Promise<string> {
  const root = await tempDir()
  await writeVault(linear(), join(root, 'p'))
  return root
}

/** `a` split into the subplan `a/`: check, then fix. */
const SPLIT = '## a\nplan: a\n\n## a/check\ntype: start\nCheck what a needs.\n### Next\n- [[fix]]\n\n## a/fix\nFix it.\n'

describe('decomposing the step in hand (plan_edit)', () => {
  it('the note gains `plan:` and the folder its notes, as one edit; the claim moves to the subplan’s first note, and the run goes on through it', async () => {
    const root = await planRoot()
    const ada = await memoryClient(root, { name: 'ada' })
    const a = (await ada.call('plan_next', { vault: 'p', query: 'q' })).step
    const before = await read(join(root, 'p'), 'a.md')
    const split = await ada.call('plan_edit', { vault: 'p', document: SPLIT })
    expect(split).toMatchObject({
      written: ['a', 'a/check', 'a/fix'],
      step: { kind: 'work', plan: 'a', node: { id: 'check', body: 'Check what a needs.' } },
    })
    // Nothing a person wrote is lost: the note keeps its title, body and edges, and gains the knob; its copy is kept.
    expect(await read(join(root, 'p'), 'a.md')).toBe(before.replace('status: active\n', 'status: active\nplan: a\n'))
    expect(await read(join(root, 'p'), '00_plan-trace/edits/1/a.md')).toBe(before)
    // The claim is the agent's: its next plan_next returns it, another agent is told busy.
    expect((await ada.call('plan_next', { vault: 'p' })).step).toMatchObject({ key: split.step.key, node: { id: 'check' } })
    const bob = await memoryClient(root, { name: 'bob' })
    expect((await bob.call('plan_next', { vault: 'p' })).step).toMatchObject({ kind: 'busy', claims: [{ node: 'a/check' }] })
    const fix = (await ada.call('plan_finish', { vault: 'p', key: split.step.key, output: 'checked' })).step
    expect(fix).toMatchObject({ plan: 'a', node: { id: 'fix' } })
    const b = (await ada.call('plan_finish', { vault: 'p', key: fix.key, output: 'fixed' })).step
    expect(b).toMatchObject({ kind: 'work', node: { id: 'b' } })
    expect(a.key).not.toBe(b.key)
    // The step `a` was claimed with went to no work (its subplan's took the next ones): a fork at the last hop
    // plan_status lists still keeps what was done up to it, and goes on at `b`.
    const { hops } = await ada.call('plan_status', { vault: 'p' })
    expect(hops.map((hop: { node: string; step: number }) => `${hop.node} ${hop.step}`)).toEqual(['a/check 2', 'a/fix 3', 'a 3'])
    await ada.call('plan_fork', { vault: 'p', step: 3, into: 'q' })
    expect((await ada.call('plan_next', { vault: 'q' })).step).toMatchObject({ kind: 'work', node: { id: 'b' } })
  })

  it('the claim moves to the subplan even when other work is free before it (a branch another session let go of)', async () => {
    const root = await tempDir()
    await writeVault(branchedPlan(), join(root, 's'))
    const bob = await memoryClient(root, { name: 'bob' })
    const start = (await bob.call('plan_next', { vault: 's', query: 'q' })).step
    const search = (await bob.call('plan_finish', { vault: 's', key: start.key, output: 'framed' })).step
    expect(search).toMatchObject({ plan: 'web', node: { id: 'search' } })
    const ada = await memoryClient(root, { name: 'ada' })
    expect((await ada.call('plan_next', { vault: 's' })).step).toMatchObject({ plan: 'papers', node: { id: 'find' } })
    await bob.close()
    const split = await ada.call('plan_edit', {
      vault: 's',
      document: '## papers/find\nplan: find\n\n## papers/find/query\ntype: start\nWrite the query.\n',
    })
    expect(split.step).toMatchObject({ kind: 'work', plan: 'papers/find', node: { id: 'query' } })
  })

  it('an invalid document writes nothing, and the step stays the agent’s as it was', async () => {
    const root = await planRoot()
    const ada = await memoryClient(root, { name: 'ada' })
    const a = (await ada.call('plan_next', { vault: 'p', query: 'q' })).step
    const before = await vaultBytes(join(root, 'p'))
    const refused = await ada.refusal('plan_edit', { vault: 'p', document: '## a\nplan: a\n\n## a/check\nCheck it.\n### Next\n- [[nowhere]]\n' })
    expect(refused.error).toMatchObject({ code: 'plan-invalid', todo: expect.stringContaining('nothing was written') })
    expect(await vaultBytes(join(root, 'p'))).toEqual(before)
    expect((await ada.call('plan_next', { vault: 'p' })).step).toMatchObject({ key: a.key, node: { id: 'a' } })
  })

  it('another agent’s step, and a section that would change the text of a step being worked, are still refused (note-in-use)', async () => {
    const root = await planRoot()
    const ada = await memoryClient(root, { name: 'ada' })
    await ada.call('plan_next', { vault: 'p', query: 'q' })
    const bob = await memoryClient(root, { name: 'bob' })
    expect((await bob.refusal('plan_edit', { vault: 'p', document: SPLIT })).error.code).toBe('note-in-use')
    const rewrite = SPLIT.replace('## a\nplan: a\n', '## a\nplan: a\nDo a differently.\n')
    expect((await ada.refusal('plan_edit', { vault: 'p', document: rewrite })).error.code).toBe('note-in-use')
  })
})
