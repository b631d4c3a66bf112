/**
 * What an agent pays over MCP, in tokens (`o200k_base`, js-tiktoken), with
 * the official SDK's client over stdio:
 *
 * 1. `tools/list` of vaultplan's server (`vaultplan mcp`), Task Master's
 *    (`task-master-ai`, its 7 core tools: TASK_MASTER_TOOLS=core) and
 *    Backlog.md's (`backlog mcp start` in a git repository after
 *    `backlog init --defaults`, its 20 tools), in the same run: the whole
 *    JSON-RPC response on the wire, and the tools' names, descriptions and
 *    input schemas alone. A server that does not start is reported as not
 *    measured, with the reason.
 * 2. An agent's walk of a 12-note release plan over vaultplan's server,
 *    one note decided by a person (plan_decide): the calls it makes and the
 *    tokens of the results its model reads. A host hands the model one copy
 *    of a result, its `structuredContent` when there is one (Claude Code,
 *    VS Code: anthropics/claude-code#79944, microsoft/vscode#290063) or its
 *    text, so each call counts the larger of the two; the text, the
 *    `structuredContent` and the whole response on the wire are printed too.
 *
 * Prints the figures with PASS/MISS against the targets of issue 28 and
 * writes `bench/results/mcp-tokens.json` (`--quick`: `mcp-tokens-quick.json`).
 * Run by `npm run bench`; alone after `npm run build` and `npm --prefix bench ci`.
 */
import { execFile } from 'node:child_process'
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { createRequire } from 'node:module'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'
import { connectStdio, onTheWire, responseTo, resultTokens, tokens, workNote } from './lib/mcp-client.mjs'
import { startRecord, writeResult } from './lib/results.mjs'
import { writeWalkVault } from './lib/vaults.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const quick = process.argv.includes('--quick')
const cli = join(here, '..', 'dist', 'cli.js')
const require = createRequire(import.meta.url)
const run = promisify(execFile)
const log = (message) => process.stderr.write(`${message}\n`)

/** Targets of issue 28 for vaultplan's server. */
export const TARGETS = { listWire: 3000, listTools: 2600, walkCalls: 14, walkTokens: 2500 }

/** A package's bin script and version from bench/node_modules; throws when it is not installed. */
async function bin(name, command) {
  let manifest
  try {
    manifest = require.resolve(`${name}/package.json`)
  } catch {
    throw new Error(`${name} is not installed (npm --prefix bench ci)`)
  }
  const pkg = JSON.parse(await readFile(manifest, 'utf8'))
  return { script: join(dirname(manifest), typeof pkg.bin === 'string' ? pkg.bin : pkg.bin[command]), version: pkg.version }
}

/** The servers measured: how to set each up in `dir` and start it. */
const SERVERS = [
  {
    name: 'vaultplan',
    tools: 'all',
    async start(dir) {
      const pkg = JSON.parse(await readFile(join(here, '..', 'package.json'), 'utf8'))
      return { version: pkg.version, command: process.execPath, args: [cli, 'mcp', '--root', dir] }
    },
  },
  {
    name: 'Task Master',
    tools: 'core, TASK_MASTER_TOOLS=core',
    async start(dir) {
      const { script, version } = await bin('task-master-ai', 'task-master-ai')
      return { version, command: process.execPath, args: [script], cwd: dir, env: { TASK_MASTER_TOOLS: 'core' } }
    },
  },
  {
    name: 'Backlog.md',
    tools: 'all, after backlog init --defaults',
    async start(dir) {
      const { script, version } = await bin('backlog.md', 'backlog')
      const git = { GIT_AUTHOR_NAME: 'bench', GIT_AUTHOR_EMAIL: 'bench@example.com', GIT_COMMITTER_NAME: 'bench', GIT_COMMITTER_EMAIL: 'bench@example.com' }
      await run('git', ['init', '-q'], { cwd: dir })
      await run(process.execPath, [script, 'init', 'bench', '--defaults'], { cwd: dir, env: { ...process.env, ...git }, timeout: 60_000 })
      return { version, command: process.execPath, args: [script, 'mcp', 'start'], cwd: dir, env: git }
    },
  },
]

/** `tools/list` of one server: tokens of the response on the wire and of the tools' names, descriptions and input schemas. */
export async function measureList(server, base) {
  const dir = await mkdtemp(join(base, 'server-'))
  let started
  try {
    started = await server.start(dir)
  } catch (error) {
    return { server: server.name, measured: false, reason: error.message.split('\n')[0] }
  }
  let connection
  try {
    connection = await connectStdio(started.command, started.args, { cwd: started.cwd, env: started.env })
    const { tools } = await connection.client.listTools()
    const list = onTheWire(responseTo(connection.wire, 'tools/list'))
    const initialize = onTheWire(responseTo(connection.wire, 'initialize'))
    const core = JSON.stringify(tools.map(({ name, description, inputSchema }) => ({ name, description, inputSchema })))
    const outputSchemas = tools.filter((tool) => tool.outputSchema).map((tool) => JSON.stringify(tool.outputSchema))
    return {
      server: server.name,
      version: started.version,
      toolSet: server.tools,
      measured: true,
      tools: tools.length,
      names: tools.map((tool) => tool.name),
      wireTokens: tokens(list),
      wireBytes: Buffer.byteLength(list),
      toolTokens: tokens(core),
      outputSchemaTokens: outputSchemas.length === 0 ? 0 : tokens(outputSchemas.join('')),
      initializeTokens: tokens(initialize),
    }
  } catch (error) {
    return { server: server.name, version: started.version, measured: false, reason: error.message.split('\n')[0] }
  } finally {
    await connection?.close().catch(() => {})
  }
}

/**
 * An agent's walk of the 12-note plan: plan_next, then plan_finish note
 * after note; at the note a person decides, plan_decide (and plan_next,
 * unless plan_decide answers with the next step). Works with the step's
 * note under `node` or `note`.
 */
async function walk(base) {
  const root = await mkdtemp(join(base, 'walk-'))
  const { human, edge } = await writeWalkVault(join(root, 'release'))
  const connection = await connectStdio(process.execPath, [cli, 'mcp', '--root', root])
  const calls = []
  const call = async (name, args) => {
    const result = await connection.client.callTool({ name, arguments: args })
    if (result.isError) throw new Error(`${name} refused: ${result.content?.[0]?.text}`)
    const wire = onTheWire(connection.wire.received.at(-1))
    calls.push({ tool: name, ...resultTokens(result), wire: tokens(wire), arguments: tokens(JSON.stringify(args)) })
    return result.structuredContent
  }
  const vault = 'release'
  try {
    let { step } = await call('plan_next', { vault, query: 'release 2.4.0' })
    let worked = 0
    while (step.kind === 'work' || step.kind === 'waiting') {
      if (step.kind === 'waiting') {
        const decided = await call('plan_decide', { vault, node: step.waiting[0].node ?? human, edge, feedback: 'Fine, ship it.' })
        step = decided.step ?? (await call('plan_next', { vault })).step
        continue
      }
      const note = workNote(step)
      const labels = (step.conditions ?? []).filter((label) => label !== 'next')
      const choice = labels.length > 0 && note.id !== human ? { choice: labels[0] } : {}
      worked++
      ;({ step } = await call('plan_finish', { vault, key: step.key, output: `Done: ${note.title}. Nothing else to report.`, ...choice }))
    }
    if (step.kind !== 'completed') throw new Error(`the walk ended ${step.kind}: ${step.reason ?? ''}`)
    const sum = (field) => calls.reduce((total, entry) => total + entry[field], 0)
    return {
      notes: worked,
      calls: calls.length,
      byTool: Object.fromEntries([...new Set(calls.map((entry) => entry.tool))].map((tool) => [tool, calls.filter((entry) => entry.tool === tool).length])),
      resultTokens: calls.reduce((total, entry) => total + Math.max(entry.text, entry.structured), 0),
      textTokens: sum('text'),
      structuredTokens: sum('structured'),
      wireTokens: sum('wire'),
      argumentTokens: sum('arguments'),
      perCall: calls,
    }
  } finally {
    await connection.close().catch(() => {})
  }
}

/** The targets, each with its value and PASS or MISS. */
function targets(lists, walked) {
  const vaultplan = lists.find((entry) => entry.server === 'vaultplan')
  const row = (name, value, limit) => ({ name, value: value ?? null, target: `<= ${limit}`, pass: value !== undefined && value <= limit })
  return [
    row('vaultplan tools/list, tokens on the wire', vaultplan?.wireTokens, TARGETS.listWire),
    row('vaultplan tools/list, names + descriptions + input schemas, tokens', vaultplan?.toolTokens, TARGETS.listTools),
    row('12-note walk with one decision, calls', walked?.calls, TARGETS.walkCalls),
    row('12-note walk with one decision, tokens of results a model reads (one copy: structuredContent or text)', walked?.resultTokens, TARGETS.walkTokens),
  ]
}

/** Prints the tables. */
export function printTokens(result) {
  console.log(
    '| server | version | tools | tools/list on the wire (tokens) | names + descriptions + input schemas (tokens) | output schemas (tokens) | initialize (tokens) |',
  )
  console.log('|:---|:---|---:|---:|---:|---:|---:|')
  for (const entry of result.lists) {
    if (!entry.measured) console.log(`| ${entry.server} | ${entry.version ?? ''} | not measured: ${entry.reason} | | | | |`)
    else
      console.log(
        `| ${entry.server} | ${entry.version} | ${entry.tools} (${entry.toolSet}) | ${entry.wireTokens} | ${entry.toolTokens} | ${entry.outputSchemaTokens} | ${entry.initializeTokens} |`,
      )
  }
  const walked = result.walk
  if (walked.error) console.log(`\nWalk not measured: ${walked.error}`)
  else
    console.log(
      `\nWalk: ${walked.notes} notes worked in ${walked.calls} calls (${Object.entries(walked.byTool)
        .map(([tool, count]) => `${tool} ${count}`)
        .join(
          ', ',
        )}); results a model reads ${walked.resultTokens} tokens (text ${walked.textTokens}, the same as structuredContent ${walked.structuredTokens}); responses on the wire ${walked.wireTokens}; arguments the agent wrote ${walked.argumentTokens}.`,
    )
  console.log('')
  for (const target of result.targets) console.log(`${target.pass ? 'PASS' : 'MISS'} ${target.name}: ${target.value ?? 'n/a'} (target ${target.target})`)
}

async function main() {
  const begun = startRecord()
  const base = await mkdtemp(join(tmpdir(), 'vaultplan-mcp-tokens-'))
  try {
    const lists = []
    for (const server of SERVERS) {
      log(`tools/list of ${server.name}`)
      lists.push(await measureList(server, base))
    }
    log('the 12-note walk over vaultplan')
    const walked = await walk(base).catch((error) => ({ error: error.message }))
    const result = { quick, encoding: 'o200k_base (js-tiktoken)', lists, walk: walked, targets: targets(lists, walked.error ? undefined : walked) }
    const path = await writeResult(quick ? 'mcp-tokens-quick' : 'mcp-tokens', begun, result)
    printTokens(result)
    console.log(`Written to ${path}.`)
  } finally {
    await rm(base, { recursive: true, force: true })
  }
}

if (import.meta.url === `file://${process.argv[1]}`) await main()
