/**
 * Renders the session of docs/mcp.md ("A session, recorded from the test
 * suite") from the session the walk test of test/mcp-stdio.test.ts records
 * (`VAULTPLAN_MCP_TRANSCRIPT=<file>`), committed as
 * docs/recorded/mcp-session.json, so the page shows what the server
 * answered and nothing pasted by hand.
 *
 *   tsx scripts/docs-mcp.ts            rewrites docs/mcp.md
 *   tsx scripts/docs-mcp.ts --check    exits 1 when docs/mcp.md differs
 *
 * `npm run docs` records the session anew first.
 */
import { readFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { isMain, replaceGenerated, writeOrCheck } from './generated.js'

const root = fileURLToPath(new URL('..', import.meta.url))
/** The page whose session this renders. */
export const mcpPage = join(root, 'docs', 'mcp.md')
/** Where `npm run docs` records the walk test's session. */
export const recordedSession = join(root, 'docs', 'recorded', 'mcp-session.json')

/** One tool call of a recorded session, as test/helpers/mcp.ts logs it. */
export interface RecordedCall {
  tool: string
  arguments: Record<string, unknown>
  /** The result's `structuredContent`, or the text of a refusal. */
  result: unknown
  isError: boolean
}

/** Fields a reader of the transcript does not need: said in words around it. */
const LEFT_OUT = new Set(['todo', 'reason', 'runId', 'query', 'agent', 'uri', 'file', 'title', 'more'])
/** How much of a plan document an argument shows. */
const DOCUMENT_CHARS = 25

/** The text block of the page: each call, `→ tool {arguments}`, and its result, `← {...}` or `← isError: <first line>`. */
export function renderTranscript(calls: readonly RecordedCall[]): string {
  const lines: string[] = []
  for (const call of calls) {
    const args = Object.fromEntries(
      Object.entries(call.arguments).map(([key, value]) =>
        key === 'document' && typeof value === 'string' && value.length > DOCUMENT_CHARS ? [key, `${value.slice(0, DOCUMENT_CHARS)}…`] : [key, value],
      ),
    )
    lines.push(`→ ${call.tool} ${json(args)}`)
    lines.push(call.isError ? `← isError: ${String(call.result).split('\n')[0]}` : `← ${json(shortened(call.result, []))}`)
  }
  return ['```text', ...lines, '```'].join('\n')
}

/** A result with what the page leaves out taken out: the fields above, a step's `vault`, long lists cut with `…`. */
function shortened(value: unknown, path: string[]): unknown {
  if (Array.isArray(value)) {
    const key = path.at(-1)
    if (key === 'notes') return [`…${value.length} notes`]
    if (key === 'nodes') return ['…']
    const items = value.map((item) => shortened(item, path))
    return key === 'outputs' && items.length > 1 ? [items[0], '…'] : items
  }
  if (value === null || typeof value !== 'object') return value
  return Object.fromEntries(
    Object.entries(value)
      .filter(([key]) => !LEFT_OUT.has(key) && !(key === 'vault' && path.at(-1) === 'step'))
      .map(([key, each]) => [key, shortened(each, [...path, key])]),
  )
}

/** JSON on one line, with a space after each `:` and `,`, as the page prints it. */
function json(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(json).join(', ')}]`
  if (value !== null && typeof value === 'object')
    return `{${Object.entries(value)
      .map(([key, each]) => `${JSON.stringify(key)}: ${json(each)}`)
      .join(', ')}}`
  return JSON.stringify(value)
}

/** docs/mcp.md with its session rendered from `calls` (the committed recording unless given). */
export async function renderMcpPage(calls?: readonly RecordedCall[]): Promise<string> {
  const recorded = calls ?? (JSON.parse(await readFile(recordedSession, 'utf8')) as RecordedCall[])
  return replaceGenerated(await readFile(mcpPage, 'utf8'), 'mcp-session', renderTranscript(recorded))
}

if (isMain(import.meta.url)) await writeOrCheck(mcpPage, await renderMcpPage(), 'the recorded session')
