// Reads a run vault the way a careful user would check it after a crash,
// without trusting the library's own readers: the trace's marker lines,
// the status values, temp files, the user's bytes.
import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { join } from 'node:path'
import { PERSON_LINE } from './editor.mjs'
import { FILES, MAX_STEPS, MAX_VISITS, NESTED_FILES, NESTED_MAX_STEPS, STATUSES, statusIn, withStatus } from './vault.mjs'

export const TRACE_FOLDER = '00_plan-trace'
const MARKER = '<!-- vaultplan:hop '
const TEMP_PREFIX = '.vaultplan-tmp-'
const OLD_VERSION_PREFIX = '.vaultplan-old-'
const NOTES = Object.keys(FILES).filter((file) => file.endsWith('.md'))

/** Every file under `dir`, relative, `/`-separated (directories end with `/` when empty). */
export function listFiles(dir, prefix = '') {
  const out = []
  for (const entry of readdirSync(join(dir, prefix), { withFileTypes: true })) {
    const path = prefix ? `${prefix}/${entry.name}` : entry.name
    if (entry.isDirectory()) out.push(...listFiles(dir, path))
    else out.push(path)
  }
  return out
}

/** The trace as written: header count, run id, the complete records, and whether it ends in a torn entry. */
export function readTraceFile(vault) {
  const path = join(vault, TRACE_FOLDER, 'trace.md')
  if (!existsSync(path)) return undefined
  const text = readFileSync(path, 'utf8')
  const headers = (text.match(/^vaultplan: trace$/gm) ?? []).length
  const run = /^run: ["']?([^"'\n]+)["']?$/m.exec(text)?.[1]
  const records = []
  let lastComplete = 0
  let offset = 0
  for (const line of text.split('\n')) {
    const end = offset + line.length + 1
    offset = end
    if (!line.startsWith(MARKER)) continue
    // A marker line cut before its end is torn even when its JSON is whole (a power cut right after the `}`): the library ignores it.
    if (!line.trimEnd().endsWith(' -->')) continue
    try {
      records.push(JSON.parse(line.slice(MARKER.length).replace(/\s*-->\s*$/, '')))
      lastComplete = end
    } catch {
      // a torn entry: ignored, as the library must ignore it
    }
  }
  const header = /^Run `.*\n/m.exec(text)
  const headerEnd = header ? header.index + header[0].length : text.length
  // Text after the last complete entry: an entry a crash cut short.
  const torn = /\S/.test(text.slice(Math.max(lastComplete, headerEnd)))
  return { text, headers, run, records, hops: records.filter((record) => record.kind === 'hop'), torn }
}

/** What matters of a hop for the path: everything the record says. */
export function hopKey(hop) {
  return JSON.stringify({ step: hop.step, node: hop.node, visit: hop.visit, edge: hop.edge, decidedBy: hop.decidedBy, next: hop.next, output: hop.output })
}

/**
 * A hop of the nested plan for the path: its step number left out (and the
 * number in its output's name), since parallel branches take the whole run's
 * numbers in the order they claim, which the scheduler decides.
 */
export function pathKey(hop) {
  return JSON.stringify({
    node: hop.node,
    visit: hop.visit,
    edge: hop.edge,
    decidedBy: hop.decidedBy,
    next: hop.next,
    output: hop.output.replace(/\d{4}-/, ''),
  })
}

/** A snapshot of the vault's state, for checks and for naming the kill point. */
export function snapshot(vault) {
  const files = listFiles(vault)
  // A note's old version under a second name (while the run replaces it) counts as a temp file: it is settled at the next call.
  const temps = files.filter((file) => file.split('/').pop().startsWith(TEMP_PREFIX) || file.split('/').pop().startsWith(OLD_VERSION_PREFIX))
  const statuses = {}
  for (const note of NOTES) {
    try {
      statuses[note.replace(/\.md$/, '')] = statusIn(readFileSync(join(vault, note), 'utf8')) ?? 'pending'
    } catch {
      statuses[note.replace(/\.md$/, '')] = undefined
    }
  }
  const outputsDir = join(vault, TRACE_FOLDER, 'outputs')
  const outputs = existsSync(outputsDir)
    ? readdirSync(outputsDir)
        .filter((name) => name.endsWith('.md') && !name.startsWith(TEMP_PREFIX))
        .sort()
    : []
  return {
    files,
    temps,
    statuses,
    outputs,
    trace: readTraceFile(vault),
    final: existsSync(join(vault, TRACE_FOLDER, 'final.md')),
    lock: existsSync(join(vault, TRACE_FOLDER, '.lock')),
    holder: existsSync(join(vault, TRACE_FOLDER, '.lock-holder.json')),
  }
}

/**
 * Names the point of a hop where a kill landed, from what it left on disk
 * and the child's last log entries of that attempt.
 */
export function killPoint(state, attemptLog) {
  if (state.temps.length > 0) {
    const temp = state.temps[0]
    if (temp.startsWith(`${TRACE_FOLDER}/outputs/`)) return 'mid-output-write'
    if (temp.startsWith(`${TRACE_FOLDER}/`)) return 'mid-trace-folder-write'
    return 'mid-note-write'
  }
  const last = attemptLog.filter((entry) => /^(work|judge)-(start|end)$|^work-fail$|^check-(spawn|exit)$/.test(entry.t)).at(-1)
  // A check still running, or a retry's backoff: the child's last word, whatever the trace's end looks like.
  if (last?.t === 'check-spawn') return 'during-check'
  if (last?.t === 'work-fail') return 'during-backoff'
  const trace = state.trace
  if (!trace) return 'startup'
  if (trace.torn) return 'torn-trace-append'
  if (state.final) return 'after-final'
  const steps = trace.records.reduce((max, record) => Math.max(max, record.step), 0)
  const prefix = `${String(steps + 1).padStart(4, '0')}-`
  const pendingOutput = state.outputs.find((name) => name.startsWith(prefix))
  const active = Object.entries(state.statuses).find(([, status]) => status === 'active')?.[0]
  if (active) {
    if (pendingOutput) return 'after-output-saved'
    if (last?.t === 'check-exit') return 'after-check'
    if (last?.node === active && last.t === 'work-start') return 'during-work'
    if (last?.node === active && last.t === 'work-end') return 'after-work'
    return 'after-status-active'
  }
  if (pendingOutput) return last?.t === 'judge-start' ? 'during-judge' : 'after-status-done'
  return trace.records.length === 0 ? 'after-trace-header' : 'after-trace-append'
}

/**
 * Checks a vault against the uninterrupted run. `final` adds the checks of a
 * finished run. `powerCut`: the vault went through a power cut, so statuses
 * may show earlier values than the trace's (every other check stands). `edited`: a person's editor added lines to the notes
 * (editor.mjs), which are taken out before the notes are compared (editorProblems checks them). Returns problems as { kind, message }; kind is `data-loss`,
 * `budget` or `other`.
 */
export async function checkVault(vault, reference, { final, loadPlan, powerCut = false, branch = false, edited = false }) {
  const problems = []
  // `bytes`: a problem with the user's bytes (the rest are about the run's path and state).
  const fail = (kind, message, bytes = false) => problems.push({ kind, message, ...(bytes && { bytes }) })
  const state = snapshot(vault)

  // Every note parses and the plan is still valid.
  try {
    const graph = await loadPlan(vault)
    graph.validate()
    for (const node of graph.nodes.values()) if (!STATUSES.includes(node.status)) fail('data-loss', `\`${node.id}\` has status \`${node.status}\``)
    const ids = [...graph.nodes.keys()].sort()
    if (JSON.stringify(ids) !== JSON.stringify(reference.nodeIds)) fail('data-loss', `nodes are ${ids.join(', ')}, expected ${reference.nodeIds.join(', ')}`)
  } catch (error) {
    fail('data-loss', `the vault no longer loads and validates: ${error.message}${error.issues ? ` ${JSON.stringify(error.issues)}` : ''}`)
  }

  // The user's bytes: notes differ from the originals in their status value only, other files not at all.
  for (const [file, contents] of Object.entries(FILES)) {
    let now
    try {
      now = readFileSync(join(vault, file))
    } catch (error) {
      fail('data-loss', `\`${file}\` is gone: ${error.code}`, true)
      continue
    }
    if (!file.endsWith('.md')) {
      if (!now.equals(Buffer.from(contents))) fail('data-loss', `\`${file}\` changed`, true)
      continue
    }
    const text = edited ? now.toString('utf8').replace(PERSON_LINE, '') : now.toString('utf8')
    const status = statusIn(text) ?? 'pending'
    if (!STATUSES.includes(status)) fail('data-loss', `\`${file}\` has status \`${status}\``)
    if (!STATUSES.some((value) => withStatus(contents, value) === text) && text !== contents) {
      fail(
        'data-loss',
        `\`${file}\` changed beyond its status value:\n--- expected (status ${status})\n${JSON.stringify(withStatus(contents, status))}\n--- found\n${JSON.stringify(text)}`,
        true,
      )
    }
  }
  const extra = state.files.filter((file) => !file.startsWith(`${TRACE_FOLDER}/`) && !(file in FILES) && !state.temps.includes(file))
  if (extra.length > 0) fail('other', `unexpected files in the vault: ${extra.join(', ')}`)
  const active = Object.entries(state.statuses).filter(([, status]) => status === 'active')
  if (active.length > 1) fail('other', `two notes are active: ${active.map(([id]) => id).join(', ')}`)

  // The trace: one header, the completed hops a prefix of the uninterrupted path (all of it when final).
  const trace = state.trace
  const key = branch ? pathKey : hopKey
  const expected = reference.hops.map(key)
  if (trace) {
    if (trace.headers !== 1) fail('data-loss', `the trace has ${trace.headers} headers`)
    const hops = trace.hops.map(key)
    const bad = hops.findIndex((hop, index) => hop !== expected[index])
    if (bad !== -1) fail('data-loss', `trace hop ${bad + 1} is ${hops[bad]}, expected ${expected[bad] ?? 'no hop'}\nall hops:\n${hops.join('\n')}`)
    else if (final && hops.length !== expected.length) fail('data-loss', `the trace has ${hops.length} hops, expected ${expected.length}`)
    // Statuses agree with the trace: a node with a recorded hop was entered (never `pending` again),
    // and the last hop's node is `done`, or `active` when it is worked again.
    // After a power cut a status rewrite may be undone (it is not flushed): a status may show an earlier value.
    if (!powerCut)
      for (const hop of trace.hops) if (state.statuses[hop.node] === 'pending') fail('data-loss', `\`${hop.node}\` has a hop in the trace but is \`pending\``)
    const last = trace.hops.at(-1)
    if (!powerCut && last && !(state.statuses[last.node] === 'done' || (state.statuses[last.node] === 'active' && last.next === last.node))) {
      fail('other', `the last hop is \`${last.node}\` -> ${last.next}, but \`${last.node}\` is \`${state.statuses[last.node]}\``)
    }
    for (const record of trace.records) {
      if (record.kind === 'stop') fail('budget', `a budget stop was recorded: ${record.reason}`)
      else if (record.kind !== 'hop') fail('other', `unexpected trace record ${JSON.stringify(record)}`)
      if (record.visit > (MAX_VISITS[record.node] ?? 3))
        fail('budget', `\`${record.node}\` visit ${record.visit} is beyond max_visits ${MAX_VISITS[record.node] ?? 3}`)
      // Step numbers are the whole run's: a branch's go as far as the nested run's budget.
      const maxSteps = branch ? NESTED_MAX_STEPS : MAX_STEPS
      if (record.step > maxSteps) fail('budget', `step ${record.step} is beyond maxSteps ${maxSteps}`)
    }
  } else if (final) {
    fail('data-loss', 'the run finished but the vault has no trace')
  }

  if (final) {
    if (state.temps.length > 0) fail('other', `temp files left after the final run: ${state.temps.join(', ')}`)
    // A branch of a nested plan keeps the lock of a runner killed inside it when no later run entered it again (a run taking it over then).
    if ((state.lock || state.holder) && !(branch && lockOfTheDead(vault)))
      fail('other', `the runner lock was not released (${[state.lock && '.lock', state.holder && '.lock-holder.json'].filter(Boolean).join(', ')})`)
    if (!powerCut && JSON.stringify(state.statuses) !== JSON.stringify(reference.statuses))
      fail('data-loss', `final statuses ${JSON.stringify(state.statuses)}, expected ${JSON.stringify(reference.statuses)}`)
    // A branch's step numbers are the whole run's, taken in the order parallel branches claim: compared without them.
    const numbered = (text) =>
      branch
        ? text
            .replace(/step=\d+/g, 'step=N')
            .replace(/^step: \d+$/m, 'step: N')
            .replace(/^digest: "?\w+"?$/m, 'digest: -')
        : text
    const named = (name) => (branch ? name.replace(/^\d{4}-/, '') : name)
    // A check's time in the report it adds to an output differs per run (and so does the output's digest).
    const timeless = (text) =>
      /^## Checks$/m.test(text) ? text.replace(/\(exit (\d+), [\d.]+ m?s\)/g, '(exit $1, T)').replace(/^digest: "?\w+"?$/m, 'digest: -') : text
    const outputs = (names, bodyOf) => names.map((name) => `${named(name)}\n${timeless(numbered(bodyOf(name) ?? ''))}`).sort()
    const found = outputs(state.outputs, (name) => outputBody(readFileSync(join(vault, TRACE_FOLDER, 'outputs', name), 'utf8')))
    const wanted = outputs(reference.outputs, (name) => reference.outputBodies[name])
    if (JSON.stringify(found.map((each) => each.split('\n')[0])) !== JSON.stringify(wanted.map((each) => each.split('\n')[0])))
      fail('data-loss', `output notes ${state.outputs.join(', ')}, expected ${reference.outputs.join(', ')}`)
    else
      for (const [index, output] of found.entries())
        if (output !== wanted[index])
          fail('data-loss', `output note \`${output.split('\n')[0]}\` is ${JSON.stringify(output)}, expected ${JSON.stringify(wanted[index])}`)
    const finalNote = state.final ? readFileSync(join(vault, TRACE_FOLDER, 'final.md'), 'utf8') : undefined
    if (numbered(finalNote ?? '') !== numbered(reference.finalNote ?? ''))
      fail('data-loss', `final.md is ${JSON.stringify(finalNote)}, expected ${JSON.stringify(reference.finalNote)}`)
  }
  return { problems, state }
}

/** Whether the runner lock of `vault` is held by no live process (the runner was killed). */
export function lockOfTheDead(vault) {
  try {
    // The holder record is born inside the lock folder (an earlier version wrote it beside the folder).
    const inside = join(vault, TRACE_FOLDER, '.lock', 'holder.json')
    const { pid } = JSON.parse(readFileSync(existsSync(inside) ? inside : join(vault, TRACE_FOLDER, '.lock-holder.json'), 'utf8'))
    process.kill(pid, 0)
    return false
  } catch (error) {
    return error.code !== 'EPERM'
  }
}

/** An output note without the line naming the run (which differs per run). */
export function outputBody(text) {
  return text.replace(/^run: .*\n/m, '')
}

/** The reference's view of a finished vault. */
export function describeFinished(vault) {
  const state = snapshot(vault)
  const outputBodies = {}
  for (const name of state.outputs) outputBodies[name] = outputBody(readFileSync(join(vault, TRACE_FOLDER, 'outputs', name), 'utf8'))
  return {
    hops: state.trace?.hops ?? [],
    statuses: state.statuses,
    outputs: state.outputs,
    outputBodies,
    finalNote: state.final ? readFileSync(join(vault, TRACE_FOLDER, 'final.md'), 'utf8') : undefined,
    run: state.trace?.run,
  }
}

/** The folders of the nested plan besides the branch `checkVault` looks at: the top plan and the other branch. */
const NESTED_FOLDERS = ['', 'side']

/** The hops of each other folder of the nested plan, for the reference. */
export function describeNested(vault) {
  return Object.fromEntries(NESTED_FOLDERS.map((folder) => [folder, readTraceFile(join(vault, folder))?.hops ?? []]))
}

/**
 * Checks the top plan and the other branch of the nested plan against the
 * uninterrupted run (`checkVault` checks the branch in `BRANCH`): each trace's
 * hops a prefix of the uninterrupted ones (all of them when final), the
 * user's bytes changed only in their status value, no lock left when final.
 */
export function checkNested(vault, reference, { final }) {
  const problems = []
  const fail = (kind, message) => problems.push({ kind, message })
  for (const [file, contents] of Object.entries(NESTED_FILES)) {
    let text
    try {
      text = readFileSync(join(vault, file), 'utf8')
    } catch (error) {
      fail('data-loss', `\`${file}\` is gone: ${error.code}`)
      continue
    }
    if (text !== contents && !STATUSES.some((value) => withStatus(contents, value) === text))
      fail('data-loss', `\`${file}\` changed beyond its status value: ${JSON.stringify(text)}`)
  }
  for (const folder of NESTED_FOLDERS) {
    const where = folder || 'the top plan'
    const expected = (reference.nested[folder] ?? []).map(pathKey)
    const trace = readTraceFile(join(vault, folder))
    const hops = (trace?.hops ?? []).map(pathKey)
    const bad = hops.findIndex((hop, index) => hop !== expected[index])
    if (bad !== -1) fail('data-loss', `${where}: trace hop ${bad + 1} is ${hops[bad]}, expected ${expected[bad] ?? 'no hop'}`)
    else if (final && hops.length !== expected.length) fail('data-loss', `${where}: the trace has ${hops.length} hops, expected ${expected.length}`)
    if (trace && trace.headers !== 1) fail('data-loss', `${where}: the trace has ${trace.headers} headers`)
    const locked = existsSync(join(vault, folder, TRACE_FOLDER, '.lock')) || existsSync(join(vault, folder, TRACE_FOLDER, '.lock-holder.json'))
    if (final && locked && !(folder !== '' && lockOfTheDead(join(vault, folder)))) fail('other', `${where}: the runner lock was not released`)
    if (final && listFiles(join(vault, folder, TRACE_FOLDER)).some((file) => file.split('/').pop().startsWith(TEMP_PREFIX)))
      fail('other', `${where}: temp files left`)
  }
  return problems
}

/**
 * After a power cut: the hops whose trace entries the child had flushed (its `power-cut` side-log
 * entry, per folder) are all still in their trace. With `fsync` on, a trace entry is a hop's commit
 * point: its file's name, and its folders', must be on the disk by then too.
 */
export function lostFlushedHops(vault, entry) {
  const problems = []
  for (const [folder, flushed] of Object.entries(entry?.flushed ?? {})) {
    const hops = readTraceFile(join(vault, folder))?.hops.length ?? 0
    if (hops < flushed)
      problems.push({
        kind: 'data-loss',
        message: `${folder || 'the vault'}: the trace has ${hops} hops after the power cut; ${flushed} were flushed before it`,
      })
  }
  return problems
}
