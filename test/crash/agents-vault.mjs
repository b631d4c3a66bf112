// The vault of the agent trials (agents.mjs) and the checks of a finished
// one: a start note, a note running two branches at once (`plan: [web,
// papers]`, three notes and two), then a terminal. Read the way a careful
// user would, without the library's readers.
import { existsSync, readFileSync } from 'node:fs'
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { listFiles, lockOfTheDead, pathKey, readTraceFile, TRACE_FOLDER } from './inspect.mjs'
import { STATUSES, statusIn, withStatus } from './vault.mjs'

/** Vault-relative path -> contents. */
export const AGENT_FILES = {
  'start.md': `---
type: start
status: pending # vaultplan moves this value
tags: [survey]
---
# Frame the survey

Say what to look for; [[report]] is prose here, not an edge.

## Next
- [[research]]
`,
  'research.md': `---
plan: [web, papers]
---
# Research both ways

## Next
- [[report]]
`,
  'report.md': `# Report

Write it up: café, naïve.
`,
  'web/search.md': `---
type: start
---
# Search the web

## Next
- [[read]]
`,
  // CRLF throughout.
  'web/read.md': `---\r\nstatus: "pending"\r\n---\r\n# Read the hits\r\n\r\n## Next\r\n- [[digest]]\r\n`,
  'web/digest.md': `# Digest what was read
`,
  'papers/find.md': `---
type: start
---
# Find papers

## Next
- [[skim]]
`,
  'papers/skim.md': `---
status: pending
---
# Skim them
`,
}

/** The plan folders, each with its trace: the top plan and the two branches. */
export const AGENT_FOLDERS = ['', 'web', 'papers']

/** The path each folder's trace must hold: every note worked once. */
export const AGENT_PATHS = { '': ['start#1', 'research#1', 'report#1'], web: ['search#1', 'read#1', 'digest#1'], papers: ['find#1', 'skim#1'] }

const NOTES = Object.keys(AGENT_FILES)

export async function writeAgentVault(dir) {
  for (const [file, contents] of Object.entries(AGENT_FILES)) {
    await mkdir(dirname(join(dir, file)), { recursive: true })
    await writeFile(join(dir, file), contents)
  }
}

/** An output note or final note without what differs per run: the run id, the step numbers (claim order decides them), the digest. */
function normalized(text) {
  return text
    .replace(/^run: .*\n/m, '')
    .replace(/^step: \d+\n/m, '')
    .replace(/^digest: "?\w+"?\n/m, '')
}

/** What a finished run left, for the reference and the checks: per folder its hops, outputs (by hop) and final note; every note's status. */
export function describeAgentRun(vault) {
  const folders = {}
  for (const folder of AGENT_FOLDERS) {
    const dir = join(vault, folder, TRACE_FOLDER)
    const trace = readTraceFile(join(vault, folder))
    const hops = trace?.hops ?? []
    const read = (path) => (existsSync(path) ? normalized(readFileSync(path, 'utf8')) : undefined)
    folders[folder] = {
      trace,
      hops,
      outputs: Object.fromEntries(hops.map((hop) => [`${hop.node}#${hop.visit}`, read(join(dir, hop.output))])),
      finalNote: read(join(dir, 'final.md')),
    }
  }
  const statuses = Object.fromEntries(NOTES.map((note) => [note, statusOf(vault, note)]))
  return { folders, statuses }
}

function statusOf(vault, note) {
  try {
    return statusIn(readFileSync(join(vault, note), 'utf8')) ?? 'pending'
  } catch {
    return undefined
  }
}

/**
 * The checks of a finished agent trial against the uninterrupted run: each
 * (note, visit) recorded once in its folder's trace, each trace's path the
 * expected one, every output a hop names present and equal to the
 * uninterrupted run's, the final notes, the statuses, the user's bytes, no
 * temp file or lock left. Returns problems as `{ kind, message }`; kind
 * `data-loss`, `twice` (a visit recorded twice), `budget` or `other`.
 */
export function checkAgentVault(vault, reference) {
  const problems = []
  const fail = (kind, message) => problems.push({ kind, message })
  const found = describeAgentRun(vault)
  for (const folder of AGENT_FOLDERS) {
    const where = folder || 'the top plan'
    const { trace, hops, outputs, finalNote } = found.folders[folder]
    const wanted = reference.folders[folder]
    if (!trace) {
      fail('data-loss', `${where}: no trace`)
      continue
    }
    if (trace.headers !== 1) fail('data-loss', `${where}: the trace has ${trace.headers} headers`)
    const seen = new Map()
    for (const hop of hops) seen.set(`${hop.node}#${hop.visit}`, (seen.get(`${hop.node}#${hop.visit}`) ?? 0) + 1)
    for (const [visit, count] of seen) if (count > 1) fail('twice', `${where}: \`${visit}\` is recorded ${count} times in the trace`)
    for (const hop of hops) if (hop.visit !== 1) fail('twice', `${where}: \`${hop.node}\` has a visit ${hop.visit}, in a plan without loops`)
    const path = hops.map((hop) => `${hop.node}#${hop.visit}`)
    if (path.join(' ') !== AGENT_PATHS[folder].join(' '))
      fail('data-loss', `${where}: the trace's path is ${path.join(' ')}, expected ${AGENT_PATHS[folder].join(' ')}`)
    const keys = hops.map(pathKey)
    const expectedKeys = wanted.hops.map(pathKey)
    if (JSON.stringify(keys) !== JSON.stringify(expectedKeys))
      fail('data-loss', `${where}: the hops are\n${keys.join('\n')}\nexpected\n${expectedKeys.join('\n')}`)
    for (const [visit, body] of Object.entries(outputs)) {
      if (body === undefined) fail('data-loss', `${where}: the output of \`${visit}\` the trace names is missing`)
      else if (body !== wanted.outputs[visit])
        fail('data-loss', `${where}: the output of \`${visit}\` is ${JSON.stringify(body)}, expected ${JSON.stringify(wanted.outputs[visit])}`)
    }
    if (finalNote !== wanted.finalNote) fail('data-loss', `${where}: final.md is ${JSON.stringify(finalNote)}, expected ${JSON.stringify(wanted.finalNote)}`)
    for (const record of records(vault, folder, 'stop')) fail('budget', `${where}: a budget stop was recorded: ${record.reason}`)
    const files = listFiles(join(vault, folder, TRACE_FOLDER))
    const temps = files.filter((file) => /(^|\/)\.vaultplan-(tmp|old)-/.test(file))
    if (temps.length > 0) fail('other', `${where}: temp files left: ${temps.join(', ')}`)
    const locked = files.includes('.lock-holder.json') || existsSync(join(vault, folder, TRACE_FOLDER, '.lock'))
    if (locked && !(folder !== '' && lockOfTheDead(join(vault, folder)))) fail('other', `${where}: the runner lock was not released`)
  }
  for (const [note, original] of Object.entries(AGENT_FILES)) {
    let text
    try {
      text = readFileSync(join(vault, note), 'utf8')
    } catch (error) {
      fail('data-loss', `\`${note}\` is gone: ${error.code}`)
      continue
    }
    if (text !== original && !STATUSES.some((status) => withStatus(original, status) === text))
      fail('data-loss', `\`${note}\` changed beyond its status value: ${JSON.stringify(text)}`)
  }
  if (JSON.stringify(found.statuses) !== JSON.stringify(reference.statuses))
    fail('other', `final statuses ${JSON.stringify(found.statuses)}, expected ${JSON.stringify(reference.statuses)}`)
  const extra = listFiles(vault).filter((file) => !file.split('/').includes(TRACE_FOLDER) && !(file in AGENT_FILES))
  if (extra.length > 0) fail('other', `unexpected files in the vault: ${extra.join(', ')}`)
  return problems
}

/** The records of one kind in a folder's trace (`claim`, `stop`, ...), from their complete marker lines. */
export function records(vault, folder, kind) {
  const path = join(vault, folder, TRACE_FOLDER, 'trace.md')
  if (!existsSync(path)) return []
  const marker = `<!-- vaultplan:${kind} `
  return readFileSync(path, 'utf8')
    .split('\n')
    .filter((line) => line.startsWith(marker) && line.trimEnd().endsWith(' -->'))
    .flatMap((line) => {
      try {
        return [JSON.parse(line.slice(marker.length).replace(/\s*-->\s*$/, ''))]
      } catch {
        return []
      }
    })
}

/**
 * Claims taken over by another agent, from the traces: per visit, each
 * claim record by another agent than the one before it.
 */
export function takeovers(vault) {
  let count = 0
  for (const folder of AGENT_FOLDERS) {
    const last = new Map()
    for (const record of records(vault, folder, 'claim')) {
      if (record.agent === undefined) continue
      const visit = `${record.node}#${record.visit}`
      if (last.has(visit) && last.get(visit) !== record.agent) count += 1
      last.set(visit, record.agent)
    }
  }
  return count
}
