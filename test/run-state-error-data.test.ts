import { spawn } from 'node:child_process'
import { mkdir, mkdtemp, readFile, rename, rm, symlink, writeFile } from 'node:fs/promises'
import { hostname, tmpdir } from 'node:os'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import {
  completeStep,
  decide,
  editPlan,
  forkRun,
  nextStep,
  proposePlan,
  readLedger,
  readProposal,
  readRunStatus,
  recordEntry,
  RUN_STATE_ERROR_CODES,
  runPlan,
  RunStateError,
  type RunStateErrorCode,
} from 'vaultplan'
import { LEDGER_FORMAT } from '../src/memory/ledger.js'
import { TRACE_FORMAT } from '../src/store/trace.js'
import { draftReview, humanReview, linear, work } from './helpers/plans.js'
import { noJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { nestedPlan } from './helpers/subplans.js'
import { until } from './helpers/until.js'
import { edit, read, shownInNote, tempDir, writeVault } from './helpers/vault.js'

const query = 'Announce the release'
const options = { fsync: false }
const TRACE = '00_plan-trace/trace.md'
const LEDGER = '00_plan-trace/ledger.md'
const PROPOSAL = '00_plan-trace/proposal.md'

/** A vault of `humanReview` whose review waits for a person. */
async function reviewWaiting(): Promise<string> {
  const dir = await writeVault(humanReview())
  const draft = work(await nextStep(dir, { ...options, query }))
  const review = work(await completeStep(dir, draft.key, { output: 'd' }, options))
  await completeStep(dir, review.key, { output: 'r' }, options)
  return dir
}

/** A vault holding a proposal (v1) that waits for a person. */
async function proposed(): Promise<string> {
  const plan = '## research\ntype: start\nFind sources.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft.\n'
  return proposePlan(query, { into: join(await tempDir(), 'post'), llm: scriptedJudge(() => plan), fsync: false })
}

/** What a run writes in place of a `00_plan-trace/trace.md` header, with `front` as its frontmatter. */
async function withTrace(front: string, body = ''): Promise<string> {
  return writeVault({ ...draftReview(), [TRACE]: `---\n${front}\n---\n# Trace\n${body}` })
}

/** A case: what provokes the error, and the code and data it must carry. */
interface Case {
  code: RunStateErrorCode
  data: unknown
  refused: Promise<unknown>
  /** Runs after the error was caught (a process to stop). */
  after?: () => void
}

const cases: [string, () => Promise<Case>][] = [
  [
    'stale-decision: a proposal decided on the version before the one it holds now',
    async () => {
      const vault = await proposed()
      await decide(vault, 'proposal', { edge: 'revise', feedback: 'Outline first.' })
      await runPlan(vault, { ...options, llm: scriptedJudge(() => '## outline\ntype: start\nOutline it.\n') })
      return {
        refused: decide(vault, 'proposal', { edge: 'approve', version: 1 }),
        code: 'stale-decision',
        data: { node: 'proposal', madeOn: 1, current: 2 },
      }
    },
  ],
  [
    'stale-decision: a note decided on the visit before the one that waits now',
    async () => {
      const dir = await reviewWaiting()
      await decide(dir, 'review', { edge: 'needs revision', visit: 1 })
      const draft = work(await nextStep(dir, options))
      const review = work(await completeStep(dir, draft.key, { output: 'd2' }, options))
      await completeStep(dir, review.key, { output: 'r2' }, options)
      return { refused: decide(dir, 'review', { edge: 'approved', visit: 1 }), code: 'stale-decision', data: { node: 'review', madeOn: 1, current: 2 } }
    },
  ],
  [
    'stale-step: completeStep with another key names the pending step',
    async () => {
      const dir = await writeVault(draftReview())
      const step = work(await nextStep(dir, { ...options, query }))
      return {
        refused: completeStep(dir, `${step.runId}:draft:9`, { output: 'x' }, options),
        code: 'stale-step',
        data: { pending: { key: step.key, node: 'draft', visit: 1, step: 1 } },
      }
    },
  ],
  [
    'stale-step: a pending step inside a subplan names its folder',
    async () => {
      const dir = await writeVault(nestedPlan())
      const outline = work(await nextStep(dir, { ...options, query }))
      const find = work(await completeStep(dir, outline.key, { output: 'o' }, options))
      expect([find.plan, find.node.id]).toEqual(['research', 'find'])
      return {
        refused: completeStep(dir, outline.key, { output: 'again' }, options),
        code: 'stale-step',
        data: { pending: { key: find.key, node: 'find', visit: 1, step: find.step, plan: 'research' } },
      }
    },
  ],
  [
    'stale-step: a completed run has no pending step',
    async () => {
      const dir = await writeVault(linear())
      await runPlan(dir, { ...options, query, work: scriptedWorker(), llm: noJudge() })
      return { refused: completeStep(dir, 'any-key', { output: 'x' }, options), code: 'stale-step', data: { pending: null } }
    },
  ],
  [
    'bad-choice: completeStep with a choice outside the conditions lists them',
    async () => {
      const dir = await writeVault(draftReview())
      const draft = work(await nextStep(dir, { ...options, query }))
      const review = work(await completeStep(dir, draft.key, { output: 'd', choice: 'next' }, options))
      return {
        refused: completeStep(dir, review.key, { output: 'r', choice: 'maybe' }, options),
        code: 'bad-choice',
        data: { node: 'review', choices: ['approved', 'needs revision'] },
      }
    },
  ],
  [
    'busy: runPlan while an agent holds the only note ready names the claim',
    async () => {
      const dir = await writeVault(draftReview())
      const draft = work(await nextStep(dir, { ...options, query, agent: 'ada' }))
      return {
        refused: runPlan(dir, { ...options, work: async () => 'never' }),
        code: 'busy',
        data: { claims: [{ kind: 'work', node: 'draft', visit: 1, step: 1, claim: { agent: 'ada', key: draft.key, until: expect.any(String) } }] },
      }
    },
  ],
  [
    "claimed: another agent completes a step whose agent's lease is live",
    async () => {
      const dir = await writeVault(draftReview())
      const draft = work(await nextStep(dir, { ...options, query, agent: 'ada' }))
      return {
        refused: completeStep(dir, draft.key, { output: 'mine' }, { ...options, agent: 'bob' }),
        code: 'claimed',
        data: { claim: { agent: 'ada', key: draft.key, until: expect.any(String) } },
      }
    },
  ],
  [
    'bad-choice: decide with an edge the waiting note does not have',
    async () => ({
      refused: decide(await reviewWaiting(), 'review', { edge: 'ship it' }),
      code: 'bad-choice',
      data: { node: 'review', choices: ['approved', 'needs revision'] },
    }),
  ],
  [
    'bad-choice: decide on a proposal with another word than its three',
    async () => ({
      refused: decide(await proposed(), 'proposal', { edge: 'maybe' }),
      code: 'bad-choice',
      data: { node: 'proposal', choices: ['approve', 'revise', 'decline'] },
    }),
  ],
  [
    'vault-locked: a second runner while the first works names the holder',
    async () => {
      const dir = await writeVault(draftReview())
      let release = () => {}
      let started = () => {}
      const inside = new Promise<void>((resolve) => (started = resolve))
      const gate = new Promise<void>((resolve) => (release = resolve))
      const first = runPlan(dir, {
        ...options,
        query,
        llm: noJudge(),
        work: scriptedWorker(async () => {
          started()
          await gate
        }),
      })
      await inside
      const refused = runPlan(dir, { ...options, query, work: scriptedWorker(), llm: noJudge() })
      await refused.catch(() => undefined)
      release()
      await first.catch(() => undefined)
      return { refused, code: 'vault-locked', data: { vault: dir, holder: { pid: process.pid, host: hostname(), since: expect.any(String) } } }
    },
  ],
  [
    'vault-locked: a runner of the vault around it names that vault and its holder',
    async () => {
      const top = await writeVault({ 'a.md': '---\ntype: start\n---\n# A\n', 'sub/b.md': '---\ntype: start\n---\n# B\n' })
      const other = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60_000)'], { stdio: 'ignore' })
      await mkdir(join(top, '00_plan-trace/.lock'), { recursive: true })
      await writeFile(join(top, '00_plan-trace/.lock-holder.json'), JSON.stringify({ pid: other.pid, host: hostname(), since: 'a minute ago' }))
      return {
        refused: runPlan(join(top, 'sub'), { ...options, query, work: scriptedWorker() }),
        code: 'vault-locked',
        data: { vault: top, holder: { pid: other.pid, host: hostname(), since: 'a minute ago' } },
        after: () => other.kill(),
      }
    },
  ],
  [
    'vault-lock-lost: a runner whose lock was taken over names the new holder',
    async () => {
      const dir = await writeVault(linear())
      const holder = join(dir, '00_plan-trace/.lock/holder.json')
      // Written as a runner writes it, whole at once (a rename): a runner that looked while a plain write was half
      // done read an empty holder and named none (a test flake under load).
      const stolen = scriptedWorker(async () => {
        await writeFile(`${holder}.new`, `${JSON.stringify({ pid: 1, host: 'elsewhere', since: 'now' })}\n`)
        await rename(`${holder}.new`, holder)
      })
      return {
        refused: runPlan(dir, { ...options, query, work: stolen }),
        code: 'vault-lock-lost',
        data: { vault: dir, holder: { pid: 1, host: 'elsewhere', since: 'now' } },
      }
    },
  ],
  [
    'query-mismatch: another query than the recorded one names the recorded one',
    async () => {
      const dir = await writeVault(draftReview())
      await nextStep(dir, { ...options, query })
      return { refused: nextStep(dir, { ...options, query: 'Something else' }), code: 'query-mismatch', data: { recorded: query } }
    },
  ],
  [
    'query-mismatch: another query than the approved proposal’s',
    async () => {
      const vault = await proposed()
      await decide(vault, 'proposal', { edge: 'approve' })
      return { refused: runPlan(vault, { ...options, query: 'Something else', work: scriptedWorker() }), code: 'query-mismatch', data: { recorded: query } }
    },
  ],
  [
    'not-waiting: decide on a note that is pending',
    async () => {
      const dir = await writeVault(humanReview())
      await nextStep(dir, { ...options, query })
      return { refused: decide(dir, 'review', { edge: 'approved' }), code: 'not-waiting', data: { node: 'review', status: 'pending', waiting: [] } }
    },
  ],
  [
    'not-waiting: decide on a note the vault does not have, naming the notes that wait',
    async () => ({
      refused: decide(await reviewWaiting(), 'nowhere', { edge: 'approved' }),
      code: 'not-waiting',
      data: { node: 'nowhere', status: null, waiting: ['review'] },
    }),
  ],
  [
    'two-active: two notes set active by hand',
    async () => {
      const files = draftReview()
      const dir = await writeVault({
        ...files,
        'draft.md': files['draft.md']!.replace('type: start', 'type: start\nstatus: active'),
        'review.md': `---\nstatus: active\n---\n${files['review.md']!}`,
      })
      return { refused: nextStep(dir, { ...options, query }), code: 'two-active', data: { nodes: ['draft', 'review'] } }
    },
  ],
  [
    'ambiguous-decision: two boxes ticked in a waiting note',
    async () => {
      const dir = await reviewWaiting()
      await edit(dir, 'review.md', (text) => text.replace('- [ ] approved', '- [x] approved').replace('- [ ] needs revision', '- [x] needs revision'))
      return {
        refused: nextStep(dir, options),
        code: 'ambiguous-decision',
        data: { node: 'review', file: 'review.md', ticked: ['approved', 'needs revision'] },
      }
    },
  ],
  [
    'ambiguous-decision: decide along one edge while another is ticked',
    async () => {
      const dir = await reviewWaiting()
      await edit(dir, 'review.md', (text) => text.replace('- [ ] approved', '- [x] approved'))
      return {
        refused: decide(dir, 'review', { edge: 'needs revision' }),
        code: 'ambiguous-decision',
        data: { node: 'review', file: 'review.md', ticked: ['approved'] },
      }
    },
  ],
  [
    'ambiguous-decision: a proposal with two boxes ticked',
    async () => {
      const vault = await proposed()
      await edit(vault, PROPOSAL, (text) => text.replace('- [ ] approve', '- [x] approve').replace('- [ ] decline', '- [x] decline'))
      return {
        refused: runPlan(vault, { ...options, work: scriptedWorker() }),
        code: 'ambiguous-decision',
        data: { node: 'proposal', file: PROPOSAL, ticked: ['approve', 'decline'] },
      }
    },
  ],
  [
    'ambiguous-decision: deciding a proposal another box of which is ticked',
    async () => {
      const vault = await proposed()
      await edit(vault, PROPOSAL, (text) => text.replace('- [ ] revise', '- [x] revise'))
      return {
        refused: decide(vault, 'proposal', { edge: 'approve' }),
        code: 'ambiguous-decision',
        data: { node: 'proposal', file: PROPOSAL, ticked: ['revise'] },
      }
    },
  ],
  [
    'declined: a declined proposal names its version',
    async () => {
      const vault = await proposed()
      await decide(vault, 'proposal', { edge: 'decline' })
      return { refused: runPlan(vault, { ...options, work: scriptedWorker() }), code: 'declined', data: { version: 1 } }
    },
  ],
  [
    'not-revising: an agent proposes a next version of a proposal no person sent back',
    async () => {
      const vault = await proposed()
      await decide(vault, 'proposal', { edge: 'decline' })
      const plan = '## outline\ntype: start\nOutline it.\n'
      return {
        refused: proposePlan(query, { into: vault, document: plan, fsync: false }),
        code: 'not-revising',
        data: { version: 1, status: 'pending', ticked: ['decline'] },
      }
    },
  ],
  [
    'proposal-unreadable: a proposal that lost its query',
    async () => {
      const vault = await proposed()
      await edit(vault, PROPOSAL, (text) => text.replace(/^query: .*\n/m, ''))
      return { refused: readProposal(vault), code: 'proposal-unreadable', data: { file: PROPOSAL } }
    },
  ],
  [
    'trace-too-new: a trace of a newer format names both formats',
    async () => {
      const dir = await withTrace('vaultplan: trace\nformat: 99\nrun: r1\nquery: q')
      return { refused: readRunStatus(dir), code: 'trace-too-new', data: { file: join(dir, TRACE), format: 99, supported: TRACE_FORMAT } }
    },
  ],
  [
    'trace-unreadable: a trace without a vaultplan header',
    async () => {
      const dir = await withTrace('title: my notes')
      return { refused: readRunStatus(dir), code: 'trace-unreadable', data: { file: join(dir, TRACE) } }
    },
  ],
  [
    'trace-format: a record this version does not know names its line',
    async () => {
      const dir = await withTrace(`vaultplan: trace\nformat: ${TRACE_FORMAT}\nrun: r1\nquery: q`, '\n<!-- vaultplan:hop {"kind":"hunch"} -->\n')
      const line = (await read(dir, TRACE)).split('\n').findIndex((each) => each.includes('hunch')) + 1
      return { refused: readRunStatus(dir), code: 'trace-format', data: { file: join(dir, TRACE), line } }
    },
  ],
  [
    'trace-not-folder: a file where the run folder goes',
    async () => {
      const dir = await writeVault({ ...linear(), '00_plan-trace': 'not a folder' })
      return { refused: runPlan(dir, { ...options, query, work: scriptedWorker() }), code: 'trace-not-folder', data: { path: join(dir, '00_plan-trace') } }
    },
  ],
  [
    'trace-outside-vault: a run folder that is a symlink',
    async () => {
      const dir = await writeVault(linear())
      const elsewhere = await mkdtemp(join(tmpdir(), 'vaultplan-elsewhere-'))
      await symlink(elsewhere, join(dir, '00_plan-trace'))
      return {
        refused: runPlan(dir, { ...options, query, work: scriptedWorker() }),
        code: 'trace-outside-vault',
        data: { path: join(dir, '00_plan-trace') },
        after: () => void rm(elsewhere, { recursive: true, force: true }),
      }
    },
  ],
  [
    'status-unwritable: a note whose frontmatter takes no status names it and the status',
    async () => {
      const dir = await writeVault({ 'a.md': '---\n{type: start, tags: [a]}\n---\n# Flow-style frontmatter\n' })
      return {
        refused: runPlan(dir, { ...options, query, work: scriptedWorker() }),
        code: 'status-unwritable',
        data: { file: 'a.md', status: 'active' },
      }
    },
  ],
  [
    'node-missing: the note being worked was deleted',
    async () => {
      const dir = await writeVault(linear())
      const work = scriptedWorker(async (step) => {
        if (step.node.id !== 'b') return
        // A person deletes the note they see being worked.
        await shownInNote(dir, 'b.md', 'active')
        await rm(join(dir, 'b.md'))
        await writeFile(join(dir, 'a.md'), (await readFile(join(dir, 'a.md'), 'utf8')).replace('[[b]]', '[[c]]'))
      })
      return { refused: runPlan(dir, { ...options, query, work, llm: noJudge() }), code: 'node-missing', data: { node: 'b', file: 'b.md' } }
    },
  ],
  [
    'no-run: forking a vault that never ran',
    async () => {
      const dir = await writeVault(linear())
      return { refused: forkRun(dir, { step: 1, into: join(await tempDir(), 'fork') }), code: 'no-run', data: { vault: dir } }
    },
  ],
  [
    'run-vault-not-empty: forking into a folder that holds something',
    async () => {
      const dir = await writeVault(linear())
      await runPlan(dir, { ...options, query, work: scriptedWorker(), llm: noJudge() })
      const into = await writeVault({ 'mine.md': '# Mine\n' })
      return { refused: forkRun(dir, { step: 1, into }), code: 'run-vault-not-empty', data: { folder: into } }
    },
  ],
  [
    'run-vault-not-empty: a run vault that holds other notes',
    async () => {
      const other = await writeVault({ 'journal.md': '# My journal\n' })
      return {
        refused: runPlan(await writeVault(linear()), { ...options, query, runVault: other, work: scriptedWorker() }),
        code: 'run-vault-not-empty',
        data: { folder: other },
      }
    },
  ],
  [
    'run-vault-other-plan: the run vault of another plan names that plan',
    async () => {
      const base = await tempDir()
      for (const plan of ['A', 'B']) await writeVault({ 'x.md': `---\ntype: start\n---\n# Plan ${plan}\n` }, join(base, plan))
      const runVault = join(base, 'run')
      await runPlan(join(base, 'A'), { ...options, query, runVault, work: scriptedWorker() })
      return {
        refused: runPlan(join(base, 'B'), { ...options, query, runVault, work: scriptedWorker() }),
        code: 'run-vault-other-plan',
        data: { folder: runVault, source: join(base, 'A') },
      }
    },
  ],
  [
    'ledger-unreadable: a ledger without a vaultplan header',
    async () => {
      const dir = await writeVault({ ...linear(), [LEDGER]: '# My own ledger\n' })
      return { refused: readLedger(dir), code: 'ledger-unreadable', data: { file: join(dir, LEDGER) } }
    },
  ],
  [
    'ledger-unreadable: an entry this version does not know names its line',
    async () => {
      const dir = await writeVault(linear())
      await recordEntry(dir, { kind: 'fact', text: 'x' })
      await writeFile(join(dir, LEDGER), `${await read(dir, LEDGER)}\n<!-- vaultplan:ledger {"op":"record","kind":"hunch","id":"H1","text":"y","at":"z"} -->\n`)
      const line = (await read(dir, LEDGER)).split('\n').findIndex((each) => each.includes('hunch')) + 1
      return { refused: readLedger(dir), code: 'ledger-unreadable', data: { file: join(dir, LEDGER), line } }
    },
  ],
  [
    'ledger-too-new: a ledger of a newer format names both formats',
    async () => {
      const dir = await writeVault(linear())
      await recordEntry(dir, { kind: 'fact', text: 'x' })
      await edit(dir, LEDGER, (text) => text.replace(`format: ${LEDGER_FORMAT}`, 'format: 7'))
      return { refused: readLedger(dir), code: 'ledger-too-new', data: { file: join(dir, LEDGER), format: 7, supported: LEDGER_FORMAT } }
    },
  ],
  [
    'note-in-use: editPlan names the note being worked that it would replace',
    async () => {
      const dir = await writeVault(linear())
      work(await nextStep(dir, { ...options, query }))
      return { refused: editPlan(dir, { document: '## a\ntype: start\nDo a, differently.\n### Next\n- [[b]]\n' }), code: 'note-in-use', data: { nodes: ['a'] } }
    },
  ],
  [
    'visited-note: editPlan names the visited note it would remove',
    async () => {
      const dir = await writeVault(linear())
      const a = work(await nextStep(dir, { ...options, query }))
      await completeStep(dir, a.key, { output: 'a done' }, options)
      return { refused: editPlan(dir, { document: '## c\ntype: start\nDo c.\n', remove: ['a'] }), code: 'visited-note', data: { nodes: ['a'] } }
    },
  ],
  [
    'note-busy: a note an editor keeps saving names it',
    async () => {
      const dir = await writeVault({ 'draft.md': '---\ntype: start\n---\n# Draft\n\n## Next\n- [[send]]\n', 'send.md': '# Send\n' })
      let saves = 0
      // Saved every 30 ms for longer than the loader waits for a note to settle; without a last line break, every read of it is doubted.
      const saving = setInterval(() => void writeFile(join(dir, 'send.md'), `# Send\n\nsaved ${++saves} times`), 30)
      await until(() => saves >= 3, 'the editor to save three times')
      return {
        refused: runPlan(dir, { ...options, query, work: scriptedWorker(), llm: noJudge() }),
        code: 'note-busy',
        data: { files: ['send.md'] },
        after: () => clearInterval(saving),
      }
    },
  ],
]

describe('every RunStateError carries its data, typed per code', () => {
  it.each(cases)(
    '%s',
    async (_name, provoke) => {
      const { refused, code, data, after } = await provoke()
      const error = await refused.then(
        () => undefined,
        (caught: unknown) => caught,
      )
      after?.()
      expect(error).toBeInstanceOf(RunStateError)
      const { code: actual, data: carried } = error as RunStateError
      expect({ code: actual, data: carried }).toEqual({ code, data })
    },
    20_000,
  )

  it('the table provokes every code a caller can meet', () => {
    const provoked = new Set(cases.map(([name]) => name.split(':')[0]).sort())
    // `no-start`: a plan without a start note is a PlanValidationError before any run reaches it.
    // `checks-in-vault`: only a queue worker meets it (test/queue-checks.test.ts, which needs PostgreSQL).
    expect([...provoked]).toEqual(RUN_STATE_ERROR_CODES.filter((code) => code !== 'no-start' && code !== 'checks-in-vault'))
  })

  it('data is checked per code when made, and narrows on code when caught (the typecheck is the test)', () => {
    // @ts-expect-error: the data of another code
    expect(new RunStateError('stale-step', 'stale', { choices: [] }).data).toEqual({ choices: [] })
    const error: unknown = new RunStateError('stale-step', 'stale', { pending: null })
    if (error instanceof RunStateError && error.code === 'stale-step') expect(error.data.pending).toBeNull()
    else expect.unreachable()
  })
})
