/**
 * What a coding agent pays over MCP for the walk of issue 41, in tokens
 * (`o200k_base`, js-tiktoken), with the official SDK's client over stdio:
 * `tools/list` on the wire, and a 7-note plan walked end to end (two
 * branches at once, a loop, a person: bench/lib/agent-walk.mjs), each
 * result counted once (the larger of its text and its `structuredContent`,
 * the one copy a host gives its model), and `plan_status` of the plan at
 * its end in characters. Prints the figures with PASS/MISS against the
 * targets of issue 41. test/mcp-walk.test.ts holds the calls and the
 * characters; this measures the tokens.
 *
 * Writes `bench/results/mcp-agent.json`. Run by `npm run bench`; alone
 * after `npm run build` and `npm --prefix bench ci`: node bench/mcp-agent.mjs
 */
import { mkdtemp, rm } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { walkSeven } from './lib/agent-walk.mjs'
import { connectStdio, onTheWire, responseTo, resultTokens } from './lib/mcp-client.mjs'
import { startRecord, writeResult } from './lib/results.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const cli = join(here, '..', 'dist', 'cli.js')

/** Targets of issue 41. */
export const TARGETS = { listWire: 3000, walkCalls: 12, walkTokens: 1900, statusCharacters: 1500 }

/** The figures: tools/list tokens on the wire, the walk's calls and tokens of results, plan_status's characters. */
export async function measureAgent() {
  const root = await mkdtemp(join(tmpdir(), 'vaultplan-mcp-agent-'))
  const connection = await connectStdio(process.execPath, [cli, 'mcp', '--root', root])
  try {
    await connection.client.listTools()
    const listWire = resultTokensOfWire(responseTo(connection.wire, 'tools/list'))
    const perCall = []
    const call = async (name, args) => {
      const result = await connection.client.callTool({ name, arguments: args })
      if (result.isError) throw new Error(`${name} refused: ${result.content?.[0]?.text}`)
      const { text, structured } = resultTokens(result)
      perCall.push({ tool: name, tokens: Math.max(text, structured) })
      return result.structuredContent
    }
    const { step } = await walkSeven(call)
    if (step.kind !== 'completed') throw new Error(`the walk ended ${step.kind}`)
    const status = await connection.client.callTool({ name: 'plan_status', arguments: { vault: 'posts/tide-pools' } })
    return {
      listWire,
      walkCalls: perCall.length,
      walkTokens: perCall.reduce((sum, each) => sum + each.tokens, 0),
      statusCharacters: JSON.stringify(status.structuredContent).length,
      perCall,
    }
  } finally {
    await connection.close().catch(() => {})
    await rm(root, { recursive: true, force: true })
  }
}

function resultTokensOfWire(message) {
  return resultTokens({ content: [{ type: 'text', text: onTheWire(message) }] }).text
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const begun = startRecord()
  const figures = await measureAgent()
  const targets = Object.entries(TARGETS).map(([name, limit]) => ({ name, value: figures[name], target: `<= ${limit}`, pass: figures[name] <= limit }))
  for (const each of figures.perCall) console.log(`${each.tool.padEnd(12)} ${each.tokens}`)
  for (const target of targets) console.log(`${target.pass ? 'PASS' : 'MISS'} ${target.name}: ${target.value} (target ${target.target})`)
  console.log(`Written to ${await writeResult('mcp-agent', begun, { encoding: 'o200k_base (js-tiktoken)', ...figures, targets })}.`)
  if (targets.some((target) => !target.pass)) process.exitCode = 1
}
