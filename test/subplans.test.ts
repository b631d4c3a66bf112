import { readdir } from 'node:fs/promises'
import { describe, expect, it } from 'vitest'
import { completeStep, decide, loadPlan, nextStep, readRunStatus, runPlan, type RunEvent, type StepInput } from 'vaultplan'
import { toCanvas, toDot, toMermaid, type CanvasNode } from 'vaultplan/pictures'
import { noJudge } from './helpers/scripted.js'
import { vaultplan } from './helpers/cli.js'
import { canvasProblems } from './helpers/json-canvas.js'
import { parseMermaid, renderDot } from './helpers/renderers.js'
import { nestedPlan } from './helpers/subplans.js'
import { until } from './helpers/until.js'
import { edit, note, read, statuses, tempDir, writeVault } from './helpers/vault.js'

/** The hop records of a vault's trace (its own folder's `00_plan-trace/`), oldest first. */
async function hops(dir: string): Promise<{ kind: string; node: string; decidedBy: string; works?: number }[]> {
  const text = await read(dir, '00_plan-trace/trace.md')
  const records = [...text.matchAll(/^<!-- vaultplan:hop (\{.*\}) -->$/gm)].map((match) => JSON.parse(match[1]!))
  return records.filter((record) => record.kind === 'hop')
}

const query = 'Write a report on solar power'
const options = { query, fsync: false, llm: noJudge() } as const

/** A worker that records where it was called (`plan/id`) and answers `<plan/id> v<visit>`. */
function recordingWorker() {
  const calls: StepInput[] = []
  const work = async (step: StepInput) => {
    calls.push(step)
    return `${step.plan ? `${step.plan}/` : ''}${step.node.id} v${step.visit}`
  }
  return Object.assign(work, { calls })
}

describe('a note with `plan: <folder>`', () => {
  it('is worked by running its folder as a plan of its own, whose final output is the note’s output', async () => {
    const dir = await writeVault(nestedPlan())
    const work = recordingWorker()
    const result = await runPlan(dir, { ...options, work })

    // The worker is not called for the note itself; the subplan's notes get their own ids and the folder.
    expect(work.calls.map((call) => [call.plan ?? '', call.node.id])).toEqual([
      ['', 'outline'],
      ['research', 'find'],
      ['research', 'summarise'],
      ['', 'write'],
    ])
    const subplanQuery = work.calls[1]!.query
    expect(subplanQuery).toBe(`Research\n\nFind the figures.\n\n${query}`)
    // The top plan's next worker sees the subplan's final output as the note's output.
    expect(work.calls[3]!.outputs.map((each) => [each.node, each.output])).toEqual([
      ['outline', 'outline v1'],
      ['research', 'research/summarise v1'],
    ])
    expect(result).toMatchObject({ status: 'completed', output: 'write v1', steps: 4, lastNode: 'write' })
    expect(result.visits).toEqual({ outline: 1, research: 1, write: 1, 'research/find': 1, 'research/summarise': 1 })

    // Each folder keeps its own statuses and trace.
    const notes = Object.entries(await statuses(dir)).filter(([id]) => !id.includes('00_plan-trace'))
    expect(Object.fromEntries(notes)).toEqual({ outline: 'done', research: 'done', write: 'done', 'research/find': 'done', 'research/summarise': 'done' })
    expect((await hops(dir)).map((hop) => [hop.node, hop.works])).toEqual([
      ['outline', undefined],
      ['research', 2],
      ['write', undefined],
    ])
    expect((await hops(`${dir}/research`)).map((hop) => hop.node)).toEqual(['find', 'summarise'])
    expect(await read(dir, 'research/00_plan-trace/final.md')).toContain('research/summarise v1')
  })

  it('does not make the subplan’s notes nodes of the parent', async () => {
    const graph = await loadPlan(await writeVault(nestedPlan()))
    expect([...graph.nodes.keys()]).toEqual(['outline', 'research', 'write'])
    expect(graph.nodes.get('research')?.plan).toEqual(['research'])
    expect(graph.validate()).toEqual([])
  })

  it('still reads the subplan’s notes as the subplan’s once the folder holds a run of its own', async () => {
    const dir = await writeVault(nestedPlan())
    await runPlan(dir, { ...options, work: recordingWorker() })
    const graph = await loadPlan(dir)
    expect([...graph.nodes.keys()]).toEqual(['outline', 'research', 'write'])
    expect(graph.validate()).toEqual([])
  })

  it('reports the nested notes in events by their path from the top vault', async () => {
    const dir = await writeVault(nestedPlan())
    const events: RunEvent[] = []
    await runPlan(dir, { ...options, work: recordingWorker(), onEvent: (event) => events.push(event) })
    expect(events.filter((event) => event.type === 'enter').map((event) => (event as { node: string }).node)).toEqual([
      'outline',
      'research',
      'research/find',
      'research/summarise',
      'write',
    ])
  })

  it('counts the works of the subplan against maxSteps, not the note that runs it, and names the nested note in the stop', async () => {
    const dir = await writeVault(nestedPlan())
    const work = recordingWorker()
    const result = await runPlan(dir, { ...options, work, maxSteps: 2 })
    expect(result.status).toBe('stopped')
    expect(result.stop).toMatchObject({ budget: 'maxSteps', node: 'research/summarise' })
    expect(result.reason).toContain('subplan `research/`')
    expect(work.calls).toHaveLength(2)

    // Going on with a larger budget resumes inside the subplan, where it stopped.
    const resumed = await runPlan(dir, { fsync: false, llm: noJudge(), work, maxSteps: 4 })
    expect(resumed).toMatchObject({ status: 'completed', steps: 4 })
    expect(work.calls.map((call) => `${call.plan ?? ''}/${call.node.id}`)).toEqual(['/outline', 'research/find', 'research/summarise', '/write'])
  })

  it('resumes a subplan where it stopped after a failed worker, never from its beginning', async () => {
    const dir = await writeVault(nestedPlan())
    const calls: string[] = []
    let fail = true
    const work = async (step: StepInput) => {
      calls.push(`${step.plan ?? ''}/${step.node.id}`)
      if (step.node.id === 'summarise' && fail) throw new Error('the sources site is down')
      return `${step.node.id} v${step.visit}`
    }
    await expect(runPlan(dir, { ...options, work })).rejects.toMatchObject({ name: 'StepError', node: 'research/summarise' })
    fail = false
    const result = await runPlan(dir, { fsync: false, llm: noJudge(), work })
    expect(result.status).toBe('completed')
    expect(calls).toEqual(['/outline', 'research/find', 'research/summarise', 'research/summarise', '/write'])
    expect((await hops(`${dir}/research`)).map((hop) => hop.node)).toEqual(['find', 'summarise'])
  })

  it('runs the subplan afresh on a new visit of its note, the previous run archived', async () => {
    const files = nestedPlan()
    files['write.md'] = note({ front: { max_visits: 2 }, title: 'Write', body: 'Write the report.', next: ['again -> [[research]]', 'done -> [[end]]'] })
    files['end.md'] = note({ title: 'End', body: 'Stop.' })
    const dir = await writeVault(files)
    const work = recordingWorker()
    const predicates = { again: (context: { visit: number }) => context.visit === 1, done: (context: { visit: number }) => context.visit === 2 }
    const result = await runPlan(dir, { ...options, work, predicates })
    expect(result.status).toBe('completed')
    expect(work.calls.map((call) => `${call.plan ?? ''}/${call.node.id} v${call.visit}`)).toEqual([
      '/outline v1',
      'research/find v1',
      'research/summarise v1',
      '/write v1',
      'research/find v1',
      'research/summarise v1',
      '/write v2',
      '/end v1',
    ])
    expect(result.visits).toMatchObject({ research: 2, 'research/find': 1 })
    expect(result.steps).toBe(8)
    // The first visit's subplan run is kept in the subplan's archive.
    const archived = await readdir(`${dir}/research/00_plan-trace/archive`)
    expect(archived).toHaveLength(1)
    const old = await read(dir, `research/00_plan-trace/archive/${archived[0]}/trace.md`)
    expect(old.match(/^<!-- vaultplan:hop \{"kind":"hop"/gm)).toHaveLength(2)
    expect((await hops(`${dir}/research`)).map((hop) => hop.node)).toEqual(['find', 'summarise'])
  })
})

describe('the stepping calls on a subplan', () => {
  it('return the nested note to work with its folder, and complete it by its key', async () => {
    const dir = await writeVault(nestedPlan())
    let step = await nextStep(dir, { query, fsync: false })
    const seen: string[] = []
    while (step.kind === 'work') {
      seen.push(`${step.plan ?? ''}/${step.node.id}`)
      step = await completeStep(dir, step.key, { output: `did ${step.node.id}` }, { fsync: false })
    }
    expect(seen).toEqual(['/outline', 'research/find', 'research/summarise', '/write'])
    expect(step).toMatchObject({ kind: 'completed', output: 'did write' })
    expect(await statuses(dir)).toMatchObject({ research: 'done', 'research/summarise': 'done' })
  })

  it('refuse a key that is no pending visit anywhere in the tree, writing nothing', async () => {
    const dir = await writeVault(nestedPlan())
    let step = await nextStep(dir, { query, fsync: false })
    step = await completeStep(dir, step.kind === 'work' ? step.key : '', { output: 'outline' }, { fsync: false })
    expect(step).toMatchObject({ kind: 'work', plan: 'research', node: { id: 'find' } })
    await expect(completeStep(dir, 'nope', { output: 'x' }, { fsync: false })).rejects.toMatchObject({ code: 'stale-step' })
    const again = await nextStep(dir, { fsync: false })
    expect(again).toMatchObject({ kind: 'work', plan: 'research', node: { id: 'find' }, key: step.kind === 'work' ? step.key : '' })
  })

  it('let the choice given with the subplan’s terminal decide the note that runs it', async () => {
    const files = nestedPlan()
    files['research.md'] = note({
      front: { plan: 'research' },
      title: 'Research',
      body: 'Find the figures.',
      next: ['enough -> [[write]]', 'too little -> [[outline]]'],
    })
    const dir = await writeVault(files)
    let step = await nextStep(dir, { query, fsync: false })
    while (step.kind === 'work' && !(step.plan === 'research' && step.node.id === 'summarise'))
      step = await completeStep(dir, step.key, { output: 'ok' }, { fsync: false })
    expect(step).toMatchObject({ kind: 'work', conditions: ['enough', 'too little'] })
    step = await completeStep(dir, step.kind === 'work' ? step.key : '', { output: 'summary', choice: 'enough' }, { fsync: false })
    expect(step).toMatchObject({ kind: 'work', node: { id: 'write' } })
    expect((await hops(dir)).find((hop) => hop.node === 'research')).toMatchObject({ decidedBy: 'agent' })
  })
})

/** A fan-out: `gather` runs `web/` and `library/` at once; `library/` holds a note a person approves. */
function fanOut(options: { approval?: boolean } = {}): Record<string, string> {
  return {
    'brief.md': note({ front: { type: 'start' }, title: 'Brief', body: 'Say what to look for.', next: ['[[gather]]'] }),
    'gather.md': `---\nplan: [web, library]\n---\n# Gather\n\nGather the material.\n\n## Next\n- [[report]]\n`,
    'report.md': note({ title: 'Report', body: 'Write it up.' }),
    'web/search.md': note({ front: { type: 'start' }, title: 'Search', body: 'Search the web.', next: ['[[notes]]'] }),
    'web/notes.md': note({ title: 'Notes', body: 'Take notes.' }),
    'library/borrow.md': note({ front: { type: 'start' }, title: 'Borrow', body: 'Borrow the books.', next: [options.approval ? '[[approve]]' : '[[read]]'] }),
    ...(options.approval && {
      'library/approve.md': '---\njudge: human\n---\n# Approve the reading list\n\n## Next\n- [ ] approved -> [[read]]\n- [ ] more -> [[borrow]]\n',
    }),
    'library/read.md': note({ title: 'Read', body: 'Read them.' }),
  }
}

describe('parallel branches (`plan: [a, b]`)', () => {
  it('run at once, each as far as it goes, and join their finals in the listed order', async () => {
    const dir = await writeVault(fanOut())
    let inFlight = 0
    let most = 0
    const work = async (step: StepInput) => {
      inFlight++
      most = Math.max(most, inFlight)
      // The first visit of each branch waits for the other branch's (a lockstep bug fails the wait instead of hanging).
      if (step.plan && step.visit === 1 && (step.node.id === 'search' || step.node.id === 'borrow'))
        await until(() => most === 2, "the other branch's first visit to be worked at once")
      inFlight--
      return `${step.plan ?? ''}/${step.node.id}`
    }
    const outputs: string[] = []
    const result = await runPlan(dir, {
      ...options,
      work: async (step) => {
        const output = await work(step)
        if (step.node.id === 'report') outputs.push(...step.outputs.filter((each) => each.node === 'gather').map((each) => each.output))
        return output
      },
    })
    expect(most).toBe(2)
    expect(result).toMatchObject({ status: 'completed', steps: 6 })
    expect(outputs).toEqual(['## web\n\nweb/notes\n\n## library\n\nlibrary/read\n'])
    const notes = Object.entries(await statuses(dir)).filter(([id]) => !id.includes('00_plan-trace'))
    expect(notes.every(([, status]) => status === 'done')).toBe(true)
  })

  it('name every waiting note by its path from the top vault, the other branch having gone on to its end', async () => {
    const dir = await writeVault(fanOut({ approval: true }))
    const calls: string[] = []
    const work = async (step: StepInput) => {
      calls.push(`${step.plan ?? ''}/${step.node.id}`)
      return `${step.plan ?? ''}/${step.node.id}`
    }
    const result = await runPlan(dir, { ...options, work })
    expect(result).toMatchObject({
      status: 'waiting',
      waiting: [{ node: 'library/approve', file: 'library/approve.md', choices: ['approved', 'more'] }],
    })
    expect(result.reason).toContain('`library/approve`')
    // Every work of the branches counts, though no record of the top holds them yet (the wait counts its visit).
    expect(result.steps).toBe(5)
    expect(calls.sort()).toEqual(['/brief', 'library/approve', 'library/borrow', 'web/notes', 'web/search'])
    expect((await hops(`${dir}/web`)).map((hop) => hop.node)).toEqual(['search', 'notes'])

    // The person decides in the branch: it goes on; the branch that completed keeps its place.
    await decide(dir, 'library/approve', { edge: 'approved' })
    calls.length = 0
    const done = await runPlan(dir, { fsync: false, llm: noJudge(), work })
    expect(done.status).toBe('completed')
    expect(calls).toEqual(['library/read', '/report'])
    expect((await hops(`${dir}/web`)).map((hop) => hop.node)).toEqual(['search', 'notes'])
  })

  it('wait on every waiting note at once when both branches wait', async () => {
    const files = fanOut({ approval: true })
    files['web/notes.md'] = '---\njudge: human\n---\n# Notes\n\n## Next\n- [ ] keep -> [[done]]\n'
    files['web/done.md'] = note({ title: 'Done' })
    const dir = await writeVault(files)
    const result = await runPlan(dir, { ...options, work: async (step) => step.node.id })
    expect(result.status).toBe('waiting')
    expect(result.waiting?.map((each) => each.file)).toEqual(['web/notes.md', 'library/approve.md'])
    // A tick in one branch lets that one go on; the run still waits on the other.
    await edit(dir, 'web/notes.md', (text) => text.replace('- [ ] keep', '- [x] keep'))
    const again = await runPlan(dir, { fsync: false, llm: noJudge(), work: async (step) => step.node.id })
    expect(again.waiting?.map((each) => each.node)).toEqual(['library/approve'])
    expect((await hops(`${dir}/web`)).map((hop) => hop.node)).toEqual(['search', 'notes', 'done'])
  })
})

describe('the lock of a run with subplans', () => {
  it('lets the top runner run its subplan folder and refuses anyone else meanwhile', async () => {
    const dir = await writeVault(nestedPlan())
    let refused: unknown
    const work = async (step: StepInput) => {
      if (step.plan === 'research' && step.node.id === 'find')
        refused = await runPlan(`${dir}/research`, { query: 'on its own', fsync: false, work: async () => 'x' }).catch((error: unknown) => error)
      return step.node.id
    }
    expect(await runPlan(dir, { ...options, work })).toMatchObject({ status: 'completed' })
    expect(refused).toMatchObject({ name: 'RunStateError', code: 'vault-locked' })
  })
})

describe('a template with subplans', () => {
  it('is copied into a run vault with its subplan folders and none of their traces', async () => {
    const template = await writeVault(nestedPlan())
    // Run in place once: the subplan folder now holds a run of its own.
    await runPlan(template, { ...options, work: async (step) => step.node.id })
    const runVault = `${await tempDir()}/run`
    const result = await runPlan(template, { ...options, runVault, fresh: true, work: async (step) => `${step.plan ?? ''}/${step.node.id}` })
    expect(result).toMatchObject({ status: 'completed', output: '/write' })
    expect(await readdir(`${runVault}/research`)).toEqual(['00_plan-trace', 'find.md', 'summarise.md'])
    expect(await read(runVault, 'research/00_plan-trace/final.md')).toContain('research/summarise')
  })
})

describe('the status of a run with subplans', () => {
  it('nests each subplan’s state under its note, and says the next step is inside it', async () => {
    const dir = await writeVault(fanOut({ approval: true }))
    await runPlan(dir, { ...options, work: async (step) => step.node.id })
    const status = await readRunStatus(dir)
    const gather = status.nodes.find((node) => node.id === 'gather')!
    expect(gather.status).toBe('active')
    expect(gather.subplans?.map((sub) => [sub.folder, sub.nodes.map((node) => `${node.id} ${node.status}`)])).toEqual([
      ['web', ['web/search done', 'web/notes done']],
      ['library', ['library/borrow done', 'library/approve waiting', 'library/read pending']],
    ])
    expect({ phase: status.phase, next: status.next }).toEqual({ phase: 'waiting', next: { kind: 'waiting', node: 'library/approve' } })
    const cli = await vaultplan(['status', '.'], { cwd: dir })
    expect(cli.stdout).toMatch(/gather +active +1\/3 +subplan web\/, subplan library\/\n/)
    expect(cli.stdout).toMatch(/\n {5}library\/borrow +done +1\/3 +start\n> {4}library\/approve +waiting +1\/3\n/)
    expect(cli.stdout.match(/^>/gm)).toHaveLength(1)
    expect(cli.stdout).toContain('Next: Tick one box under `## Next` in `library/approve.md`')
  })
})

describe('pictures of a plan with subplans', () => {
  it('draw each subplan as a cluster reached from its note, in mermaid and DOT', async () => {
    const graph = await loadPlan(await writeVault(fanOut()))
    const mermaid = toMermaid(graph, { visits: { gather: 1, 'web/search': 1 } })
    expect(mermaid).toContain('  subgraph s0["web/"]\n    s0_n0(["search (1/3)"])\n    s0_n1((("notes (0/3)")))\n  end')
    expect(mermaid).toContain('  subgraph s1["library/"]')
    expect(mermaid).toContain('  s0_n0 --> s0_n1')
    expect(mermaid).toContain('  n1 -.-> s0\n  n1 -.-> s1')
    const dot = toDot(graph)
    expect(dot).toContain('compound=true')
    expect(dot).toContain('  subgraph cluster_s0 {\n    label="web/"')
    expect(dot).toContain('  n1 -> s0_n0 [style=dashed, lhead=cluster_s0]')
    expect(dot).toContain('  n1 -> s1_n0 [style=dashed, lhead=cluster_s1]')
    // Both as the renderers read them: mermaid parses it, Graphviz draws it.
    const parsed = await parseMermaid(mermaid)
    expect(parsed.edges.map((edge) => `${edge.start}->${edge.end}`)).toContain('s1_n0->s1_n1')
    expect(await renderDot(dot)).toMatchObject({ status: 'success', errors: [] })
  }, 60_000)

  it('draw each subplan as a canvas group below its note, nested subplans inside, each note a card that opens it', async () => {
    const vault = fanOut()
    vault['web/notes.md'] = `---\nplan: deep\n---\n# Notes\n\nTake notes.\n`
    vault['web/deep/dig.md'] = note({ front: { type: 'start' }, title: 'Dig', body: 'Dig deeper.' })
    const graph = await loadPlan(await writeVault(vault))
    const canvas = toCanvas(graph, { visits: {}, statuses: { 'web/search': 'done', 'web/deep/dig': 'active' } }, { folder: 'Plans/fan' })
    expect(canvasProblems(canvas)).toEqual([])

    const groups = canvas.nodes.filter((node) => node.type === 'group')
    expect(groups.map((group) => [group.id, group.label])).toEqual([
      ['s0', 'web/'],
      ['s1', 'library/'],
      ['s0_s0', 'web/deep/'],
    ])
    const card = (file: string) => canvas.nodes.find((node) => node.type === 'file' && node.file === `Plans/fan/${file}`)!
    const group = (id: string) => groups.find((each) => each.id === id)!
    const inside = (inner: CanvasNode, outer: CanvasNode) =>
      inner.x >= outer.x && inner.y >= outer.y && inner.x + inner.width <= outer.x + outer.width && inner.y + inner.height <= outer.y + outer.height
    for (const file of ['web/search.md', 'web/notes.md', 'web/deep/dig.md']) expect(inside(card(file), group('s0'))).toBe(true)
    expect(inside(card('web/deep/dig.md'), group('s0_s0'))).toBe(true)
    expect(inside(group('s0_s0'), group('s0'))).toBe(true)
    for (const file of ['library/borrow.md', 'library/read.md']) expect(inside(card(file), group('s1'))).toBe(true)
    for (const file of ['brief.md', 'gather.md', 'report.md', 'library/read.md']) expect(inside(card(file), group('s0'))).toBe(false)
    // The two branches sit side by side in the row below the note that runs them.
    expect(group('s0').y).toBe(group('s1').y)
    expect(group('s0').y).toBeGreaterThan(card('gather.md').y + card('gather.md').height)
    expect(group('s0').x + group('s0').width).toBeLessThan(group('s1').x)
    // The note after the one that runs them comes below both branches.
    for (const id of ['s0', 's1']) expect(card('report.md').y).toBeGreaterThan(group(id).y + group(id).height)

    // Statuses of nested notes colour their cards; an edge runs from each running note to its subplan's group.
    expect([card('web/search.md').color, card('web/deep/dig.md').color, card('library/borrow.md').color]).toEqual(['4', '3', undefined])
    const links = canvas.edges.map((edge) => `${edge.fromNode}->${edge.toNode}`)
    const id = (file: string) => card(file).id
    expect(links).toEqual(expect.arrayContaining([`${id('gather.md')}->s0`, `${id('gather.md')}->s1`, `${id('web/notes.md')}->s0_s0`]))
    expect(links).toContain(`${id('web/search.md')}->${id('web/notes.md')}`)
    expect(links.filter((link) => link.endsWith('->s0'))).toHaveLength(1)
  })
})
