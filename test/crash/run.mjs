#!/usr/bin/env node
// Crash harness: runs a plan vault in child processes, kills them with
// SIGKILL at random points, resumes until the run completes, and checks
// that nothing a user would care about was lost.
//
//   npm run test:crash -- --trials 200 [--seed S] [--jobs J] [--only I] [--keep] [--dist PATH] [--mode event|pause|power|editor|mixed] [--plan flat|nested] [--scenario agents]
//
// `--scenario agents` runs only the agent trials (agents.mjs): two agent processes on a branched plan, with kills.
//
// `--plan nested`: the vault is a plan inside a plan (vault.mjs): the top plan's `fanout` note runs
// `post/` (the flat fixture, whose path is checked as below) and `side/` as parallel branches, so
// the kills land inside a branch, in the other branch and in the top plan; each folder's trace must
// be a prefix of (and finally equal to) the uninterrupted run's.
//
// `power` (and a fifth of the placed kills of `mixed`): a power cut. At the placed point the child
// first does to the files what losing power does to unflushed data (see child.mjs), then the parent
// fakes a new boot and opens the vault's journal, as the next run does, before it checks.
//
// Each trial copies the vault and runs it in a child (fsync on). A kill is
// either timed (after the k-th line the child prints, plus a random delay of
// up to 3 ms; the worker and judge sleep random amounts so the kill lands
// anywhere) or placed (the child stops at its n-th file operation, work or
// judge call and the parent kills it there; a placed write may be torn
// first). Up to four kills per trial, then a run to completion and one more
// run that must return the recorded result without working anything.
//
// Every tenth trial from the 4th instead kills a `fresh: true` start while it archives the last run,
// every tenth from the 8th the copy of the plan into a run vault, every tenth from the 10th the writing
// out of the plan, loaded as an in-memory graph, into a run vault (savePlan; see scenarios.mjs).
//
// Every tenth trial from the 6th (every trial with `--mode editor`) runs a person's editor beside it in
// a process of its own (editor.mjs): it saves notes of the plan in place (truncate, then write in small
// chunks with pauses), each save adding a line under the note's title, while the run goes and while it
// is killed and resumed. The checks then take the person's lines out before comparing a note with its
// original, and check that every line the editor saved is in its note, in order, none lost. The
// editor's lines change no edge, status or budget, so the path must still equal the uninterrupted one.
// The one edit a person's editor can make that moves the run: a save whose read came just before the
// run rewrote the note's status and whose truncate just after writes the old status back (`STALE`, a
// status a person set); such a trial checks the person's bytes only, not the path, and is counted.
//
// Checks and retries: the fixture's `draft` is decided by a check the runner defines (check.mjs, a
// command that logs and sleeps), and its start note's first try fails in every process (`retries: 1`),
// so each run that works it waits a 1 s backoff. A fifth of the kills aim at one of these (while the
// run has one ahead): a check while it runs, the moment the draft's output is saved with its verdict,
// or the backoff. At the end, no check of a visit started after its verdict was saved (a check
// counted twice as passed), and each hop its check decided had a check pass behind it.
//
// After every kill: every note parses and the plan validates, statuses are
// valid values, the user's bytes are unchanged outside the status value,
// the trace's hops are a prefix of the uninterrupted path, no budget is
// exceeded. After the last run, in addition: the hops equal the
// uninterrupted path exactly, statuses, outputs, final note and result equal
// the uninterrupted run's, no temp file or lock is left, and the worker got
// the same key (and the same inputs) for a visit on every call.
import { spawn } from 'node:child_process'
import { appendFileSync, existsSync, readdirSync, readFileSync, realpathSync, utimesSync, writeFileSync } from 'node:fs'
import { cp, mkdir, mkdtemp, rm } from 'node:fs/promises'
import { availableParallelism, tmpdir } from 'node:os'
import { basename, dirname, join, resolve } from 'node:path'
import { fileURLToPath, pathToFileURL } from 'node:url'
import { checkNested, checkVault, describeFinished, describeNested, killPoint, lostFlushedHops, snapshot, TRACE_FOLDER } from './inspect.mjs'
import { editorProblems, startEditor } from './editor.mjs'
import { runAgentTrials } from './agents.mjs'
import { runScenarioTrial } from './scenarios.mjs'
import { makeScript, mulberry32 } from './script.mjs'
import { BRANCH, CHECKED_NOTE, checksFor, FILES, MAX_STEPS, NESTED_MAX_STEPS, QUERY, writeVault } from './vault.mjs'

const HERE = dirname(fileURLToPath(import.meta.url))
const BUILT = resolve(HERE, '../../dist/index.js')
const CHILD = join(HERE, 'child.mjs')
/** The path the fixture must take uninterrupted: a check that the harness tests what it means to. */
const EXPECTED_PATH = ['research#1', 'draft#1', 'review#1', 'draft#2', 'review#2', 'draft#3', 'review#3', 'polish#1', 'polish#2', 'blog/post#1']
const MAX_KILLS = 4
const CHILD_TIMEOUT_MS = 60_000
/** The share of trials that run the finished vault once more (it must work nothing); each child costs a Node start. */
const RERUN_SHARE = 0.35

/**
 * Runs the crash trials and returns the report; prints progress and the
 * summary line through `log`.
 *
 * @param {{ trials?: number, seed?: number, jobs?: number, only?: number, keep?: boolean, dist?: string, mode?: 'mixed' | 'event' | 'pause', keepFailed?: boolean, log?: (line: string) => void }} [options]
 *   `dist`: the library build to test (default `dist/index.js`), e.g. a deliberately broken copy;
 *   `mode`: `event` (timed kills), `pause` (placed kills) or `mixed` (default);
 *   `keepFailed`: keep the vaults of failed trials for a look (default true)
 */
export async function runCrashTrials(options = {}) {
  const trials = options.trials ?? 200
  const seed = (options.seed ?? Math.floor(Math.random() * 2 ** 31)) >>> 0
  // Children spend much of their time in fsync, so a few more than the cores keep them busy.
  const jobs = Math.max(1, options.jobs ?? Math.min(4, 2 * availableParallelism()))
  const log = options.log ?? ((line) => console.log(line))
  const modes = options.mode ?? 'mixed'
  if (!['mixed', 'event', 'pause', 'power', 'editor'].includes(modes))
    throw new TypeError(`Expected \`mode\` to be \`mixed\`, \`event\`, \`pause\`, \`power\` or \`editor\`, got \`${modes}\``)
  const plan = options.plan ?? 'flat'
  if (options.scenario !== undefined && options.scenario !== 'agents')
    throw new TypeError(`Expected \`scenario\` to be \`agents\` (or none), got \`${options.scenario}\``)
  if (!['flat', 'nested'].includes(plan)) throw new TypeError(`Expected \`plan\` to be \`flat\` or \`nested\`, got \`${plan}\``)
  const built = resolve(options.dist ?? BUILT)
  if (!existsSync(built)) throw new Error(`\`${built}\` is missing: run \`npm run build\` first`)
  const started = Date.now()
  // Every child runs the same build, even when someone rebuilds `dist/` meanwhile. The copy sits
  // under node_modules/ so that the build's own imports still resolve.
  const cache = resolve(HERE, '../../node_modules/.cache')
  await mkdir(cache, { recursive: true })
  const snapshotDir = await mkdtemp(join(cache, 'vaultplan-crash-build-'))
  await cp(dirname(built), snapshotDir, { recursive: true })
  const distPath = join(snapshotDir, basename(built))
  try {
    if (options.scenario === 'agents')
      return await runAgentTrials(
        pathToFileURL(distPath).href,
        { ...options, trials, seed, jobs, log, modes, started },
        { seedOf: (i) => hash(seed, i), reboot, recover },
      )
    return await trialsWith(distPath, { ...options, trials, seed, jobs, log, modes, started, nested: plan === 'nested' })
  } finally {
    await rm(snapshotDir, { recursive: true, force: true })
  }
}

async function trialsWith(distPath, options) {
  const { trials, seed, jobs, log, modes, started, nested } = options
  const lib = await import(pathToFileURL(distPath).href)
  const root = await mkdtemp(join(tmpdir(), 'vaultplan-crash-'))
  const fixture = join(root, 'fixture')
  await writeVault(fixture, { nested })

  let reference, calibration
  try {
    reference = await referenceRun(lib, root, fixture, nested)
    calibration = await calibrate(root, fixture, reference, lib, pathToFileURL(distPath).href, nested)
  } catch (error) {
    error.message += ` (files kept in ${root})`
    throw error
  }
  const context = { root, fixture, reference, calibration, seed, lib, dist: pathToFileURL(distPath).href, modes, nested }
  const indexes = options.only !== undefined ? [options.only] : Array.from({ length: trials }, (_, index) => index)
  log(
    `crash: seed ${seed}, ${indexes.length} trials, ${jobs} at a time,${nested ? ` nested plan (the path is branch \`${BRANCH}/\`'s),` : ''} reference path ${EXPECTED_PATH.join(' ')} (${calibration.ops} kill points of a full run)`,
  )

  const results = []
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(jobs, indexes.length) }, async () => {
      while (next < indexes.length) {
        const index = indexes[next++]
        // Every tenth trial from the 4th kills a `fresh: true` start as it archives, every tenth from the 8th the copy into a run vault,
        // every tenth from the 10th the writing out of an in-memory plan into one.
        // The scenarios check the flat fixture; the nested plan runs the kill trials only.
        const scenario = modes === 'editor' || nested ? undefined : { 3: 'fresh', 7: 'copy', 9: 'save' }[index % 10]
        const trial = await (
          scenario
            ? runScenarioTrial(index, scenario, context, { runChild, comparable, seedOf: (i) => hash(seed, i), reboot, recover })
            : runTrial(index, context)
        ).catch((error) => ({ index, kills: [], resumes: 0, staleLocks: [], problems: [{ kind: 'other', message: `harness error: ${error.stack}` }] }))
        results.push(trial)
        if (trial.problems.length === 0 && !options.keep) await rm(join(root, `trial-${index}`), { recursive: true, force: true })
      }
    }),
  )
  results.sort((a, b) => a.index - b.index)

  const points = new Map()
  for (const trial of results) for (const kill of trial.kills) points.set(kill.point, (points.get(kill.point) ?? 0) + 1)
  const failed = results.filter((trial) => trial.problems.length > 0)
  const dataLosses = failed.filter((trial) => trial.problems.some((problem) => problem.kind === 'data-loss')).length
  const budgetViolations = failed.filter((trial) => trial.problems.some((problem) => problem.kind === 'budget')).length
  const resumes = results.reduce((sum, trial) => sum + trial.resumes, 0)
  const kills = results.reduce((sum, trial) => sum + trial.kills.length, 0)
  const staleLocks = results.flatMap((trial) => trial.staleLocks.map((stale) => ({ index: trial.index, ...stale })))

  for (const trial of failed.slice(0, 3)) {
    const flags = `${options.mode ? ` --mode ${options.mode}` : ''}${options.dist ? ` --dist ${options.dist}` : ''}${nested ? ' --plan nested' : ''}`
    log(
      `\nFAILED trial ${trial.index} (reproduce: npm run test:crash -- --seed ${seed} --only ${trial.index}${flags} --keep; vault kept in ${join(root, `trial-${trial.index}`)})`,
    )
    trial.kills.forEach((kill, k) => log(`  kill ${k + 1} (child run ${kill.attempt}): ${kill.point}, ${kill.how}`))
    for (const problem of trial.problems.slice(0, 5)) log(`  [${problem.kind}] ${problem.message}`)
  }
  if (failed.length > 3)
    log(
      `\n... and ${failed.length - 3} more failed trials: ${failed
        .slice(3)
        .map((trial) => trial.index)
        .join(', ')}`,
    )
  const steppingKills = results.reduce((sum, trial) => sum + trial.kills.filter((kill) => kill.stepping).length, 0)
  log(
    `kill points: ${[...points]
      .sort((a, b) => b[1] - a[1])
      .map(([point, count]) => `${point} ${count}`)
      .join(', ')} (${kills} kills, ${steppingKills} of them in runs driven by nextStep/completeStep)`,
  )
  if (staleLocks.length > 0) {
    const after = new Map()
    for (const stale of staleLocks) after.set(stale.after, (after.get(stale.after) ?? 0) + 1)
    log(
      `stale locks: ${staleLocks.length} resumes were refused (\`vault-locked\`) by the lock of a killed runner and went on once it was stale; killed at ${[...after].map(([label, count]) => `${label} ${count}`).join(', ')}`,
    )
  }
  for (const scenario of ['fresh', 'copy', 'save']) {
    const ran = results.filter((trial) => trial.scenario === scenario)
    if (ran.length > 0)
      log(
        `${scenario} trials: ${ran.length}, ${ran.reduce((sum, trial) => sum + trial.kills.length, 0)} kills ${{ fresh: 'while a `fresh: true` start archived the last run', copy: 'while the template was copied into a run vault', save: 'while an in-memory plan was written out into a run vault' }[scenario]}`,
      )
  }
  const edited = results.filter((trial) => trial.editor)
  if (edited.length > 0)
    log(
      `editor trials: ${edited.length}, ${edited.reduce((sum, trial) => sum + trial.kills.length, 0)} kills while a person's editor saved notes in place (${edited.reduce((sum, trial) => sum + trial.editor.saves, 0)} saves, ${edited.reduce((sum, trial) => sum + trial.editor.caught, 0)} of them caught by a status rewrite mid-save and put back; ${edited.reduce((sum, trial) => sum + trial.editor.busy, 0)} runs refused a note that kept changing and were run again; ${edited.filter((trial) => trial.editor.stale > 0).length} trials had a save write back a status the run had moved on from, their path not compared)`,
    )
  const checked = results.filter((trial) => trial.checks)
  const sum = (field) => checked.reduce((total, trial) => total + trial.checks[field], 0)
  const killsAt = (prefix) => results.reduce((total, trial) => total + trial.kills.filter((kill) => kill.point.startsWith(prefix)).length, 0)
  const checksTwice = sum('twice')
  log(
    `checks and retries: ${sum('runs')} runs of the draft's check (${killsAt('during-check')} kills during one), ${sum('backoffs')} retry backoffs (${killsAt('during-backoff')} kills during one), ${checksTwice} checks counted twice as passed for one visit`,
  )
  const wall = (Date.now() - started) / 1000
  log(`wall time ${wall.toFixed(1)} s`)
  const summary = `crash: ${results.length} trials${nested ? ' of a nested plan' : ''}, ${points.size} kill points covered, ${resumes} resumes, ${dataLosses} data losses, ${budgetViolations} budget violations`
  log(summary)
  if (failed.length > 0) log(`crash: ${failed.length} trials failed a check (seed ${seed})`)
  if ((failed.length === 0 || options.keepFailed === false) && !options.keep) await rm(root, { recursive: true, force: true })
  return {
    ok: failed.length === 0,
    seed,
    summary,
    trials: results.length,
    killPoints: Object.fromEntries(points),
    kills,
    resumes,
    dataLosses,
    budgetViolations,
    checksTwice,
    staleLocks,
    failed,
    wall,
  }
}

/** The uninterrupted run, in this process: the path and the inputs every trial must reproduce. */
async function referenceRun(lib, root, fixture, nested) {
  const vault = join(root, 'reference')
  await cp(fixture, vault, { recursive: true })
  const entries = []
  const { work, llm } = makeScript({ vault, log: (entry) => entries.push(entry) })
  const checks = checksFor(join(root, 'reference-side.log'), 0)
  const result = await lib.runPlan(vault, { query: QUERY, work, llm, fsync: true, maxSteps: nested ? NESTED_MAX_STEPS : MAX_STEPS, checks })
  const finished = describeFinished(nested ? join(vault, BRANCH) : vault)
  const path = finished.hops.map((hop) => `${hop.node}#${hop.visit}`)
  if (result.status !== 'completed' || path.join(' ') !== EXPECTED_PATH.join(' ')) {
    throw new Error(
      `the uninterrupted run took ${path.join(' ')} (${result.status}: ${result.reason ?? ''}), expected ${EXPECTED_PATH.join(' ')}: fix the fixture or the library first`,
    )
  }
  const violations = entries.filter((entry) => entry.t === 'violation' || (entry.t === 'work-start' && entry.status !== 'active'))
  if (violations.length > 0) throw new Error(`the uninterrupted run broke the harness's expectations: ${JSON.stringify(violations)}`)
  const works = {}
  const judges = {}
  for (const entry of entries) {
    if (entry.t === 'work-start') works[`${entry.node}#${entry.visit}`] = { step: entry.step, inputs: entry.inputs }
    if (entry.t === 'judge-start') judges[`${entry.node}#${entry.visit}`] = { role: entry.role, earlier: entry.earlier }
  }
  const graph = await lib.loadPlan(nested ? join(vault, BRANCH) : vault)
  return { ...finished, result: comparable(result), works, judges, nodeIds: [...graph.nodes.keys()].sort(), ...(nested && { nested: describeNested(vault) }) }
}

/** One uninterrupted child run: how many lines and kill points a whole run has, and a check that the child walks the reference path. */
async function calibrate(root, fixture, reference, lib, dist, nested) {
  const dir = join(root, 'calibration')
  const vault = join(dir, 'vault')
  await cp(fixture, vault, { recursive: true })
  const outcome = await runChild({ dist, vault, sideLog: join(dir, 'side.log'), attempt: 0, mode: 'none', seed: 1, nested })
  if (!outcome.result) throw new Error(`the uninterrupted child run failed: ${JSON.stringify(outcome.error) ?? outcome.stderr}`)
  const { problems } = await checkVault(nested ? join(vault, BRANCH) : vault, reference, { final: true, loadPlan: lib.loadPlan, branch: nested })
  if (nested) problems.push(...checkNested(vault, reference, { final: true }))
  if (JSON.stringify(comparable(outcome.result)) !== JSON.stringify(reference.result)) problems.push({ message: `result ${JSON.stringify(outcome.result)}` })
  if (problems.length > 0) throw new Error(`the uninterrupted child run differs from the in-process one: ${problems.map((p) => p.message).join('\n')}`)
  await rm(dir, { recursive: true, force: true })
  return { ops: outcome.ops, lines: outcome.lines }
}

/** The notes the editor of an editor trial saves: every note of the plan. */
const EDITED_NOTES = Object.keys(FILES).filter((file) => file.endsWith('.md'))

/** A kill trial; with a person's editor saving notes beside it, in an editor trial. */
async function runTrial(index, context) {
  const { seed, modes, nested } = context
  const editing = !nested && (modes === 'editor' || (modes === 'mixed' && index % 10 === 5))
  let editor
  const startEditing = (vault) => (editor = startEditor({ vault, notes: EDITED_NOTES, seed: hash(seed, index) ^ 0x5eed }))
  try {
    const trial = await killTrial(index, context, editing ? startEditing : undefined)
    if (!editor) return trial
    const { stale, saves, caught } = editor.state
    trial.editor = { saves, stale: stale.length, caught: caught.length, busy: trial.busy }
    // A save that wrote back a status the run had moved on from is a person setting a status: the run may legally take
    // another path, so only the person's bytes are checked.
    if (stale.length > 0) trial.problems = trial.problems.filter((problem) => problem.bytes)
    return trial
  } finally {
    editor?.kill()
  }
}

async function killTrial(index, { root, fixture, reference, calibration, seed, lib, dist, modes, nested }, startEditing) {
  const random = mulberry32(hash(seed, index))
  const aim = mulberry32(hash(seed, index) ^ 0xc4ec)
  const dir = join(root, `trial-${index}`)
  const vault = join(dir, 'vault')
  // The folder whose path and notes checkVault looks at: the branch, in a nested plan (checkNested looks at the rest).
  const branch = nested ? join(vault, BRANCH) : vault
  let editor
  /** The checks of a kill (`final`: of the finished run). A person's editor is paused while they look, stopped before the final look. */
  const check = async (final) => {
    if (editor && final) await editor.stop()
    else if (editor) await editor.pause()
    try {
      const found = await checkVault(branch, reference, { final, loadPlan: lib.loadPlan, powerCut: trial.powerCut, branch: nested, edited: !!editor })
      if (nested) found.problems.push(...checkNested(vault, reference, { final }))
      if (editor)
        for (const message of editorProblems((note) => readFileSync(join(vault, note), 'utf8'), editor.state))
          found.problems.push({ kind: 'data-loss', bytes: true, message: `the editor's saves: ${message}` })
      return found
    } finally {
      if (editor && !final) editor.resume()
    }
  }
  const sideLog = join(dir, 'side.log')
  await cp(fixture, vault, { recursive: true })
  const trial = { index, kills: [], resumes: 0, staleLocks: [], problems: [], powerCut: false, busy: 0 }
  const problem = (kind, message, bytes = false) => trial.problems.push({ kind, message, ...(bytes && { bytes }) })
  if (startEditing) editor = startEditing(vault)
  const plannedKills = 1 + Math.floor(random() * MAX_KILLS)
  let attempt = 0
  let killed = false
  let completed
  // The trace is appended to, never rewritten: each look at it starts with the previous one.
  let traceSeen = ''
  const traceAppendedOnly = (when) => {
    const text = snapshot(branch).trace?.text ?? ''
    if (!text.startsWith(traceSeen)) problem('data-loss', `${when}: the trace was rewritten, not appended to:\n--- before\n${traceSeen}\n--- after\n${text}`)
    traceSeen = text
  }

  // The editor paused for one child run after the note it saved was refused more than twice.
  let settling = false
  /** Starts a child; a `vault-locked` refusal after a kill is waited out (the lock is made stale) and retried. */
  const run = async (config, kill, { resume = true } = {}) => {
    for (;;) {
      if (killed && resume) trial.resumes += 1
      // The verdicts on disk as the child starts (the journal applied after a kill): a check of those visits must not run.
      for (const visit of verdictsSaved(branch)) appendFileSync(sideLog, `${JSON.stringify({ a: attempt, t: 'output-saved', visit })}\n`)
      // Every other child walks the vault through the stepping API instead of runPlan.
      const outcome = await runChild({ dist, vault, sideLog, attempt, stepping: attempt % 2 === 1, nested, ...config }, kill)
      attempt += 1
      if (settling) {
        editor.resume()
        settling = false
      }
      // Beside a person's editor, a note it kept saving for 3 s is refused (`note-busy`) or left out of the load with a warning:
      // nothing is written from it, and the library says to run again once it is saved. So the person does, a few times; from
      // the third refusal on they stop typing while it runs (on a loaded machine the editor's saves may never leave 3 s quiet).
      if (editor && keptChanging(outcome.error) && trial.busy < 5) {
        trial.busy += 1
        if (trial.busy >= 3) {
          await editor.pause()
          settling = true
        }
        continue
      }
      if (outcome.error?.code !== 'vault-locked' || !killed || trial.staleLocks.length > 3) return { ...outcome, attempt: attempt - 1 }
      // A killed runner's lock: proper-lockfile takes it over once its mtime is older than the stale window.
      const last = trial.kills.at(-1)
      trial.staleLocks.push({ after: last?.label ?? last?.point ?? 'unknown', message: outcome.error.message })
      const past = new Date(Date.now() - 60_000)
      try {
        utimesSync(join(vault, TRACE_FOLDER, '.lock'), past, past)
        // A killed runner of a nested plan also held its branches' locks.
        for (const folder of nested ? [BRANCH, 'side'] : [])
          if (existsSync(join(vault, folder, TRACE_FOLDER, '.lock'))) utimesSync(join(vault, folder, TRACE_FOLDER, '.lock'), past, past)
      } catch (error) {
        return { ...outcome, attempt: attempt - 1, stderr: `${outcome.stderr}\n(no lock to make stale: ${error.code})` }
      }
    }
  }

  while (!completed && trial.kills.length < plannedKills && trial.problems.length === 0) {
    const hopsDone = snapshot(branch).trace?.hops.length ?? 0
    const remaining = (reference.hops.length - hopsDone + 1) / (reference.hops.length + 1)
    const coin = random()
    const mode = modes === 'mixed' || modes === 'editor' ? (coin < 0.5 ? 'event' : 'pause') : modes === 'power' ? 'pause' : modes
    // A power cut: a placed kill that first drops what was not flushed (a fifth of the placed kills when mixed).
    // Not beside an editor: its own unflushed writes would be lost too, which the child's model does not know.
    const power = modes === 'power' || (modes === 'mixed' && !editor && mode === 'pause' && random() < 0.2)
    const config = {
      mode,
      power,
      seed: Math.floor(random() * 2 ** 32),
      torn: random() < 0.25,
      pauseAt: 1 + Math.floor(random() * Math.ceil(calibration.ops * remaining)),
    }
    const kill =
      mode === 'event'
        ? { afterLine: 1 + Math.floor(random() * Math.ceil(calibration.lines * remaining)), delayUs: Math.floor(random() ** 2 * 3000) }
        : undefined
    // A fifth of the kills aim, while the run has one ahead, at a check of the draft while it runs, just after its
    // verdict is saved, or at the start note's retry backoff while it waits: at the point with that label, or 0-3 ms
    // after the child says it began. Drawn from a generator of their own, so the other draws of a seed stay as they were.
    const targets = [...(hopsDone === 0 ? ['backoff'] : []), ...(hopsDone < 6 ? ['check', 'verdict'] : [])]
    const target = targets.length > 0 && aim() < 0.2 ? targets[Math.floor(aim() * targets.length)] : undefined
    if (target && mode === 'pause') config.pauseOn = `${target} `
    if (target && mode === 'event') kill.afterPrefix = { check: 'C+ ', verdict: 'V ', backoff: 'B+ ' }[target]
    const outcome = await run(config, kill)
    if (outcome.killed) {
      killed = true
      // The machine comes back: a new boot, and the next run's first act, the journal's repair.
      if (power) {
        await reboot(vault, dist)
        trial.powerCut = true
      } else await recover(vault, dist)
      const attemptLog = readSideLog(sideLog).filter((entry) => entry.a === outcome.attempt)
      const { problems, state } = await check(false)
      if (power)
        problems.push(
          ...lostFlushedHops(
            vault,
            attemptLog.find((entry) => entry.t === 'power-cut'),
          ),
        )
      traceAppendedOnly(`after kill ${trial.kills.length + 1}`)
      const point = killPoint(state, attemptLog)
      const how =
        mode === 'pause'
          ? `placed at ${outcome.pause}`
          : `timed: ${kill.delayUs} µs after ${kill.afterPrefix ? `the first line \`${kill.afterPrefix}…\`` : `line ${kill.afterLine}`} \`${outcome.killLine ?? ''}\``
      trial.kills.push({
        attempt: outcome.attempt,
        stepping: outcome.attempt % 2 === 1,
        mode: power ? 'power' : mode,
        point: power ? `${point} (power cut)` : point,
        how,
        label:
          mode === 'pause'
            ? outcome.pause
                ?.replace(/^\d+ /, '')
                .replace(/\/[^ ]*?\.vaultplan-tmp-\S+/, '/<temp>')
                .replace(/\.vaultplan-tmp-\S+/, '<temp>')
            : undefined,
      })
      for (const found of problems) problem(found.kind, `after kill ${trial.kills.length} (${point}, ${how}): ${found.message}`, found.bytes)
    } else if (outcome.result) {
      completed = outcome.result
    } else {
      problem('other', `child run ${outcome.attempt} failed: ${outcome.timedOut ? 'timed out' : ''}${JSON.stringify(outcome.error) ?? ''}\n${outcome.stderr}`)
    }
  }
  if (!completed && trial.problems.length === 0) {
    const outcome = await run({ mode: 'none', seed: 0 })
    if (outcome.result) completed = outcome.result
    else problem('other', `the resuming run ${outcome.attempt} failed: ${JSON.stringify(outcome.error) ?? ''}\n${outcome.stderr}`)
  }
  if (!completed) return trial

  if (JSON.stringify(comparable(completed)) !== JSON.stringify(reference.result)) {
    problem('data-loss', `the result is ${JSON.stringify(comparable(completed))}, expected ${JSON.stringify(reference.result)}`)
  }
  for (const found of (await check(true)).problems) problem(found.kind, `after the run completed: ${found.message}`, found.bytes)
  traceAppendedOnly('after the run completed')

  // Each visit's key names the run of the folder it belongs to.
  const runOf = (plan) => snapshot(nested ? join(vault, plan || '.') : vault).trace?.run
  checkCalls(readSideLog(sideLog), reference, runOf, problem, nested)
  trial.checks = checkChecks(readSideLog(sideLog), snapshot(branch).trace?.hops ?? [], problem)
  if (random() >= RERUN_SHARE) return trial

  // Running a finished vault again returns the recorded result and works nothing.
  const again = await run({ mode: 'none', seed: 0 }, undefined, { resume: false })
  if (!again.result) problem('other', `running the finished vault again failed: ${JSON.stringify(again.error)}`)
  else if (JSON.stringify(comparable(again.result)) !== JSON.stringify(reference.result))
    problem('data-loss', `running the finished vault again returned ${JSON.stringify(comparable(again.result))}`)
  const entries = readSideLog(sideLog)
  if (entries.some((entry) => entry.a === again.attempt && /^(work|judge)-start$/.test(entry.t)))
    problem('other', 'running the finished vault again called the worker or the judge')
  if ((snapshot(branch).trace?.text ?? '') !== traceSeen) problem('other', 'running the finished vault again changed its trace')
  for (const found of (await check(true)).problems) problem(found.kind, `after running the finished vault again: ${found.message}`, found.bytes)
  return trial
}

/** A refusal of a note that kept changing for 3 s: `note-busy`, or the load's warning that it was left out. */
function keptChanging(error) {
  return error?.code === 'note-busy' || (error?.issues ?? []).some((issue) => issue.code === 'unreadable-note' && /kept changing/.test(issue.message))
}

/** The worker and judge calls of every child: same key per visit, same inputs as uninterrupted, status active while worked. */
function checkCalls(entries, reference, runOf, problem, nested) {
  const worked = new Set()
  for (const entry of entries) {
    const visit = `${entry.node}#${entry.visit}`
    if (entry.t === 'violation') problem('other', `child ${entry.a}: ${entry.what}`)
    if (entry.t === 'work-start') {
      worked.add(visit)
      const expected = reference.works[visit]
      if (!expected) problem('other', `child ${entry.a} worked \`${visit}\`, a visit the uninterrupted run never made`)
      // A nested plan's branches take the whole run's step numbers in the order they claim: the number is not compared there.
      else if ((!nested && entry.step !== expected.step) || entry.inputs !== expected.inputs) {
        problem(
          'other',
          `child ${entry.a} worked \`${visit}\` as step ${entry.step} with outputs [${entry.inputs}], expected step ${expected.step} with [${expected.inputs}]`,
        )
      }
      const run = runOf(entry.plan ?? '')
      if (entry.key !== `${run}:${entry.node}:${entry.visit}`)
        problem(
          'other',
          `child ${entry.a} worked \`${visit}\` with key \`${entry.key}\`, expected \`${run}:${entry.node}:${entry.visit}\` (the trace's run id)`,
        )
      if (entry.status !== 'active') problem('other', `child ${entry.a} worked \`${visit}\` while its note said \`status: ${entry.status}\``)
    }
    if (entry.t === 'judge-start') {
      const expected = reference.judges[visit]
      if (!expected) problem('other', `child ${entry.a} judged \`${visit}\`, which the uninterrupted run never judged`)
      else if (entry.role !== expected.role || entry.earlier !== expected.earlier || entry.promptVisit !== entry.visit) {
        problem(
          'other',
          `child ${entry.a} judged \`${visit}\` as role ${entry.role} with earlier outputs [${entry.earlier}], expected ${expected.role} with [${expected.earlier}]`,
        )
      }
    }
  }
  for (const visit of Object.keys(reference.works)) if (!worked.has(visit)) problem('data-loss', `\`${visit}\` was never worked`)
}

/**
 * No check counted twice as passed for one visit. A check cut short by a kill runs again with its visit's work, but
 * once a visit's output is saved (its check's verdict with it) no check of that visit starts again, in that child
 * run or a later one: the saved verdict decides. And every hop of the checked note the trace records as decided by
 * its check was passed by a check run the library saw exit 0. Returns the counts for the summary.
 */
function checkChecks(entries, hops, problem) {
  const isChecked = (node) => node === CHECKED_NOTE || node.endsWith(`/${CHECKED_NOTE}`)
  const saved = new Map()
  const passed = new Set()
  let runs = 0
  let twice = 0
  for (const entry of entries) {
    if (entry.t === 'output-saved') saved.set(entry.visit, entry.a)
    if (entry.t === 'check-exit' && entry.exit === 0) passed.add(entry.visit)
    if (entry.t !== 'check-spawn') continue
    runs += 1
    if (saved.has(entry.visit)) {
      twice += 1
      problem(
        'other',
        `child ${entry.a} ran the check of \`${entry.visit}\` again, whose verdict was on disk with its output when child ${saved.get(entry.visit)} started: a check counted twice as passed for one visit`,
      )
    }
  }
  for (const hop of hops) {
    const visit = `${hop.node}#${hop.visit}`
    if (isChecked(hop.node) && hop.decidedBy === 'check' && !passed.has(`${CHECKED_NOTE}#${hop.visit}`))
      problem('other', `the trace records \`${visit}\` as decided by its check (\`${hop.edge}\`), but no check of it passed`)
  }
  const backoffs = entries.filter((entry) => entry.t === 'work-fail').length
  return { runs, twice, backoffs }
}

/** The visits of the checked note whose output, with its check's verdict (`outcome:`), is on disk in `vault`. */
function verdictsSaved(vault) {
  const outputs = join(vault, TRACE_FOLDER, 'outputs')
  if (!existsSync(outputs)) return []
  return readdirSync(outputs)
    .filter((name) => name.endsWith(`-${CHECKED_NOTE}.md`))
    .flatMap((name) => {
      const text = readFileSync(join(outputs, name), 'utf8')
      const visit = /^visit: (\d+)$/m.exec(text)?.[1]
      return visit && /^outcome: /m.test(text) ? [`${CHECKED_NOTE}#${visit}`] : []
    })
}

/**
 * Runs the child. `kill.afterLine`: SIGKILL after that many stdout lines
 * (READY not counted) plus `kill.delayUs`; a PAUSE line is killed at once.
 */
function runChild(config, kill) {
  return new Promise((resolvePromise) => {
    const child = spawn(process.execPath, [CHILD, JSON.stringify(config)], { stdio: ['ignore', 'pipe', 'pipe'] })
    const outcome = { killed: false, lines: 0, ops: 0, stderr: '' }
    let buffer = ''
    let ready = false
    let killing = false
    const timer = setTimeout(() => {
      outcome.timedOut = true
      child.kill('SIGKILL')
    }, CHILD_TIMEOUT_MS)
    const killNow = () => {
      killing = true
      child.kill('SIGKILL')
    }
    child.stdout.setEncoding('utf8')
    child.stderr.setEncoding('utf8')
    child.stderr.on('data', (chunk) => (outcome.stderr += chunk))
    child.stdout.on('data', (chunk) => {
      buffer += chunk
      let newline
      while ((newline = buffer.indexOf('\n')) !== -1) {
        const line = buffer.slice(0, newline)
        buffer = buffer.slice(newline + 1)
        if (line === 'READY') ready = true
        else if (line.startsWith('PAUSE ')) {
          outcome.pause = line.slice(6)
          killNow()
        } else if (line.startsWith('RESULT ')) outcome.result = JSON.parse(line.slice(7))
        else if (line.startsWith('ERROR ')) outcome.error = JSON.parse(line.slice(6))
        else if (line.startsWith('OPS ')) outcome.ops = Number(line.slice(4))
        else if (ready) {
          outcome.lines += 1
          if (kill && !killing && (kill.afterPrefix ? line.startsWith(kill.afterPrefix) : outcome.lines === kill.afterLine)) {
            outcome.killLine = line
            killing = true
            delay(kill.delayUs).then(() => child.kill('SIGKILL'))
          }
        }
      }
    })
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      outcome.killed = signal === 'SIGKILL' && !outcome.timedOut
      outcome.code = code
      if (outcome.killed) {
        // A kill that arrived after the child had already reported its end still counts as a kill.
        delete outcome.result
      }
      resolvePromise(outcome)
    })
  })
}

/**
 * After a power cut: the journal's entries are from an earlier boot, and
 * the next run opens the vault, which repairs what the cut tore.
 */
async function reboot(vault, dist, branches = [BRANCH, 'side']) {
  // A nested plan's branches keep journals of their own (`branches`: the subplan folders).
  for (const folder of ['', ...branches]) {
    const journal = join(vault, folder, TRACE_FOLDER, '.journal')
    if (!existsSync(journal)) continue
    const text = readFileSync(journal, 'utf8')
    writeFileSync(journal, text.replace(/\{"k":"boot","id":"[^"]*"\}/g, '{"k":"boot","id":"before-the-power-cut"}'))
  }
  await recover(vault, dist, branches)
}

/**
 * What the next run does first when it opens a vault a killed runner left:
 * the files are brought up to the run's journal (the trace's entries, the
 * output notes, the statuses of the last hops), which is where the run
 * stands (the snapshot reads the two as one). The checks look at the files.
 */
export async function recover(vault, dist, branches = [BRANCH, 'side']) {
  const { VaultSession } = await import(new URL('store/vault-session.js', dist).href)
  const open = async (dir) => {
    const session = await VaultSession.open(realpathSync(dir), { fsync: true, watch: false })
    await session.apply().catch(() => undefined)
    await session.close()
  }
  // As a run opens a vault: the journal only where a run began (the copy into a run vault may not be there yet).
  if (existsSync(join(vault, TRACE_FOLDER))) await open(vault)
  // The next run repairs a branch when it enters it; the checks look before that, so repair them here as it would.
  for (const folder of branches) if (existsSync(join(vault, folder, TRACE_FOLDER, '.journal'))) await open(join(vault, folder))
}

async function delay(microseconds) {
  if (microseconds >= 1000) await new Promise((resolveTimer) => setTimeout(resolveTimer, Math.floor(microseconds / 1000)))
  const end = process.hrtime.bigint() + BigInt((microseconds % 1000) * 1000)
  while (process.hrtime.bigint() < end);
}

function readSideLog(path) {
  if (!existsSync(path)) return []
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
}

/** A result without the vault path, which differs per trial. */
/**
 * What of a result must match the uninterrupted run's. The step number the
 * worker wrote into the output is left out: a nested plan's branches take the
 * whole run's numbers in the order they claim, and a claim a power cut lost
 * takes the next number (the flat plan's numbers are checked in its trace).
 */
export function comparable(result) {
  const { runVault: _runVault, runId: _runId, ...rest } = result
  // The order of `visits`' keys is no part of the result: a note a read left out (an editor saving it) comes last.
  if (rest.visits && typeof rest.visits === 'object')
    rest.visits = Object.fromEntries(Object.entries(rest.visits).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
  return typeof rest.output === 'string' ? { ...rest, output: rest.output.replace(/step=\d+/g, 'step=N') } : rest
}

function hash(seed, index) {
  let h = 2166136261 ^ seed
  for (const byte of `${seed}:${index}`) h = Math.imul(h ^ byte.charCodeAt(0), 16777619)
  return h >>> 0
}

function parseArgs(argv) {
  const options = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]
    const value = () => {
      const v = Number(argv[++i])
      if (!Number.isInteger(v) || v < 0) throw new Error(`Expected \`${arg}\` to be followed by a whole number, got \`${argv[i]}\``)
      return v
    }
    if (arg === '--trials') options.trials = value()
    else if (arg === '--seed') options.seed = value()
    else if (arg === '--jobs') options.jobs = value()
    else if (arg === '--only') options.only = value()
    else if (arg === '--keep') options.keep = true
    else if (arg === '--dist') options.dist = argv[++i]
    else if (arg === '--mode') options.mode = argv[++i]
    else if (arg === '--plan') options.plan = argv[++i]
    else if (arg === '--scenario') options.scenario = argv[++i]
    else
      throw new Error(
        `Unknown option \`${arg}\`; use --trials N, --seed S, --jobs J, --only I, --keep, --dist PATH, --mode event|pause|power|editor|mixed, --plan flat|nested, --scenario agents`,
      )
  }
  return options
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  try {
    const report = await runCrashTrials(parseArgs(process.argv.slice(2)))
    process.exitCode = report.ok ? 0 : 1
  } catch (error) {
    console.error(`crash: ${error.stack ?? error}`)
    process.exitCode = 2
  }
}
