// Crash trials of the writes around a run: `fresh: true` archiving the
// last run, the copy of a template into a run vault (`runVault`), and an
// in-memory plan written out into one (`save`: savePlan, as for a graph an
// LLM emitted). Each
// kills a child at a placed file operation in that phase (perhaps tearing
// the write first), up to three times, then lets a run finish.
//
// After every kill: nothing of the old run is lost (its trace and every
// output are in place or in its archive folder, byte for byte), the
// template is unchanged, and the vault (when the copy exists) passes the
// checks of any kill (checkVault; for `save`, whose notes savePlan renders
// anew: the notes are savePlan's, status values aside, and the plan loads).
// At the end: the result and the vault equal the uninterrupted run's.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import { checkVault, hopKey, listFiles, lostFlushedHops, readTraceFile, TRACE_FOLDER } from './inspect.mjs'
import { STATUSES, withStatus } from './vault.mjs'
import { mulberry32 } from './script.mjs'

const KILLS = 3
/** About how many kill points each phase has in the child (the statuses reset and the archive; the copy; savePlan's notes and the rename). */
const PHASE_OPS = { fresh: 40, copy: 30, save: 50 }

/** The kinds of scenario trials, each run by {@link runScenarioTrial}. */
export const SCENARIOS = ['fresh', 'copy', 'save']

/**
 * One scenario trial. `context` is the harness's; `runChild` and
 * `comparable` are its own helpers, passed in.
 *
 * @returns a trial report as the harness counts them
 */
export async function runScenarioTrial(index, scenario, context, { runChild, comparable, seedOf, reboot, recover }) {
  const { root, fixture, reference, lib, dist, modes } = context
  const random = mulberry32(seedOf(index))
  const dir = join(root, `trial-${index}`)
  const vault = join(dir, 'vault')
  const template = join(dir, 'template')
  const sideLog = join(dir, 'side.log')
  const trial = { index, kills: [], resumes: 0, staleLocks: [], problems: [], scenario }
  const problem = (kind, message) => trial.problems.push({ kind, message })
  let attempt = 0
  const child = (config) => runChild({ dist, vault, sideLog, attempt: attempt++, seed: Math.floor(random() * 2 ** 32), ...config })

  let old
  if (scenario === 'fresh') {
    await cp(fixture, vault, { recursive: true })
    const first = await child({ mode: 'none' })
    if (!first.result) return { ...trial, problems: [{ kind: 'other', message: `the first run failed: ${JSON.stringify(first.error)}` }] }
    old = oldRun(vault)
  } else await cp(fixture, template, { recursive: true })
  const templateBefore = scenario !== 'fresh' ? tree(template) : undefined
  // The notes savePlan writes for the template's graph, for `save`.
  let saved
  if (scenario === 'save') {
    await lib.savePlan(await lib.loadPlan(template), join(dir, 'saved'), { fsync: false })
    saved = tree(join(dir, 'saved'))
  }

  const config = scenario === 'fresh' ? { fresh: true } : { template, ...(scenario === 'save' && { graph: true }) }
  const check = async (when, power = false) => {
    if (old) for (const message of lostOfOldRun(vault, old)) problem('data-loss', `${when}: ${message}`)
    if (templateBefore && JSON.stringify(tree(template)) !== JSON.stringify(templateBefore)) problem('data-loss', `${when}: the template changed`)
    // A fresh start resets the statuses before it moves the trace: killed in between, they show `pending` under the old trace, which
    // overrules them (as after a power cut); a run of the vault returns the recorded result, a fresh one starts over.
    const relaxed = scenario === 'fresh' && when.startsWith('after kill')
    if (saved && existsSync(vault)) for (const message of await notSaved(vault, saved, reference, lib)) problem('data-loss', `${when}: ${message}`)
    else if (existsSync(vault))
      for (const found of (await checkVault(vault, reference, { final: false, loadPlan: lib.loadPlan, powerCut: relaxed || power })).problems)
        problem(found.kind, `${when}: ${found.message}`)
  }

  const kills = 1 + Math.floor(random() * KILLS)
  let powerCuts = false
  for (let k = 0; k < kills && trial.problems.length === 0; k++) {
    // The phase's operations come first in the child: archiving (and the statuses reset) or the copy.
    // Half of them also after the phase, in the run's first hops: what the run then relies on must be on the disk.
    const pauseAt = 1 + Math.floor(random() * (random() < 0.5 ? PHASE_OPS[scenario] : PHASE_OPS[scenario] + 60))
    // A power cut: all of them with `--mode power`, a fifth when mixed.
    const power = modes === 'power' || (modes === 'mixed' && random() < 0.2)
    const outcome = await child({ ...config, mode: 'pause', pauseAt, torn: random() < 0.25, power })
    if (!outcome.killed) {
      if (!outcome.result) problem('other', `child run ${attempt - 1} failed: ${JSON.stringify(outcome.error) ?? outcome.stderr}`)
      break
    }
    // The machine comes back: a new boot, and the next run's first act, the journal's repair.
    if (power) {
      await reboot(vault, dist)
      powerCuts = true
    } else await recover(vault, dist)
    trial.kills.push({
      attempt: attempt - 1,
      point: `${scenario}: ${outcome.pause
        ?.replace(/^\d+ /, '')
        .replace(/\.vaultplan-tmp-\S+/, '<temp>')
        .replace(/ \(power cut\)$/, '')}${power ? ' (power cut)' : ''}`,
      how: `placed at ${outcome.pause}`,
    })
    trial.resumes += 1
    await check(`after kill ${k + 1} (${outcome.pause})`, powerCuts)
    if (power)
      for (const found of lostFlushedHops(
        vault,
        sideLogOf(sideLog).find((entry) => entry.t === 'power-cut' && entry.a === attempt - 1),
      ))
        problem(found.kind, `after kill ${k + 1} (${outcome.pause}): ${found.message}`)
  }
  if (trial.problems.length > 0) return trial
  // The person runs it again: the fresh start they asked for, or the template into the same run vault.
  const last = await child({ ...config, mode: 'none' })
  if (!last.result) return { ...trial, problems: [{ kind: 'other', message: `the last run failed: ${JSON.stringify(last.error) ?? last.stderr}` }] }
  if (JSON.stringify(comparable(last.result)) !== JSON.stringify(reference.result))
    problem('data-loss', `the result is ${JSON.stringify(comparable(last.result))}, expected ${JSON.stringify(reference.result)}`)
  await check('after the last run', powerCuts)
  if (saved) {
    const hops = (readTraceFile(vault)?.hops ?? []).map(hopKey)
    if (JSON.stringify(hops) !== JSON.stringify(reference.hops.map(hopKey)))
      problem('data-loss', `after the last run: the trace's hops are\n${hops.join('\n')}`)
    return trial
  }
  for (const found of (await checkVault(vault, reference, { final: true, loadPlan: lib.loadPlan, powerCut: powerCuts })).problems)
    problem(found.kind, `after the last run: ${found.message}`)
  return trial
}

/** The run a `fresh` start archives: its id, trace and outputs as they were. */
function oldRun(vault) {
  const folder = join(vault, TRACE_FOLDER)
  const trace = readFileSync(join(folder, 'trace.md'), 'utf8')
  const run = /^run: ["']?([^"'\n]+)["']?$/m.exec(trace)?.[1]
  const outputs = Object.fromEntries(readdirSync(join(folder, 'outputs')).map((name) => [name, readFileSync(join(folder, 'outputs', name), 'utf8')]))
  return { run, trace, outputs }
}

/** What of the old run is nowhere: each file must be in place (while its trace is) or in the run's archive folder. */
function lostOfOldRun(vault, old) {
  const folder = join(vault, TRACE_FOLDER)
  const archive = join(folder, 'archive', old.run.replace(/[^\w.-]+/g, '_'))
  const text = (path) => (existsSync(path) ? readFileSync(path, 'utf8') : undefined)
  const traceInPlace = text(join(folder, 'trace.md')) === old.trace
  const lost = []
  if (!traceInPlace && text(join(archive, 'trace.md')) !== old.trace) lost.push(`the old run's trace is neither in place nor in ${archive}`)
  for (const [name, bytes] of Object.entries(old.outputs)) {
    const kept = (traceInPlace && text(join(folder, 'outputs', name)) === bytes) || text(join(archive, 'outputs', name)) === bytes
    if (!kept) lost.push(`the old run's output \`${name}\` is lost`)
  }
  return lost
}

/** What is wrong with a run vault savePlan wrote: a note missing or not savePlan's (its status value aside), or a plan that does not load. */
async function notSaved(vault, saved, reference, lib) {
  const wrong = []
  for (const [file, text] of Object.entries(saved)) {
    const now = existsSync(join(vault, file)) ? readFileSync(join(vault, file), 'utf8') : undefined
    if (now === undefined) wrong.push(`\`${file}\` is missing from the run vault`)
    else if (now !== text && !STATUSES.some((status) => withStatus(text, status) === now))
      wrong.push(`\`${file}\` is not the note savePlan wrote: ${JSON.stringify(now)}`)
  }
  try {
    const graph = await lib.loadPlan(vault)
    graph.validate()
    const ids = [...graph.nodes.keys()].sort()
    if (JSON.stringify(ids) !== JSON.stringify(reference.nodeIds)) wrong.push(`the run vault's nodes are ${ids.join(', ')}`)
  } catch (error) {
    wrong.push(`the run vault no longer loads and validates: ${error.message}`)
  }
  return wrong
}

function sideLogOf(path) {
  if (!existsSync(path)) return []
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter(Boolean)
    .map((line) => JSON.parse(line))
}

function tree(dir) {
  return Object.fromEntries(listFiles(dir).map((file) => [file, readFileSync(join(dir, file), 'utf8')]))
}
