/**
 * Memory of `vaultplan mcp --http` under a flood of sessions: starts the
 * server on 127.0.0.1 over an empty root, reads its resident set size, sends
 * N `initialize` requests (each a new session, never closed, 16 at a time),
 * and reads it again. Prints both figures, how many requests were answered
 * 200 and 503, and whether the newest session still answers.
 *
 * Usage (after `npm run build`, on Linux):
 *   node bench/mcp-sessions.mjs [requests] [--cli path/to/cli.js] [-- extra mcp args]
 * (default 10,000 requests, this repository's dist/cli.js). With TRACE_RSS=1, it
 * prints the RSS every 1,000 requests too: a bound shows as a flat line.
 */
import { mkdtemp, readFile, rm } from 'node:fs/promises'
import { Agent, request } from 'node:http'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startMcpServer } from './lib/mcp-server.mjs'

const args = process.argv.slice(2)
const extra = args.includes('--') ? args.splice(args.indexOf('--')).slice(1) : []
const cliAt = args.indexOf('--cli')
const cli = cliAt === -1 ? fileURLToPath(new URL('../dist/cli.js', import.meta.url)) : args.splice(cliAt, 2)[1]
const total = Number(args[0] ?? 10_000)
const CONCURRENCY = 16

const root = await mkdtemp(join(tmpdir(), 'vaultplan-mcp-sessions-'))
const { child, url } = await startMcpServer(cli, root, extra)

const agent = new Agent({ keepAlive: true, maxSockets: CONCURRENCY })
const body = JSON.stringify({
  jsonrpc: '2.0',
  id: 1,
  method: 'initialize',
  params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'bench', version: '1' } },
})
const post = (payload, session) =>
  new Promise((resolve, reject) => {
    const headers = { host: url.host, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }
    if (session) headers['mcp-session-id'] = session
    const sent = request({ host: url.hostname, port: url.port, path: url.pathname, method: 'POST', headers, agent }, (response) => {
      response.resume()
      response.on('end', () => resolve({ status: response.statusCode, session: response.headers['mcp-session-id'] }))
    })
    sent.on('error', reject)
    sent.end(payload)
  })

/** The server's resident set size in MB, from /proc. */
async function rss() {
  const status = await readFile(`/proc/${child.pid}/status`, 'utf8')
  return Number(/^VmRSS:\s+(\d+) kB/m.exec(status)[1]) / 1024
}

await new Promise((resolve) => setTimeout(resolve, 500))
const before = await rss()
const statuses = {}
let last
let sent = 0
const started = performance.now()
await Promise.all(
  Array.from({ length: CONCURRENCY }, async () => {
    while (sent < total) {
      sent++
      const answer = await post(body)
      statuses[answer.status] = (statuses[answer.status] ?? 0) + 1
      if (answer.session) last = answer.session
      if (process.env.TRACE_RSS && sent % 1000 === 0) console.log(sent, (await rss()).toFixed(0))
    }
  }),
)
const seconds = (performance.now() - started) / 1000
const after = await rss()
const newest = last ? (await post(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'ping' }), last)).status : 'none'
console.log(`node bench/mcp-sessions.mjs ${total}${cliAt === -1 ? '' : ` --cli ${cli}`}${extra.length ? ` -- ${extra.join(' ')}` : ''}`)
console.log(`${total} initialize requests in ${seconds.toFixed(1)} s: ${JSON.stringify(statuses)} (status: count)`)
console.log(
  `server RSS before ${before.toFixed(0)} MB, after ${after.toFixed(0)} MB (+${(after - before).toFixed(0)} MB); the newest session answers ping: ${newest}`,
)
agent.destroy()
child.kill('SIGTERM')
await new Promise((resolve) => child.once('exit', resolve))
await rm(root, { recursive: true, force: true })
