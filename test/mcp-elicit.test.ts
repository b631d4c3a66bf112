import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import type { ElicitRequest } from '@modelcontextprotocol/sdk/types.js'
import { memoryClient } from './helpers/mcp.js'
import { note, read, tempDir, writeVault } from './helpers/vault.js'

/** A root holding `post`: draft, then `approve` (a person decides: approved -> send, needs revision -> draft), then send. */
async function approvalRoot(): Promise<string> {
  const root = await tempDir()
  await writeVault(
    {
      'post/draft.md': note({ front: { type: 'start' }, title: 'Draft', body: 'Write it.', next: ['[[approve]]'] }),
      'post/approve.md': note({
        front: { judge: 'human' },
        title: 'Approve',
        body: 'Is it good?',
        next: ['approved -> [[send]]', 'needs revision -> [[draft]]'],
      }),
      'post/send.md': note({ title: 'Send', body: 'Send it.' }),
    },
    root,
  )
  return root
}

describe('a person asked in the client (MCP elicitation)', () => {
  it('where the client declares elicitation, a note waiting for a person asks there, and their answer is recorded as decide records it', async () => {
    const root = await approvalRoot()
    const questions: ElicitRequest['params'][] = []
    const agent = await memoryClient(root, {
      elicit: (request) => {
        questions.push(request.params)
        return { action: 'accept', content: { choice: 'approved', feedback: 'Ship it.' } }
      },
    })
    const draft = (await agent.call('plan_next', { vault: 'post', query: 'a post' })).step
    const approve = (await agent.call('plan_finish', { vault: 'post', key: draft.key, output: 'the draft' })).step
    const after = await agent.call('plan_finish', { vault: 'post', key: approve.key, output: 'my review' })
    expect(questions).toHaveLength(1)
    expect(questions[0]).toMatchObject({ requestedSchema: { properties: { choice: { enum: ['approved', 'needs revision'] } }, required: ['choice'] } })
    expect(after.decided).toEqual({ node: 'approve', edge: 'approved', feedback: 'Ship it.' })
    expect(after.step).toMatchObject({ kind: 'work', node: { id: 'send' } })
    // The note holds the tick and the feedback, as `decide` writes them; the trace says a person decided.
    const trace = await read(join(root, 'post'), '00_plan-trace/trace.md')
    expect(trace).toContain('"decidedBy":"human"')
    expect(after.step.outputs.some((output: { feedback?: boolean; output: string }) => output.feedback && output.output.includes('Ship it.'))).toBe(true)
  })

  it('a declined question leaves the note waiting, and the same wait is not asked again', async () => {
    const root = await approvalRoot()
    let asked = 0
    const agent = await memoryClient(root, {
      elicit: () => {
        asked++
        return { action: 'decline' }
      },
    })
    const draft = (await agent.call('plan_next', { vault: 'post', query: 'a post' })).step
    const approve = (await agent.call('plan_finish', { vault: 'post', key: draft.key, output: 'the draft' })).step
    expect((await agent.call('plan_finish', { vault: 'post', key: approve.key, output: 'my review' })).step.kind).toBe('waiting')
    expect((await agent.call('plan_next', { vault: 'post' })).step.kind).toBe('waiting')
    expect(asked).toBe(1)
  })

  it('a client without elicitation gets `waiting`, as before', async () => {
    const root = await approvalRoot()
    const agent = await memoryClient(root)
    const draft = (await agent.call('plan_next', { vault: 'post', query: 'a post' })).step
    const approve = (await agent.call('plan_finish', { vault: 'post', key: draft.key, output: 'the draft' })).step
    const waiting = await agent.call('plan_finish', { vault: 'post', key: approve.key, output: 'my review' })
    expect(waiting.step).toMatchObject({ kind: 'waiting', waiting: [{ kind: 'human', node: 'approve' }] })
    expect(waiting.decided).toBeUndefined()
  })
})
