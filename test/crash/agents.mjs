// Agent trials (`--scenario agents`, SPEC 16): two agents work a branched
// plan (agents-vault.mjs) at once, each a child process (child.mjs running
// agent.mjs) looping nextStep/completeStep under its own name with a 300 ms
// lease and `fsync: true`. Up to four kills per trial land in either child:
// timed (SIGKILL a random time after it starts), placed (at its n-th file
// operation or work call) or a power cut (placed; the other agent is killed
// with it: the machine is off). The cut loses what the library call under way
// had not flushed: each child's power model knows only its own writes, and
// the other agent writes the same files between its calls, so what earlier
// calls left unflushed is taken as on the disk (agent.mjs). A killed agent is started again, half
// of the time under a new name, which takes its old claim over once the lease
// ends; after a power cut both start again, once the parent has faked a new
// boot and repaired the vault as the next run would (and checked that every
// hop either child had flushed is still in its trace). Until the run completes.
//
// Checks of each trial: the run completed (both agents end on `completed`,
// and one more nextStep answers it and writes nothing); no key completed
// twice (the other completion answers `stale-step`); each (note, visit)
// recorded once in its folder's trace, every visit 1; each trace's path the
// uninterrupted run's; every output a hop names present and equal to the
// uninterrupted run's; the notes changed in their status value only; no temp
// file or lock left. The summary counts kills, power cuts, restarts,
// takeovers (claim records by another agent than the one before), busy,
// stale-step and vault-locked answers, and visits the worker worked twice.
import { spawn } from 'node:child_process'
import { existsSync, readFileSync } from 'node:fs'
import { cp, mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { agentOutput, AGENT_MAX_STEPS, AGENT_QUERY } from './agent.mjs'
import { AGENT_FOLDERS, checkAgentVault, describeAgentRun, takeovers, writeAgentVault } from './agents-vault.mjs'
import { lostFlushedHops, TRACE_FOLDER } from './inspect.mjs'
import { mulberry32 } from './script.mjs'

const CHILD = fileURLToPath(new URL('child.mjs', import.meta.url))
const AGENTS = ['ada', 'bob']
const LEASE_MS = 300
const MAX_KILLS = 4
/** Children a trial may start before it counts as stuck. */
const MAX_STARTS = 24
const CHILD_TIMEOUT_MS = 60_000
/** A killed agent's lock is taken over after this long (the library's default is 3 s; more than its 1 s refresh). */
const ORPHAN_MS = '1500'
const BRANCHES = AGENT_FOLDERS.filter(Boolean)

/**
 * Runs the agent trials with the library build at `dist` (a file URL) and
 * returns the report, as `runCrashTrials` does.
 */
export async function runAgentTrials(dist, options, { seedOf, reboot, recover }) {
  const { trials, seed, jobs, log, modes, started } = options
  if (!['mixed', 'event', 'pause', 'power'].includes(modes))
    throw new TypeError(`Expected \`mode\` to be \`mixed\`, \`event\`, \`pause\` or \`power\` for the agent trials, got \`${modes}\``)
  const lib = await import(dist)
  const root = await mkdtemp(join(tmpdir(), 'vaultplan-agents-'))
  const fixture = join(root, 'fixture')
  await writeAgentVault(fixture)
  const reference = await referenceRun(lib, root, fixture)
  const context = { root, fixture, reference, dist, lib, modes, seedOf, reboot, recover }
  context.calibration = await calibrate(context)
  const indexes = options.only !== undefined ? [options.only] : Array.from({ length: trials }, (_, index) => index)
  log(
    `agents: seed ${seed}, ${indexes.length} trials, ${jobs} at a time, two agents (lease ${LEASE_MS} ms) on plan: [web, papers], ${modes} kills (a whole run: ${context.calibration.ops} kill points, ${context.calibration.ms} ms)`,
  )
  const results = []
  let next = 0
  await Promise.all(
    Array.from({ length: Math.min(jobs, indexes.length) }, async () => {
      while (next < indexes.length) {
        const index = indexes[next++]
        const trial = await agentTrial(index, context).catch((error) => ({
          index,
          kills: [],
          problems: [{ kind: 'other', message: `harness error: ${error.stack}` }],
        }))
        results.push(trial)
        if (trial.problems.length === 0 && !options.keep) await rm(join(root, `trial-${index}`), { recursive: true, force: true })
      }
    }),
  )
  results.sort((a, b) => a.index - b.index)
  const failed = results.filter((trial) => trial.problems.length > 0)
  for (const trial of failed.slice(0, 3)) {
    log(
      `\nFAILED trial ${trial.index} (reproduce: node test/crash/run.mjs --scenario agents --mode ${modes} --seed ${seed} --only ${trial.index} --keep; vault kept in ${join(root, `trial-${trial.index}`)})`,
    )
    trial.kills.forEach((kill, k) => log(`  kill ${k + 1}: ${kill.how}`))
    for (const problem of trial.problems.slice(0, 5)) log(`  [${problem.kind}] ${problem.message}`)
  }
  if (failed.length > 3)
    log(
      `\n... and ${failed.length - 3} more failed trials: ${failed
        .slice(3)
        .map((trial) => trial.index)
        .join(', ')}`,
    )
  const sum = (field) => results.reduce((total, trial) => total + (trial.counts?.[field] ?? 0), 0)
  const kills = results.reduce((total, trial) => total + trial.kills.length, 0)
  const powerCuts = results.reduce((total, trial) => total + trial.kills.filter((kill) => kill.power).length, 0)
  const count = (kind) => failed.filter((trial) => trial.problems.some((problem) => problem.kind === kind)).length
  const wall = (Date.now() - started) / 1000
  log(`wall time ${wall.toFixed(1)} s`)
  const summary =
    `agents: ${results.length} trials, ${kills} kills (${powerCuts} power cuts), ${sum('restarts')} restarts (${sum('renamed')} under a new name), ` +
    `${sum('takeovers')} takeovers, ${sum('busy')} busy answers, ${sum('stale')} stale-step, claimed or saved answers, ${sum('locked')} vault-locked answers, ` +
    `${sum('reworked')} visits worked again, ${count('data-loss')} data losses, ${count('twice')} visits recorded twice, ${count('budget')} budget violations`
  log(summary)
  if (failed.length > 0) log(`agents: ${failed.length} trials failed a check (seed ${seed})`)
  if (failed.length === 0 && !options.keep) await rm(root, { recursive: true, force: true })
  return {
    ok: failed.length === 0,
    seed,
    summary,
    trials: results.length,
    kills,
    resumes: sum('restarts'),
    dataLosses: count('data-loss'),
    budgetViolations: count('budget'),
    failed,
    wall,
  }
}

/** The uninterrupted run, in this process, one agent: the paths, outputs and final notes every trial must reproduce. */
async function referenceRun(lib, root, fixture) {
  const vault = join(root, 'reference')
  await cp(fixture, vault, { recursive: true })
  const options = { fsync: true, agent: 'ref', maxSteps: AGENT_MAX_STEPS, llm: async () => '1: NO' }
  let step = await lib.nextStep(vault, { ...options, query: AGENT_QUERY })
  while (step.kind === 'work') step = await lib.completeStep(vault, step.key, { output: agentOutput(step.plan ?? '', step.node.id, step.visit) }, options)
  if (step.kind !== 'completed') throw new Error(`the uninterrupted run ended ${JSON.stringify(step)} (files kept in ${root})`)
  const reference = describeAgentRun(vault)
  reference.result = comparable(step)
  // The reference checks itself: a harness that tests what it means to.
  const problems = checkAgentVault(vault, reference)
  if (problems.length > 0)
    throw new Error(`the uninterrupted run fails the checks: ${problems.map((problem) => problem.message).join('\n')} (files kept in ${root})`)
  return reference
}

/** Two agents run to the end without a kill: the kill points and time of a whole run, and a check the children pass the checks. */
async function calibrate(context) {
  const trial = await agentTrial('calibration', { ...context, modes: 'none' })
  if (trial.problems.length > 0)
    throw new Error(`two agents without kills fail the checks: ${trial.problems.map((problem) => problem.message).join('\n')} (files in ${context.root})`)
  await rm(join(context.root, 'trial-calibration'), { recursive: true, force: true })
  return { ops: Math.max(...trial.ops), ms: trial.ms }
}

/** One trial: two agents, kills and restarts until the run completes, then the checks. */
async function agentTrial(index, context) {
  const { root, fixture, reference, dist, lib, modes, seedOf, reboot, recover, calibration } = context
  const random = mulberry32(index === 'calibration' ? 1 : seedOf(index))
  const dir = join(root, `trial-${index}`)
  const vault = join(dir, 'vault')
  const sideLog = join(dir, 'side.log')
  await cp(fixture, vault, { recursive: true })
  const trial = { index, kills: [], problems: [], ops: [], counts: { restarts: 0, renamed: 0 } }
  const problem = (kind, message) => trial.problems.push({ kind, message })
  const begun = Date.now()
  let killsLeft = modes === 'none' ? 0 : 1 + Math.floor(random() * MAX_KILLS)
  let attempt = 0
  const renamed = [0, 0]
  /** The agents running now, by slot (0: ada's line, 1: bob's). */
  const live = new Map()
  const results = []

  const launch = (slot, name) => {
    // Half of the children get one of the trial's kills, while kills are left: its kind by the mode.
    let kill
    if (killsLeft > 0 && random() < 0.5) {
      killsLeft -= 1
      const kind =
        modes === 'power'
          ? 'power'
          : modes === 'event'
            ? 'timed'
            : modes === 'pause'
              ? 'placed'
              : ['timed', 'timed', 'placed', 'placed', 'power'][Math.floor(random() * 5)]
      kill = kind === 'timed' ? { kind, afterMs: Math.floor(random() * calibration.ms) } : { kind, pauseAt: 1 + Math.floor(random() * calibration.ops) }
    }
    const config = {
      dist,
      vault,
      sideLog,
      attempt: attempt++,
      seed: Math.floor(random() * 2 ** 32),
      agent: name,
      leaseMs: LEASE_MS,
      folders: AGENT_FOLDERS,
      mode: kill && kill.kind !== 'timed' ? 'pause' : 'none',
      ...(kill?.pauseAt && { pauseAt: kill.pauseAt }),
      power: kill?.kind === 'power',
    }
    const child = startAgent(config)
    if (kill?.kind === 'timed') setTimeout(() => child.kill('SIGKILL'), kill.afterMs).unref()
    live.set(slot, { name, slot, child, kill, attempt: config.attempt })
  }
  const restart = (slot, old) => {
    trial.counts.restarts += 1
    // Half of the restarts come back under a new name: the old claim is the other agent's, taken over once its lease ends.
    if (random() < 0.5) {
      trial.counts.renamed += 1
      renamed[slot] += 1
      launch(slot, `${AGENTS[slot]}-${renamed[slot]}`)
    } else launch(slot, old)
  }

  launch(0, AGENTS[0])
  launch(1, AGENTS[1])
  while (live.size > 0 && trial.problems.length === 0) {
    if (attempt > MAX_STARTS) {
      problem('other', `the run did not complete in ${MAX_STARTS} child runs`)
      break
    }
    const [slot, what] = await Promise.race(
      [...live.values()].map((agent) => agent.child.outcome.then((outcome) => [agent.slot, outcome.pause && !outcome.ended ? 'pause' : 'end'])),
    )
    const agent = live.get(slot)
    const outcome = await agent.child.outcome
    if (what === 'pause' && outcome.pause.endsWith('(power cut)')) {
      // The machine is off: both agents are gone.
      for (const each of live.values()) each.child.kill('SIGKILL')
      await Promise.all([...live.values()].map((each) => each.child.ended))
      trial.kills.push({ power: true, how: `power cut: ${agent.name} (child ${agent.attempt}) at ${outcome.pause}` })
      await reboot(vault, dist, BRANCHES)
      const attempts = new Set([...live.values()].map((each) => each.attempt))
      for (const entry of readSideLog(sideLog).filter((entry) => entry.t === 'power-cut' && attempts.has(entry.a)))
        for (const found of lostFlushedHops(vault, entry)) problem(found.kind, `after power cut ${trial.kills.length}: ${found.message}`)
      const names = [...live.values()].map((each) => [each.slot, each.name])
      live.clear()
      for (const [each, name] of names) restart(each, name)
      continue
    }
    if (what === 'pause') agent.child.kill('SIGKILL')
    const ended = await agent.child.ended
    live.delete(slot)
    if (ended.killed) {
      trial.kills.push({
        power: false,
        how: `${agent.name} (child ${agent.attempt}) ${ended.pause ? `placed at ${ended.pause}` : `timed, ${agent.kill?.afterMs} ms after its start, its last line \`${ended.lastLine}\``}`,
      })
      restart(slot, agent.name)
    } else if (ended.result) {
      results.push(ended.result)
      trial.ops.push(ended.ops)
    } else
      problem(
        'other',
        `agent ${agent.name} (child ${agent.attempt}) failed: ${ended.timedOut ? 'timed out ' : ''}${JSON.stringify(ended.error) ?? ''}\n${ended.stderr}`,
      )
  }
  for (const agent of live.values()) agent.child.kill('SIGKILL')
  await Promise.all([...live.values()].map((agent) => agent.child.ended))
  trial.ms = Date.now() - begun
  const entries = readSideLog(sideLog)
  Object.assign(trial.counts, counts(entries), { takeovers: takeovers(vault) })
  for (const entry of entries) if (entry.t === 'violation') problem('other', `child ${entry.a}: ${entry.what}`)
  // The first completion of a key wins; any other answers `stale-step`, `claimed` (the other agent holds it now) or
  // `saved: true` (the same output saved already): none of these completed it again (a completion killed before it answered logs nothing).
  const completions = new Map()
  for (const entry of entries)
    if (entry.t === 'completed') completions.set(entry.key, [...(completions.get(entry.key) ?? []), `${entry.agent} (child ${entry.a})`])
  for (const [key, agents] of completions) if (agents.length > 1) problem('twice', `\`${key}\` was completed by ${agents.join(' and ')}`)
  if (trial.problems.length > 0) return trial
  if (results.length === 0) {
    problem('other', 'no agent saw the run complete')
    return trial
  }
  for (const result of results)
    if (JSON.stringify(comparable(result)) !== JSON.stringify(reference.result))
      problem('data-loss', `an agent ended on ${JSON.stringify(comparable(result))}, expected ${JSON.stringify(reference.result)}`)
  // One more call answers the recorded end and writes nothing.
  const traces = () =>
    AGENT_FOLDERS.map((folder) => join(vault, folder, TRACE_FOLDER, 'trace.md')).map((path) => (existsSync(path) ? readFileSync(path, 'utf8') : ''))
  const before = JSON.stringify(traces())
  const again = await lib.nextStep(vault, { fsync: true, llm: async () => '1: NO' }).catch((error) => ({ kind: `error ${error.code}: ${error.message}` }))
  if (again.kind !== 'completed') problem('other', `nextStep on the finished vault answered ${again.kind}`)
  if (JSON.stringify(traces()) !== before) problem('other', 'nextStep on the finished vault changed a trace')
  trial.problems.push(...checkAgentVault(vault, reference))
  return trial
}

/** What the agents' side logs count: busy, stale-step and vault-locked answers, and visits worked more than once. */
function counts(entries) {
  const works = new Map()
  for (const entry of entries) if (entry.t === 'work-start') works.set(entry.key, (works.get(entry.key) ?? 0) + 1)
  const of = (t) => entries.filter((entry) => entry.t === t).length
  return {
    busy: of('busy'),
    stale: of('stale') + of('claimed') + of('saved'),
    locked: of('locked'),
    reworked: [...works.values()].filter((n) => n > 1).length,
  }
}

/** A completed step without the run id, which differs per run. */
function comparable(step) {
  // `saved`: the agent's last completion found its output saved by the other agent first; where the run ended is the same.
  const { runId: _runId, saved: _saved, ...rest } = step
  return rest
}

/**
 * Starts an agent child. `outcome` resolves at its PAUSE line or its end
 * (whichever first), `ended` at its end; `kill(signal)` signals it while
 * it runs.
 */
function startAgent(config) {
  const child = spawn(process.execPath, [CHILD, JSON.stringify(config)], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, VAULTPLAN_LOCK_ORPHAN_MS: ORPHAN_MS },
  })
  const state = { killed: false, stderr: '', ops: 0, lastLine: '' }
  let paused
  const outcome = new Promise((resolve) => (paused = resolve))
  let buffer = ''
  const timer = setTimeout(() => {
    state.timedOut = true
    child.kill('SIGKILL')
  }, CHILD_TIMEOUT_MS)
  child.stdout.setEncoding('utf8')
  child.stderr.setEncoding('utf8')
  child.stderr.on('data', (chunk) => (state.stderr += chunk))
  child.stdout.on('data', (chunk) => {
    buffer += chunk
    let newline
    while ((newline = buffer.indexOf('\n')) !== -1) {
      const line = buffer.slice(0, newline)
      buffer = buffer.slice(newline + 1)
      if (line.startsWith('PAUSE ')) {
        state.pause = line.slice(6)
        paused(state)
      } else if (line.startsWith('RESULT ')) state.result = JSON.parse(line.slice(7))
      else if (line.startsWith('ERROR ')) state.error = JSON.parse(line.slice(6))
      else if (line.startsWith('OPS ')) state.ops = Number(line.slice(4))
      else state.lastLine = line
    }
  })
  const ended = new Promise((resolve) =>
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      state.ended = true
      state.killed = signal === 'SIGKILL' && !state.timedOut
      // A kill that arrived after the child had reported its end still counts as a kill.
      if (state.killed) delete state.result
      paused(state)
      resolve(state)
    }),
  )
  const running = () => child.exitCode === null && child.signalCode === null
  return {
    outcome,
    ended,
    state,
    kill: (signal) => running() && child.kill(signal),
  }
}

function readSideLog(path) {
  if (!existsSync(path)) return []
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
}
