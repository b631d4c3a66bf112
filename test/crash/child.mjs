// One run of the crash harness's vault, in its own process, to be killed.
//
//   node test/crash/child.mjs '<json config>'
//
// Config: { dist, vault, sideLog, attempt, mode, pauseAt, pauseOn, torn, power, seed, stepping, fresh, template, graph, nested, listPoints },
// and for an agent trial (agents.mjs) { agent, leaseMs, folders }.
// `pauseOn`: in pause mode, stop at the first point whose label starts with it (`check `, `verdict `, `backoff `) instead of the pauseAt-th.
// `listPoints`: print each kill point's number and label to stderr (to see where a phase's points are).
// `nested`: the vault is the nested plan (vault.mjs), run with its larger step budget.
// `power`: at the paused point, first do to the files what a power cut does to unflushed data.
// `stepping`: walk with nextStep/completeStep first (then runPlan returns the result).
// mode `none`: run to the end. mode `event`: the worker and judge sleep a
// random few hundred microseconds to milliseconds, so the parent's timed
// kill lands anywhere. mode `pause`: the pauseAt-th file operation (or work
// or judge call) stops the process dead and says so on stdout; the parent
// kills it there. `torn` makes a paused write or append leave part of its
// data first, like a crash in the middle of a write.
//
// The kill points include `check <node#visit>` (a check's command just
// started: a kill there leaves it running, orphaned, its visit to be worked
// again), `verdict <node#visit>` (the checked note's output, its check's
// verdict with it, just saved: the visit must be judged from it) and
// `backoff <node#visit>` (100 ms into a retry's 1 s backoff).
//
// stdout lines: READY, EV <event>, W+/W-/J+/J- <node#visit>, C+/C- <node#visit> (a check),
// B+/B- <node#visit> (a backoff begins; 100 ms into it), V <node#visit> (a verdict saved), PAUSE <n> <label>,
// RESULT <json>, ERROR <json>, OPS <n>. All written synchronously.
import childProcess from 'node:child_process'
import fs from 'node:fs'
import { syncBuiltinESMExports } from 'node:module'
import { basename, dirname, relative } from 'node:path'
import { powerModel } from './power.mjs'
import { makeScript, mulberry32 } from './script.mjs'
import { CHECK_SCRIPT, CHECKED_NOTE, checksFor, MAX_STEPS, NESTED_MAX_STEPS, QUERY } from './vault.mjs'

const config = JSON.parse(process.argv[2])
const TEMP_PREFIX = '.vaultplan-tmp-'

// The harness's own output goes around the wrappers below.
const writeSyncOriginal = fs.writeSync
const appendFileSyncOriginal = fs.appendFileSync
const line = (text) => writeSyncOriginal(1, `${text}\n`)
/** Set while the harness writes files of its own: the wrappers below pass those calls through untouched. */
let quiet = false
const unwatched = (fn) => {
  const was = quiet
  quiet = true
  try {
    return fn()
  } finally {
    quiet = was
  }
}
const side = (entry) => unwatched(() => appendFileSyncOriginal(config.sideLog, `${JSON.stringify({ a: config.attempt, ...entry })}\n`))

const random = mulberry32(config.seed >>> 0)

let ops = 0
const rel = (path) => relative(config.vault, String(path)) || '.'

/**
 * Counts a kill point; in pause mode, the chosen one stops the process until
 * the parent kills it. `tear` writes part of the data first, when asked to.
 */
async function point(label, tear) {
  ops += 1
  if (config.listPoints) writeSyncOriginal(2, `${ops} ${label}\n`)
  if (!pausesAt(label)) return
  const torn = config.torn && tear ? await tear() : false
  stopDead(ops, label, torn)
}

/** {@link point} for the synchronous calls: the same count, and `tear` is synchronous. */
function pointSync(label, tear) {
  ops += 1
  if (config.listPoints) writeSyncOriginal(2, `${ops} ${label}\n`)
  if (!pausesAt(label)) return
  stopDead(ops, label, config.torn && tear ? tear() : false)
}

/** Whether the point just counted, labelled `label`, is the one to stop at. */
function pausesAt(label) {
  if (config.mode !== 'pause') return false
  return config.pauseOn !== undefined ? label.startsWith(config.pauseOn) : ops === config.pauseAt
}

function stopDead(at, label, torn) {
  if (config.power) powerCut()
  line(`PAUSE ${at} ${label}${torn ? ' (torn)' : ''}${config.power ? ' (power cut)' : ''}`)
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 60_000)
  writeSyncOriginal(2, 'crash child: paused for 60 s and nobody killed it\n')
  process.exit(99)
}

// Wrap the file operations the library uses for its writes. The library
// imports them by name from `node:fs` and `node:fs/promises`;
// syncBuiltinESMExports makes those bindings see the wrappers. Each write
// is also told to the power model (power.mjs), which a power cut asks what
// was not flushed.
const originalSync = {
  lstatSync: fs.lstatSync,
  statSync: fs.statSync,
  readFileSync: fs.readFileSync,
  writeFileSync: fs.writeFileSync,
  rmSync: fs.rmSync,
  renameSync: fs.renameSync,
}
const model = powerModel(originalSync, random)
/**
 * The files the model follows: the vault's, the temp folder its copy is made in beside it
 * (`<vault>.vaultplan-tmp-<pid>`), and the folder holding both (its names: the copy's rename into place).
 */
const watched = (path) =>
  // Only a child whose kill is a power cut keeps the model (the others go as fast as without it).
  config.power === true &&
  !quiet &&
  (!relative(config.vault, String(path)).startsWith('..') || String(path).startsWith(`${config.vault}${TEMP_PREFIX}`) || String(path) === dirname(config.vault))
/** What opening `path` for writing does to it, for the model: it creates it, truncates it, or appends to it. */
function opening(path, flags) {
  const existed = model.exists(String(path))
  const truncating = flags === 'w' || flags === 'w+' || (typeof flags === 'number' && (flags & fs.constants.O_TRUNC) !== 0)
  return () => {
    if (!existed) model.created(String(path), { file: true })
    else model.opened(String(path), { truncate: truncating, append: appending(flags) })
  }
}
function renaming(from, to, rename) {
  const token = watched(to) ? model.renaming(String(from), String(to)) : undefined
  const done = rename()
  const record = () => token && model.renamed(token)
  return done instanceof Promise ? done.then((value) => (record(), value)) : (record(), done)
}

const promises = fs.promises
const original = {
  open: promises.open,
  rename: promises.rename,
  rm: promises.rm,
  rmdir: promises.rmdir,
  unlink: promises.unlink,
  copyFile: promises.copyFile,
  mkdir: promises.mkdir,
  symlink: promises.symlink,
}
const paths = new WeakMap()
const writing = (flags) => (typeof flags === 'number' ? (flags & 3) !== 0 : typeof flags === 'string' && /[wa+]/.test(flags))

const appending = (flags) => flags === 'a' || (typeof flags === 'number' && (flags & fs.constants.O_APPEND) !== 0)
/** Every write into the vault goes to a temp file renamed into place, or appends to the trace. */
function checkWriteOpen(path, flags) {
  const name = basename(String(path))
  const inVault = !relative(config.vault, String(path)).startsWith('..')
  // The trace and journal of the vault, or of a subplan's folder (a nested plan).
  // An agent (agent.mjs) also repairs a trace the other agent's kill tore: cut at the torn entry and appended in place,
  // without O_APPEND (note-journal.ts); in the other trials the parent's recover() does that before a child runs.
  const inPlace = config.agent !== undefined && typeof flags === 'number' && (flags & fs.constants.O_TRUNC) === 0
  const appendToTrace = /^(?:[^/]+\/)?00_plan-trace\/(?:trace\.md|\.journal)$/.test(rel(path)) && (appending(flags) || inPlace)
  // A lock folder is made beside its place with its holder record inside, then renamed into place (lock-fs.ts).
  const unbornLock = /^(?:[^/]+\/)?00_plan-trace\/\.lock\.new-\d+\/holder\.json$/.test(rel(path))
  if (inVault && !name.startsWith(TEMP_PREFIX) && !appendToTrace && !unbornLock)
    side({ t: 'violation', what: `non-atomic write: open(\`${rel(path)}\`, ${JSON.stringify(flags)})` })
}

promises.open = async function open(path, flags = 'r', mode) {
  let opened
  if (writing(flags)) {
    checkWriteOpen(path, flags)
    await point(`open ${rel(path)}`)
    if (watched(path)) opened = opening(path, flags)
  }
  const handle = await original.open.call(this, path, flags, mode)
  opened?.()
  paths.set(handle, String(path))
  return handle
}
promises.rename = async function rename(from, to) {
  await point(`rename ${rel(from)} -> ${rel(to)}`)
  return renaming(from, to, () => original.rename.call(this, from, to))
}
promises.rm = async function rm(path, options) {
  await point(`rm ${rel(path)}`)
  await original.rm.call(this, path, options)
  if (watched(path)) model.removed(String(path))
}
promises.rmdir = async function rmdir(path, options) {
  await original.rmdir.call(this, path, options)
  if (watched(path)) model.removed(String(path))
}
promises.unlink = async function unlink(path) {
  await original.unlink.call(this, path)
  if (watched(path)) model.removed(String(path))
}
// The copy of a template into a run vault (`template` in the config).
promises.copyFile = async function copyFile(from, to, mode) {
  await point(`copy ${rel(to)}`)
  const opened = watched(to) ? opening(to, 'w') : undefined
  await original.copyFile.call(this, from, to, mode)
  opened?.()
}
promises.mkdir = async function mkdir(path, options) {
  await point(`mkdir ${rel(path)}`)
  const missing = watched(path) ? (options?.recursive ? model.missingFolders(String(path)) : model.exists(String(path)) ? [] : [String(path)]) : []
  const done = await original.mkdir.call(this, path, options)
  for (const folder of missing) model.created(folder)
  return done
}
promises.symlink = async function symlink(target, path, type) {
  await point(`symlink ${rel(path)}`)
  await original.symlink.call(this, target, path, type)
  if (watched(path)) model.created(String(path))
}
{
  const probe = await original.open(process.execPath, 'r')
  const proto = Object.getPrototypeOf(probe)
  await probe.close()
  const { writeFile, appendFile, sync, truncate } = proto
  /** Writes a random non-empty part of `data`, short of all of it. */
  const tearing = (handle, write, data, options) => async () => {
    if (typeof data !== 'string' || data.length < 2) return false
    await write.call(handle, data.slice(0, 1 + Math.floor(random() * (data.length - 1))), options)
    return true
  }
  proto.writeFile = async function (data, options) {
    await point(`write ${rel(paths.get(this))}`, tearing(this, writeFile, data, options))
    return writeFile.call(this, data, options)
  }
  proto.appendFile = async function (data, options) {
    await point(`append ${rel(paths.get(this))}`, tearing(this, appendFile, data, options))
    return appendFile.call(this, data, options)
  }
  proto.sync = async function () {
    await point(`fsync ${rel(paths.get(this))}`)
    await sync.call(this)
    if (watched(paths.get(this))) model.synced(paths.get(this))
  }
  proto.truncate = async function (length = 0) {
    await truncate.call(this, length)
    if (watched(paths.get(this))) model.truncated(paths.get(this), length)
  }
}

/**
 * Applies a power cut to the vault's files with the original calls, then the machine is off. First it
 * tells the parent how many hops of each trace were flushed (`flushed`, by folder): with `fsync` on,
 * the hop's entry flushed in the journal (or in the trace) is its commit point, so those must survive the cut.
 */
function powerCut() {
  unwatched(() => {
    const flushed = {}
    for (const folder of config.folders ?? (config.nested ? ['', 'post', 'side'] : [''])) {
      const trace = `${config.vault}${folder ? `/${folder}` : ''}/00_plan-trace/trace.md`
      const flushedText = (path) => {
        const length = model.flushedLength(path)
        return length > 0 ? originalSync.readFileSync(path).subarray(0, length).toString('utf8') : ''
      }
      // A hop's entry is flushed in the journal (its commit point), or in the trace once the journal was emptied;
      // the journal's entries of the run this trace is of (an archived run's are not this trace's).
      const traced = flushedText(trace)
      const run = /^run: (\S+)$/m.exec(traced)?.[1]
      const journaled = flushedText(trace.replace(/trace\.md$/, '.journal'))
        .split('\n')
        .flatMap((line) => {
          try {
            const entry = JSON.parse(line)
            return entry.k === 'trace' && entry.r === run ? [entry.t] : []
          } catch {
            return []
          }
        })
      const hops = new Set(
        [traced, ...journaled].flatMap((text) =>
          text.split('\n').filter((line) => line.startsWith('<!-- vaultplan:hop {"kind":"hop"') && line.endsWith(' -->')),
        ),
      )
      flushed[folder] = hops.size
    }
    side({ t: 'power-cut', flushed })
    model.cut()
  })
}

/**
 * The checked note's visit whose output (its check's verdict with it) the library has queued and not yet journaled:
 * the `work` event comes before the hop's journal append.
 */
let verdictSaving
/** The checked note's output is in the journal (flushed, or not yet: a power cut here may lose it): a kill point. */
function verdictSaved() {
  const at = `${CHECKED_NOTE}#${verdictSaving}`
  verdictSaving = undefined
  line(`V ${at}`)
  pointSync(`verdict ${at}`)
}

// The synchronous calls the library uses: the hop path (writeFileAtomicSync, the trace appender, the journal),
// its run folders (mkdirSync) and the second name of a note's replaced version (linkSync).
{
  const { openSync, writeSync, fsyncSync, renameSync, closeSync, mkdirSync, linkSync, rmSync, unlinkSync, ftruncateSync } = fs
  /** The files opened for writing, for the labels of their writes. */
  const fdPaths = new Map()
  /** Every descriptor's path, for the model's flushes (a folder's, a file's opened to flush it). */
  const fdAll = new Map()
  fs.openSync = function (path, flags = 'r', mode) {
    if (quiet) return openSync.call(this, path, flags, mode)
    let opened
    if (writing(flags)) {
      checkWriteOpen(path, flags)
      pointSync(`open ${rel(path)}`)
      if (watched(path)) opened = opening(path, flags)
    }
    const fd = openSync.call(this, path, flags, mode)
    opened?.()
    if (writing(flags)) fdPaths.set(fd, String(path))
    fdAll.set(fd, String(path))
    return fd
  }
  fs.closeSync = function (fd) {
    fdPaths.delete(fd)
    fdAll.delete(fd)
    return closeSync.call(this, fd)
  }
  fs.writeSync = function (fd, data, ...rest) {
    const path = quiet ? undefined : fdPaths.get(fd)
    if (path !== undefined) {
      // A torn write leaves a random non-empty part of the bytes, short of all of them.
      const tear = () => {
        const bytes = typeof data === 'string' ? Buffer.from(data) : data.subarray(rest[0] ?? 0, (rest[0] ?? 0) + (rest[1] ?? data.length))
        if (bytes.length < 2) return false
        writeSync.call(fs, fd, bytes, 0, 1 + Math.floor(random() * (bytes.length - 1)))
        return true
      }
      pointSync(`${/^(?:[^/]+\/)?00_plan-trace\/(trace\.md|\.journal)$/.test(rel(path)) ? 'append' : 'write'} ${rel(path)}`, tear)
    }
    const written = writeSync.call(this, fd, data, ...rest)
    if (path !== undefined && verdictSaving !== undefined && path.endsWith('/.journal')) verdictSaved()
    return written
  }
  fs.fsyncSync = function (fd) {
    if (quiet) return fsyncSync.call(this, fd)
    const path = fdAll.get(fd)
    pointSync(`fsync ${path === undefined ? 'folder' : rel(path)}`)
    const done = fsyncSync.call(this, fd)
    if (path !== undefined && watched(path)) model.synced(path)
    return done
  }
  fs.ftruncateSync = function (fd, length = 0) {
    const done = ftruncateSync.call(this, fd, length)
    const path = fdAll.get(fd)
    if (path !== undefined && watched(path)) model.truncated(path, length)
    return done
  }
  fs.renameSync = function (from, to) {
    if (quiet) return renameSync.call(this, from, to)
    pointSync(`rename ${rel(from)} -> ${rel(to)}`)
    return renaming(from, to, () => renameSync.call(this, from, to))
  }
  fs.mkdirSync = function (path, options) {
    if (quiet) return mkdirSync.call(this, path, options)
    pointSync(`mkdir ${rel(path)}`)
    const missing = watched(path) ? (options?.recursive ? model.missingFolders(String(path)) : model.exists(String(path)) ? [] : [String(path)]) : []
    const done = mkdirSync.call(this, path, options)
    for (const folder of missing) model.created(folder)
    return done
  }
  fs.linkSync = function (existing, path) {
    const done = linkSync.call(this, existing, path)
    if (watched(path)) model.created(String(path))
    return done
  }
  fs.rmSync = function (path, options) {
    const done = rmSync.call(this, path, options)
    if (watched(path)) model.removed(String(path))
    return done
  }
  fs.unlinkSync = function (path) {
    const done = unlinkSync.call(this, path)
    if (watched(path)) model.removed(String(path))
    return done
  }
}
// A check's command (check.mjs): logged as the library starts it and as it ends (what the library counts), and a kill
// point while it runs. The command runs in a process group of its own, so a kill of this process leaves it running.
{
  const { spawn } = childProcess
  childProcess.spawn = function (command, args, options) {
    const started = spawn.call(this, command, args, options)
    if (args?.[0] !== CHECK_SCRIPT) return started
    const visit = process.env.CRASH_VISIT
    side({ t: 'check-spawn', visit })
    line(`C+ ${visit}`)
    started.on('close', (exit) => {
      side({ t: 'check-exit', visit, exit })
      line(`C- ${visit}`)
    })
    pointSync(`check ${visit}`)
    return started
  }
}
syncBuiltinESMExports()

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
function spin(microseconds) {
  const end = process.hrtime.bigint() + BigInt(Math.round(microseconds * 1000))
  while (process.hrtime.bigint() < end);
}

const { runPlan, nextStep, completeStep, loadPlan } = await import(config.dist)
if (config.agent) {
  // An agent of an agent trial (agent.mjs): its own loop of nextStep/completeStep, to the run's end.
  const { runAgent } = await import('./agent.mjs')
  await runAgent({
    config,
    lib: { nextStep, completeStep },
    line,
    side,
    point,
    random,
    forget: () => model.reset(),
    ops: () => ops,
  })
}
const maxSteps = config.nested ? NESTED_MAX_STEPS : MAX_STEPS
const { work, llm } = makeScript({
  vault: config.vault,
  log: side,
  hook: async (label) => {
    const mark = label.startsWith('work') ? 'W' : 'J'
    const at = label.slice(label.indexOf(' ') + 1)
    line(`${mark}+ ${at}`)
    if (config.mode === 'event') {
      const r = random()
      if (r < 0.3) spin(random() * 800)
      else if (r < 0.8) await sleep(random() * 4)
      else await new Promise((resolve) => setImmediate(resolve))
    }
    await point(label)
    line(`${mark}- ${at}`)
  },
  // A try failed on purpose: the library waits 1 s before the next; a kill point 100 ms into that wait.
  failed: (at) => {
    line(`B+ ${at}`)
    setTimeout(() => {
      pointSync(`backoff ${at}`)
      line(`B- ${at}`)
    }, 100)
  },
})
const checks = checksFor(config.sideLog, config.attempt)
/** The output of a visit saved (its check's verdict with it): a check of that visit must never start again. */
const saved = (event) => {
  if (event.type === 'work' && (event.node === CHECKED_NOTE || event.node.endsWith(`/${CHECKED_NOTE}`))) verdictSaving = event.visit
}

line('READY')
try {
  if (config.stepping) {
    // Driven from outside, one hop a call, as an agent would; the kills land between and inside calls.
    const options = { llm, fsync: true, maxSteps, checks, onEvent: saved }
    let step = await nextStep(config.vault, { ...options, query: QUERY })
    while (step.kind === 'work') {
      line(`EV claim ${step.node.id}#${step.visit}`)
      let output
      // The agent retries a failing work itself, as the note's `retries:` says, after the library's first backoff (1 s).
      for (let tries = 0; output === undefined; tries++) {
        try {
          output = await work({
            node: step.node,
            query: step.query,
            visit: step.visit,
            step: step.step,
            outputs: step.outputs,
            key: step.key,
            ...(step.plan !== undefined && { plan: step.plan }),
          })
        } catch (error) {
          if (tries >= (step.node.retries ?? 0)) throw error
          await sleep(1000)
        }
      }
      step = await completeStep(config.vault, step.key, { output }, options)
    }
  }
  // `fresh`: a fresh start over a finished run (its archiving); `template`: the plan copied into the vault first,
  // or, with `graph`, loaded and written out there as an in-memory plan (savePlan).
  const plan = config.graph ? await loadPlan(config.template) : (config.template ?? config.vault)
  const result = await runPlan(plan, {
    ...(config.fresh && { fresh: true }),
    ...(config.template && { runVault: config.vault }),
    query: QUERY,
    work,
    llm,
    fsync: true,
    maxSteps,
    checks,
    onEvent: (event) => {
      saved(event)
      line(`EV ${event.type} ${event.node ?? ''}${'visit' in event ? `#${event.visit}` : ''}`)
    },
  })
  line(`OPS ${ops}`)
  line(`RESULT ${JSON.stringify(result)}`)
  process.exit(0)
} catch (error) {
  line(`OPS ${ops}`)
  // The issues of a PlanValidationError too: a warning that a note kept changing (an editor trial) says why it was left out.
  const issues = Array.isArray(error?.issues) ? error.issues.map(({ code, severity, message }) => ({ code, severity, message })) : undefined
  line(`ERROR ${JSON.stringify({ name: error?.name, code: error?.code, message: String(error?.message ?? error), stack: String(error?.stack ?? ''), issues })}`)
  process.exit(1)
}
