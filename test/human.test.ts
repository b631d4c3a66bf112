import { describe, expect, it } from 'vitest'
import { decide, readRunStatus, RunStateError, runPlan, type RunEvent } from 'vaultplan'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { edit, note, read, readTree, statuses, traceEntries, writeVault } from './helpers/vault.js'

const query = 'Announce the release'
const options = { query, fsync: false, llm: noJudge() } as const

const approveNote =
  '---\njudge: human\nmax_visits: 3\n---\n# Approve the draft\n\nA person reads the draft.\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n'

function plan(approve = approveNote): Record<string, string> {
  return {
    'draft.md': note({ front: { type: 'start' }, title: 'Draft', body: 'Write the draft.', next: ['[[approve]]'] }),
    'approve.md': approve,
    'send.md': note({ title: 'Send', body: 'Send it.' }),
  }
}

const tick = (label: string) => (text: string) => text.replace(`- [ ] ${label} ->`, `- [x] ${label} ->`)

const waitingReason =
  '`approve` waits for a person: tick one box under `## Next` in `approve.md` (and write under `## Feedback` if you like), then run the vault again.'

describe('a `judge: human` node', () => {
  it('returns `waiting` after its work, with the note `status: waiting`, and no judge call', async () => {
    const dir = await writeVault(plan())
    const events: RunEvent[] = []
    const result = await runPlan(dir, { ...options, work: scriptedWorker(), onEvent: (event) => events.push(event) })
    expect(result).toEqual({
      status: 'waiting',
      output: 'approve v1',
      reason: waitingReason,
      steps: 2,
      plannerCalls: 0,
      visits: { draft: 1, approve: 1 },
      lastNode: 'approve',
      runVault: result.runVault,
      runId: result.runId,
      waiting: [{ kind: 'human', node: 'approve', file: 'approve.md', choices: ['approved', 'needs revision'] }],
    })
    expect(await statuses(dir)).toEqual({ approve: 'waiting', draft: 'done', send: 'pending' })
    expect(events.at(-1)).toEqual({ type: 'waiting', node: 'approve', reason: waitingReason })
    expect((await traceEntries(dir)).map((entry) => entry.heading)).toEqual(['Step 1 · [[draft]] · visit 1', 'Waiting after step 2 · [[approve]] · visit 1'])
  })

  it('shows the `## Next` items as empty task boxes while it waits, whatever the author wrote', async () => {
    const written = '---\njudge: human\n---\n# Approve\n\nRead it.\n\n## Next\n- approved -> [[send]]\n* [X] needs revision -> [[draft]]\n'
    const dir = await writeVault(plan(written))
    await runPlan(dir, { ...options, work: scriptedWorker() })
    expect(await read(dir, 'approve.md')).toBe(
      '---\njudge: human\nstatus: waiting\n---\n# Approve\n\nRead it.\n\n## Next\n- [ ] approved -> [[send]]\n* [ ] needs revision -> [[draft]]\n',
    )
  })

  it('an item written over two lines has its tick cleared too, and an Obsidian `[-]` box is left as it is', async () => {
    const written = '---\njudge: human\n---\n# Approve\n\n## Next\n- [ ] needs revision ->\n  [[draft]]\n- [-] approved -> [[send]]\n'
    const dir = await writeVault(plan(written))
    await runPlan(dir, { ...options, work: scriptedWorker() })
    await edit(dir, 'approve.md', (text) => text.replace('- [ ] needs revision', '- [x] needs revision'))
    const second = await runPlan(dir, { ...options, work: scriptedWorker() })
    // The tick was consumed once: the run went back to draft and waits again at its next visit.
    expect(second).toMatchObject({ status: 'waiting', visits: { draft: 2, approve: 2 } })
    expect(await read(dir, 'approve.md')).toBe(
      '---\njudge: human\nstatus: waiting\n---\n# Approve\n\n## Next\n- [ ] needs revision ->\n  [[draft]]\n- [-] approved -> [[send]]\n',
    )
  })

  it('nothing ticked: still waiting, the same result, nothing redone or rewritten', async () => {
    const dir = await writeVault(plan())
    const first = await runPlan(dir, { ...options, work: scriptedWorker() })
    const before = await readTree(dir)
    const work = scriptedWorker()
    const again = await runPlan(dir, { ...options, work })
    expect(again).toEqual(first)
    expect(work.calls).toEqual([])
    expect(await readTree(dir)).toEqual(before)
  })

  it('one box ticked with feedback: the run follows it (decided by human), hands the feedback on and clears the boxes', async () => {
    const dir = await writeVault(plan())
    await runPlan(dir, { ...options, work: scriptedWorker() })
    await edit(dir, 'approve.md', (text) => `${tick('approved')(text)}\n## Feedback\nLooks good, ship it.\n`)

    const work = scriptedWorker()
    const events: RunEvent[] = []
    const result = await runPlan(dir, { ...options, work, onEvent: (event) => events.push(event) })
    expect(events.slice(0, 2)).toEqual([
      { type: 'start', runId: expect.any(String), resumed: true },
      {
        type: 'transition',
        node: 'approve',
        visit: 1,
        step: 2,
        edge: { label: 'approved', target: 'send', conditional: true },
        decidedBy: 'human',
        rationale: 'Feedback:\nLooks good, ship it.',
      },
    ])
    expect(work.calls.map(({ node, visit, step, outputs }) => ({ node, visit, step, outputs }))).toEqual([
      {
        node: 'send',
        visit: 1,
        step: 3,
        outputs: [
          { node: 'draft', visit: 1, output: 'draft v1', file: 'outputs/0001-draft.md' },
          { node: 'approve', visit: 1, output: 'approve v1', file: 'outputs/0002-approve.md' },
          { node: 'approve', visit: 1, output: 'Looks good, ship it.', feedback: true },
        ],
      },
    ])
    expect(result).toEqual({
      status: 'completed',
      output: 'send v1',
      steps: 3,
      plannerCalls: 0,
      visits: { draft: 1, approve: 1, send: 1 },
      lastNode: 'send',
      runVault: result.runVault,
      runId: result.runId,
    })
    expect((await traceEntries(dir)).slice(1)).toEqual([
      { heading: 'Waiting after step 2 · [[approve]] · visit 1', rationale: '' },
      { heading: 'Step 2 · [[approve]] · visit 1', edge: 'approved → [[send]]', decidedBy: 'human', rationale: 'Feedback:\nLooks good, ship it.' },
      { heading: 'Step 3 · [[send]] · visit 1', edge: 'none (terminal)', decidedBy: 'terminal', rationale: 'terminal: the node has no edges' },
    ])
    // Boxes cleared, status done, the feedback left as the person wrote it, with one line saying it was handed on.
    expect(await read(dir, 'approve.md')).toBe(
      '---\njudge: human\nmax_visits: 3\nstatus: done\n---\n# Approve the draft\n\nA person reads ' +
        'the draft.\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n\n## ' +
        'Feedback\nLooks good, ship it.\n\n(handed on at step 2)\n',
    )
  })

  it('feedback piles up in the note: each is marked `(handed on at step N)` when handed on, and only the new one is handed to the next worker', async () => {
    const dir = await writeVault(plan())
    await runPlan(dir, { ...options, work: scriptedWorker() })
    await edit(dir, 'approve.md', (text) => `${tick('needs revision')(text)}\n## Feedback\nAdd a photo caption.\n`)
    const first = scriptedWorker()
    await runPlan(dir, { ...options, work: first })
    expect(first.calls[0]!.outputs.at(-1)).toEqual({ node: 'approve', visit: 1, output: 'Add a photo caption.', feedback: true })
    expect(await read(dir, 'approve.md')).toMatch(/\n## Feedback\nAdd a photo caption\.\n\n\(handed on at step 2\)\n$/)

    // The person writes below what they wrote before, in their own way (a blank line, trailing spaces kept).
    await edit(dir, 'approve.md', (text) => `${tick('approved')(text)}\nShip it.  \n`)
    const second = scriptedWorker()
    await runPlan(dir, { ...options, work: second })
    const handed = second.calls[0]!.outputs.filter((output) => output.node === 'approve' && !output.output.startsWith('approve v'))
    expect(handed).toEqual([
      { node: 'approve', visit: 1, output: 'Add a photo caption.', feedback: true },
      { node: 'approve', visit: 2, output: 'Ship it.', feedback: true },
    ])
    expect(await read(dir, 'approve.md')).toMatch(
      /\n## Feedback\nAdd a photo caption\.\n\n\(handed on at step 2\)\n\nShip it\.  \n\n\(handed on at step 4\)\n$/,
    )
  })

  it('a ticked way back loops, counts the visit and waits again with the boxes cleared', async () => {
    const dir = await writeVault(plan())
    await runPlan(dir, { ...options, work: scriptedWorker() })
    await edit(dir, 'approve.md', (text) => `${tick('needs revision')(text)}\n## Feedback\nShorter, please.\n`)

    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work })
    expect(work.calls.map((call) => `${call.node} v${call.visit} step ${call.step}`)).toEqual(['draft v2 step 3', 'approve v2 step 4'])
    expect(work.calls[0]!.outputs.at(-1)).toEqual({ node: 'approve', visit: 1, output: 'Shorter, please.', feedback: true })
    expect(result).toEqual({
      status: 'waiting',
      output: 'approve v2',
      reason: waitingReason,
      steps: 4,
      plannerCalls: 0,
      visits: { draft: 2, approve: 2 },
      lastNode: 'approve',
      runVault: result.runVault,
      runId: result.runId,
      waiting: [{ kind: 'human', node: 'approve', file: 'approve.md', choices: ['approved', 'needs revision'] }],
    })
    const text = await read(dir, 'approve.md')
    expect(text).toContain('- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n')
    expect(text).toContain('status: waiting')

    // A second decision in the next run: visits keep counting from the trace.
    await edit(dir, 'approve.md', tick('approved'))
    const next = scriptedWorker()
    const done = await runPlan(dir, { ...options, work: next })
    expect(next.calls.map((call) => `${call.node} v${call.visit} step ${call.step}`)).toEqual(['send v1 step 5'])
    expect(done).toMatchObject({ status: 'completed', steps: 5, visits: { draft: 2, approve: 2, send: 1 } })
  })

  it('the visit after a human decision is a new visit of the human node, counted against its budget', async () => {
    const dir = await writeVault(plan(approveNote.replace('max_visits: 3', 'max_visits: 1')))
    await runPlan(dir, { ...options, work: scriptedWorker() })
    await edit(dir, 'approve.md', tick('needs revision'))
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work })
    expect(work.calls.map((call) => `${call.node} v${call.visit}`)).toEqual(['draft v2'])
    expect(result).toMatchObject({ status: 'stopped', steps: 3, visits: { draft: 2, approve: 1 } })
    expect(result.reason).toContain('`approve` was refused visit 2')
  })

  it('a note with CRLF line endings: the tick is read and cleared, the line endings kept', async () => {
    const crlf = (text: string) => text.replace(/\n/g, '\r\n')
    const dir = await writeVault(plan(crlf(approveNote)))
    await runPlan(dir, { ...options, work: scriptedWorker() })
    await edit(dir, 'approve.md', (text) => `${tick('approved')(text)}\r\n## Feedback\r\nFine.\r\n`)
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work })
    expect(result).toMatchObject({ status: 'completed', steps: 3 })
    expect(work.calls[0]!.outputs.at(-1)).toEqual({ node: 'approve', visit: 1, output: 'Fine.', feedback: true })
    expect(await read(dir, 'approve.md')).toBe(
      crlf(
        '---\njudge: human\nmax_visits: 3\nstatus: done\n---\n# Approve the draft\n\nA person reads ' +
          'the draft.\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n\n## ' +
          'Feedback\nFine.\n\n(handed on at step 2)\n',
      ),
    )
  })

  it('two boxes ticked: a RunStateError naming the note and the items, the note unchanged', async () => {
    const dir = await writeVault(plan())
    await runPlan(dir, { ...options, work: scriptedWorker() })
    await edit(dir, 'approve.md', (text) => tick('needs revision')(tick('approved')(text)))
    const before = await readTree(dir)
    const work = scriptedWorker()
    const error = await runPlan(dir, { ...options, work }).catch((caught: unknown) => caught)
    expect(error).toBeInstanceOf(RunStateError)
    expect(error).toMatchObject({
      code: 'ambiguous-decision',
      message: '`approve.md` has 2 boxes ticked (`approved -> [[send]]`, `needs revision -> [[draft]]`); tick exactly one, then run the vault again.',
    })
    expect(work.calls).toEqual([])
    expect(await readTree(dir)).toEqual(before)
  })

  it('two boxes ticked, then decide along one: the trace records the decision with the box it unticked', async () => {
    const dir = await writeVault(plan())
    await runPlan(dir, { ...options, work: scriptedWorker() })
    await edit(dir, 'approve.md', (text) => tick('needs revision')(tick('approved')(text)))
    await decide(dir, 'approve', { edge: 'needs revision' })
    // The run follows the decision back to the draft, and the note waits again at its next visit.
    expect(await runPlan(dir, { ...options, work: scriptedWorker() })).toMatchObject({ status: 'waiting', visits: { approve: 2 } })
    const decided = { step: 2, node: 'approve', visit: 1, edge: { label: 'needs revision', target: 'draft', conditional: true }, decidedBy: 'human' }
    expect((await traceEntries(dir)).find((entry) => entry.heading.startsWith('Step 2 '))).toMatchObject({
      edge: 'needs revision → [[draft]]',
      decidedBy: 'human (unticked `approved`)',
    })
    expect((await readRunStatus(dir)).hops.find((hop) => hop.step === 2)).toEqual({ ...decided, unticked: ['approved'] })

    // The same box ticked by hand at the next visit unticked nothing: the earlier decision's record is not carried over.
    await edit(dir, 'approve.md', tick('needs revision'))
    expect(await runPlan(dir, { ...options, work: scriptedWorker() })).toMatchObject({ status: 'waiting', visits: { approve: 3 } })
    expect((await readRunStatus(dir)).hops.find((hop) => hop.step === 4)).toEqual({ ...decided, step: 4, visit: 2 })
    expect((await traceEntries(dir)).find((entry) => entry.heading.startsWith('Step 4 '))).toMatchObject({ decidedBy: 'human' })
  })

  it('a decision an earlier run never followed is not recorded in the next run', async () => {
    const dir = await writeVault(plan())
    await runPlan(dir, { ...options, work: scriptedWorker() })
    await edit(dir, 'approve.md', (text) => tick('needs revision')(tick('approved')(text)))
    await decide(dir, 'approve', { edge: 'needs revision' })
    await runPlan(dir, { ...options, work: scriptedWorker(), fresh: true })
    await edit(dir, 'approve.md', tick('needs revision'))
    await runPlan(dir, { ...options, work: scriptedWorker() })
    expect((await readRunStatus(dir)).hops.find((hop) => hop.step === 2)).toEqual({
      step: 2,
      node: 'approve',
      visit: 1,
      edge: { label: 'needs revision', target: 'draft', conditional: true },
      decidedBy: 'human',
    })
  })

  it('two boxes ticked in a subplan, then decide along one: its hop records the box it unticked', async () => {
    const dir = await writeVault({
      'top.md': note({ front: { type: 'start', plan: 'review' }, title: 'Top', body: 'Review it.' }),
      'review/draft.md': note({ front: { type: 'start' }, title: 'Draft', body: 'Write the draft.', next: ['[[approve]]'] }),
      'review/approve.md': approveNote,
      'review/send.md': note({ title: 'Send', body: 'Send it.' }),
    })
    expect(await runPlan(dir, { ...options, work: scriptedWorker() })).toMatchObject({ waiting: [{ node: 'review/approve' }] })
    await edit(dir, 'review/approve.md', (text) => tick('needs revision')(tick('approved')(text)))
    await decide(dir, 'review/approve', { edge: 'approved' })
    expect(await runPlan(dir, { ...options, work: scriptedWorker() })).toMatchObject({ status: 'completed' })
    expect((await readRunStatus(dir)).hops.find((hop) => hop.node === 'review/approve')).toMatchObject({ decidedBy: 'human', unticked: ['needs revision'] })
  })

  it('a box ticked before the node waits does not count; predicates do not decide a human node', async () => {
    const dir = await writeVault(plan(tick('approved')(approveNote)))
    const work = scriptedWorker()
    const result = await runPlan(dir, { ...options, work, predicates: { approved: () => true } })
    expect(result.status).toBe('waiting')
    expect(work.calls.map((call) => call.node)).toEqual(['draft', 'approve'])
    expect(await read(dir, 'approve.md')).toContain('- [ ] approved -> [[send]]')
  })
})
