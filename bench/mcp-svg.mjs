/**
 * Whether `vaultplan mcp --http` keeps answering while it draws a large plan
 * as SVG: writes a dense plan of N notes (each linked to the next and to
 * three notes drawn at random), starts the server, and has one session ask
 * `plan_graph { format: svg }` while another calls `plan_list` every 100 ms.
 * Prints how the SVG request ended and after how long, and the slowest
 * `plan_list` answer while it was pending. Gives up after 60 s (the server
 * is then killed with SIGKILL, and says whether SIGTERM stopped it).
 *
 * Usage (after `npm run build`): node bench/mcp-svg.mjs [notes] [--cli path/to/cli.js]
 * (default 400 notes, this repository's dist/cli.js)
 */
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startMcpServer } from './lib/mcp-server.mjs'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js'

const args = process.argv.slice(2)
const cliAt = args.indexOf('--cli')
const cli = cliAt === -1 ? fileURLToPath(new URL('../dist/cli.js', import.meta.url)) : args.splice(cliAt, 2)[1]
const notes = Number(args[0] ?? 400)
const GIVE_UP_MS = 60_000

const root = await mkdtemp(join(tmpdir(), 'vaultplan-mcp-svg-'))
const vault = join(root, 'dense')
await mkdir(vault)
let seed = 1
const random = () => (seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648
for (let n = 0; n < notes; n++) {
  const links = n + 1 < notes ? [`- next -> [[n${n + 1}]]`, ...[0, 1, 2].map((k) => `- c${k} -> [[n${Math.floor(random() * notes)}]]`)] : []
  const front = n === 0 ? '---\ntype: start\n---\n' : ''
  await writeFile(join(vault, `n${n}.md`), `${front}# Note ${n}\n${links.length ? `\n## Next\n${links.join('\n')}\n` : ''}`)
}

const { child, url } = await startMcpServer(cli, root)
const exited = new Promise((resolve) => child.once('exit', (code, signal) => resolve(signal ?? code)))
const connect = async () => {
  const client = new Client({ name: 'bench', version: '1' })
  await client.connect(new StreamableHTTPClientTransport(url))
  return client
}
const [drawer, other] = await Promise.all([connect(), connect()])

const started = performance.now()
let outcome
const svg = drawer
  .callTool({ name: 'plan_graph', arguments: { vault: 'dense', format: 'svg' } }, undefined, { timeout: GIVE_UP_MS * 2 })
  .then(
    (result) =>
      (outcome = result.isError ? `refused: ${result.content[0].text.split('\n')[0]}` : `an SVG of ${result.structuredContent.picture.length} characters`),
  )
  .catch((error) => (outcome = `failed: ${error.message}`))
const latencies = []
while (outcome === undefined && performance.now() - started < GIVE_UP_MS) {
  const asked = performance.now()
  const answered = await Promise.race([
    other.callTool({ name: 'plan_list', arguments: {} }).then(() => true),
    new Promise((resolve) => setTimeout(() => resolve(false), GIVE_UP_MS - (asked - started))),
  ])
  latencies.push(answered ? performance.now() - asked : Infinity)
  await new Promise((resolve) => setTimeout(resolve, 100))
}
const waited = (performance.now() - started) / 1000
console.log(`node bench/mcp-svg.mjs ${notes}${cliAt === -1 ? '' : ` --cli ${cli}`}`)
console.log(`plan_graph svg of ${notes} notes: ${outcome ?? `no answer after ${waited.toFixed(0)} s`} (${waited.toFixed(1)} s)`)
const slowest = Math.max(...latencies)
console.log(
  `meanwhile ${latencies.length} plan_list calls of another session; slowest answer ${Number.isFinite(slowest) ? `${slowest.toFixed(0)} ms` : 'none (not answered)'}, median ${latencies.sort((a, b) => a - b)[Math.floor(latencies.length / 2)].toFixed(0)} ms`,
)
child.kill('SIGTERM')
const stopped = await Promise.race([exited, new Promise((resolve) => setTimeout(() => resolve(undefined), 5_000))])
console.log(`SIGTERM ${stopped === undefined ? 'ignored for 5 s: killed with SIGKILL' : 'stopped the server'}`)
if (stopped === undefined) child.kill('SIGKILL')
await exited
void svg
await rm(root, { recursive: true, force: true })
process.exit(0)
