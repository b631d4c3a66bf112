import { stat } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { decide, forkRun, readRunStatus, runPlan, type RunStatus, type StepInput } from 'vaultplan'
import { snapshotNodes } from '../src/run/core/run-snapshot.js'
import { noJudge } from './helpers/scripted.js'
import { nestedPlan } from './helpers/subplans.js'
import { note, readTree, statuses, tempDir, writeVault } from './helpers/vault.js'

const query = 'Write a report on solar power'
const options = { fsync: false, llm: noJudge() } as const

/** A worker that records where it was called (`plan/id vN`) and answers the same. */
function recordingWorker() {
  const calls: string[] = []
  const work = async (step: StepInput) => {
    const call = `${step.plan ?? ''}/${step.node.id} v${step.visit}`
    calls.push(call)
    return call
  }
  return Object.assign(work, { calls })
}

/** The statuses of the plan's notes (the top's and the subplans'), as written on disk. */
async function noteStatuses(dir: string): Promise<Record<string, string>> {
  return Object.fromEntries(Object.entries(await statuses(dir)).filter(([id]) => !id.includes('00_plan-trace')))
}

/** What `readRunStatus` says, reduced to the phase, what comes next, and every note's status and visits, subplans' by their path. */
type View = { phase: string; next: string; nodes: Record<string, string> }
function view(status: RunStatus): View {
  const next = [status.next.kind, status.next.node, status.next.visit].filter((part) => part !== undefined).join(' ')
  return { phase: status.phase, next, nodes: Object.fromEntries([...snapshotNodes(status.nodes)].map((node) => [node.id, `${node.status} ${node.visits}`])) }
}

async function exists(path: string): Promise<boolean> {
  return stat(path).then(
    () => true,
    () => false,
  )
}

describe('forkRun of a run with a subplan', () => {
  it('at every step of the whole run holds the statuses, visits and subplan trace the run had right after it, and goes on from there', async () => {
    const source = await writeVault(nestedPlan())
    const work = recordingWorker()
    const original = await runPlan(source, { ...options, query, work })
    // Steps count the works of the whole run: outline, research/find, research/summarise, write.
    expect(original).toMatchObject({ status: 'completed', steps: 4 })
    expect(work.calls).toEqual(['/outline v1', 'research/find v1', 'research/summarise v1', '/write v1'])
    const before = await readTree(source)

    const notes = (outline: string, research: string, write: string, find: string, summarise: string) => ({
      outline,
      research,
      write,
      'research/find': find,
      'research/summarise': summarise,
    })
    const expected: { statuses: Record<string, string>; status: View; trace: boolean }[] = [
      {
        statuses: { outline: 'pending', research: 'pending', write: 'pending', 'research/find': 'pending', 'research/summarise': 'pending' },
        status: { phase: 'ready', next: 'work outline 1', nodes: notes('pending 0', 'pending 0', 'pending 0', 'pending 0', 'pending 0') },
        trace: false,
      },
      {
        // Next is the subplan's first note: its note `research` is entered with it.
        statuses: { outline: 'done', research: 'pending', write: 'pending', 'research/find': 'pending', 'research/summarise': 'pending' },
        status: { phase: 'ready', next: 'work research/find 1', nodes: notes('done 1', 'pending 0', 'pending 0', 'pending 0', 'pending 0') },
        trace: false,
      },
      {
        // Inside the subplan: its note is being worked, the subplan stands after its first work.
        statuses: { outline: 'done', research: 'active', write: 'pending', 'research/find': 'done', 'research/summarise': 'pending' },
        status: { phase: 'ready', next: 'work research/summarise 1', nodes: notes('done 1', 'active 1', 'pending 0', 'done 1', 'pending 0') },
        trace: true,
      },
      {
        // The subplan's last work ends its note's work too: its hop is recorded with it.
        statuses: { outline: 'done', research: 'done', write: 'pending', 'research/find': 'done', 'research/summarise': 'done' },
        status: { phase: 'ready', next: 'work write 1', nodes: notes('done 1', 'done 1', 'pending 0', 'done 1', 'done 1') },
        trace: true,
      },
      {
        statuses: { outline: 'done', research: 'done', write: 'done', 'research/find': 'done', 'research/summarise': 'done' },
        status: { phase: 'completed', next: 'completed write', nodes: notes('done 1', 'done 1', 'done 1', 'done 1', 'done 1') },
        trace: true,
      },
    ]
    // The forks are independent (forkRun only reads the source), so they are made and run at once: each mostly waits on its files.
    await Promise.all(
      expected.map(async (want, step) => {
        const into = join(await tempDir(), 'fork')
        await forkRun(source, { step, into })
        expect(await readTree(source)).toEqual(before)
        expect({ step, statuses: await noteStatuses(into) }).toEqual({ step, statuses: want.statuses })
        expect({ step, status: view(await readRunStatus(into)) }).toEqual({ step, status: want.status })
        expect({ step, trace: await exists(join(into, 'research/00_plan-trace/trace.md')) }).toEqual({ step, trace: want.trace })

        // Running the fork works only what a straight run does after that step, and ends as the original did.
        const again = recordingWorker()
        const result = await runPlan(into, { ...options, work: again })
        expect({ step, calls: again.calls }).toEqual({ step, calls: work.calls.slice(step) })
        expect({ ...result, runVault: '', runId: '' }).toEqual({ ...original, runVault: '', runId: '' })
        expect(Object.values(await noteStatuses(into)).every((status) => status === 'done')).toBe(true)
      }),
    )
  })

  it('refuses a step past the works of the whole run, subplans included', async () => {
    const source = await writeVault(nestedPlan())
    await runPlan(source, { ...options, query, work: recordingWorker() })
    await expect(forkRun(source, { step: 5, into: join(await tempDir(), 'x') })).rejects.toThrow('Expected `step` to be an integer from 0 to 4')
  })

  it('on a later visit of the note takes that visit’s subplan run, and reads at every step as the run stopped there by `maxSteps`', async () => {
    const files = nestedPlan()
    files['write.md'] = note({ front: { max_visits: 2 }, title: 'Write', body: 'Write the report.', next: ['again -> [[research]]', 'done -> [[end]]'] })
    files['end.md'] = note({ title: 'End', body: 'Stop.' })
    const predicates = { again: (context: { visit: number }) => context.visit === 1, done: (context: { visit: number }) => context.visit === 2 }
    const source = await writeVault(files)
    const work = recordingWorker()
    const original = await runPlan(source, { ...options, query, work, predicates })
    expect(original).toMatchObject({ status: 'completed', steps: 8 })

    // The forks are independent (forkRun only reads the source), so they are made and run at once: each mostly waits on its files.
    await Promise.all(
      [1, 2, 3, 4, 5, 6, 7, 8].map(async (step) => {
        // The same plan run straight with a budget of `step` works stands where the fork should.
        const stopped = await writeVault(files)
        await runPlan(stopped, { ...options, query, work: recordingWorker(), predicates, maxSteps: step })
        const into = join(await tempDir(), 'fork')
        await forkRun(source, { step, into })
        expect({ step, statuses: await noteStatuses(into) }).toEqual({ step, statuses: await noteStatuses(stopped) })
        const nodes = (status: RunStatus) => view(status).nodes
        // Both read for the budget the straight run stopped on (the straight run's trace records it; the fork's has the original's).
        expect({ step, nodes: nodes(await readRunStatus(into, { maxSteps: step })) }).toEqual({
          step,
          nodes: nodes(await readRunStatus(stopped, { maxSteps: step })),
        })

        const again = recordingWorker()
        const result = await runPlan(into, { ...options, work: again, predicates })
        expect({ step, calls: again.calls }).toEqual({ step, calls: work.calls.slice(step) })
        expect(result).toMatchObject({ status: 'completed', steps: 8, visits: original.visits })
      }),
    )
  })

  it('leaves a note of the subplan that waited at the step waiting, and one decided later done', async () => {
    const files = nestedPlan()
    files['research/find.md'] = note({ front: { type: 'start' }, title: 'Find sources', body: 'Find three sources.', next: ['[[check]]'] })
    files['research/check.md'] = '---\njudge: human\n---\n# Check the sources\n\n## Next\n- [ ] enough -> [[summarise]]\n- [ ] more -> [[find]]\n'
    const source = await writeVault(files)
    const work = recordingWorker()
    expect(await runPlan(source, { ...options, query, work })).toMatchObject({ status: 'waiting', steps: 3 })
    await decide(source, 'research/check', { edge: 'enough' })
    expect(await runPlan(source, { ...options, work })).toMatchObject({ status: 'completed', steps: 5 })
    expect(work.calls).toEqual(['/outline v1', 'research/find v1', 'research/check v1', 'research/summarise v1', '/write v1'])

    const waitingFork = join(await tempDir(), 'fork')
    await forkRun(source, { step: 3, into: waitingFork })
    expect(await noteStatuses(waitingFork)).toEqual({
      outline: 'done',
      research: 'active',
      write: 'pending',
      'research/find': 'done',
      'research/check': 'waiting',
      'research/summarise': 'pending',
    })
    const waits = recordingWorker()
    expect(await runPlan(waitingFork, { ...options, work: waits })).toMatchObject({ status: 'waiting', waiting: [{ node: 'research/check' }], steps: 3 })
    expect(waits.calls).toEqual([])

    const laterFork = join(await tempDir(), 'fork')
    await forkRun(source, { step: 4, into: laterFork })
    expect(await noteStatuses(laterFork)).toEqual({
      outline: 'done',
      research: 'done',
      write: 'pending',
      'research/find': 'done',
      'research/check': 'done',
      'research/summarise': 'done',
    })
    const rest = recordingWorker()
    expect(await runPlan(laterFork, { ...options, work: rest })).toMatchObject({ status: 'completed', steps: 5 })
    expect(rest.calls).toEqual(['/write v1'])
  })

  it('inside parallel branches keeps each branch as far as it had gone, the works in the order they were claimed, and works only the rest', async () => {
    const files = {
      'brief.md': note({ front: { type: 'start' }, title: 'Brief', body: 'Say what to look for.', next: ['[[gather]]'] }),
      'gather.md': `---\nplan: [web, library]\n---\n# Gather\n\nGather the material.\n\n## Next\n- [[report]]\n`,
      'report.md': note({ title: 'Report', body: 'Write it up.' }),
      'web/search.md': note({ front: { type: 'start' }, title: 'Search', body: 'Search the web.', next: ['[[notes]]'] }),
      'web/notes.md': note({ title: 'Notes', body: 'Take notes.' }),
      'library/borrow.md': note({ front: { type: 'start' }, title: 'Borrow', body: 'Borrow the books.', next: ['[[read]]'] }),
      'library/read.md': note({ title: 'Read', body: 'Read them.' }),
    }
    const source = await writeVault(files)
    // `library/borrow` returns once `web/search` is being worked, and `web/search` once `library/read` is (5 ms later each,
    // so claim times differ): the works are claimed search and borrow (either first), then read, then notes.
    const started = new Map<string, () => void>()
    const whenStarted = (id: string) => new Promise<void>((resolve) => started.set(id, resolve))
    const waitsFor: Record<string, Promise<void>> = { search: whenStarted('read'), borrow: whenStarted('search') }
    const work = recordingWorker()
    const ordered = async (step: StepInput) => {
      started.get(step.node.id)?.()
      await waitsFor[step.node.id]?.then(() => new Promise((resolve) => setTimeout(resolve, 5)))
      return work(step)
    }
    const original = await runPlan(source, { ...options, query, work: ordered })
    expect(original).toMatchObject({ status: 'completed', steps: 6 })
    // (Each is recorded when it returns.)
    expect(work.calls).toEqual(['/brief v1', 'library/borrow v1', 'library/read v1', 'web/search v1', 'web/notes v1', '/report v1'])

    const branchNotes = ['web/search', 'library/borrow', 'library/read', 'web/notes']
    for (let step = 2; step <= 5; step++) {
      const into = join(await tempDir(), 'fork')
      await forkRun(source, { step, into })
      const forked = await noteStatuses(into)
      // The last work of the branches ends the note that runs them.
      expect({ step, top: [forked.brief, forked.gather, forked.report] }).toEqual({ step, top: ['done', step < 5 ? 'active' : 'done', 'pending'] })
      const worked = branchNotes.filter((id) => forked[id] === 'done')
      // At step 2 either branch may have claimed its first note first.
      if (step === 2) expect(worked.length === 1 && ['web/search', 'library/borrow'].includes(worked[0]!)).toBe(true)
      else expect({ step, worked }).toEqual({ step, worked: branchNotes.slice(0, step - 1) })
      expect({ step, pending: branchNotes.filter((id) => forked[id] === 'pending') }).toEqual({
        step,
        pending: branchNotes.filter((id) => !worked.includes(id)),
      })

      const again = recordingWorker()
      const result = await runPlan(into, { ...options, work: again })
      expect({ step, calls: [...again.calls].sort() }).toEqual({
        step,
        calls: [...branchNotes.filter((id) => !worked.includes(id)).map((id) => `${id} v1`), '/report v1'].sort(),
      })
      expect({ ...result, runVault: '', runId: '' }).toEqual({ ...original, runVault: '', runId: '' })
    }
  })
})
