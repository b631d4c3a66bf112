/**
 * Where an MCP hop's time goes: CPU profiles of the draft/review loop's
 * `plan_finish` in the server (`node --cpu-prof` on `vaultplan mcp`, the
 * SDK's client driving it over stdio) and of `completeStep` called in this
 * process without MCP (the V8 profiler around the loop), each after a
 * warm-up. Prints the time a hop of each, the functions with the most self
 * and inclusive time, and self time by package or folder (the SDK, zod,
 * dist/mcp, dist/run, ...): what the MCP layer adds over the stepping API.
 *
 *   node bench/mcp-profile.mjs [hops]     (default 400; after `npm run build`)
 *
 * The `.cpuprofile` files are kept in the temporary folder for Chrome DevTools.
 */
import { Session } from 'node:inspector/promises'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { topFunctions } from './lib/cpuprofile-top.mjs'
import { connectStdio } from './lib/mcp-client.mjs'
import { mcpHops, steppingHops } from './mcp-hop.mjs'

const here = dirname(fileURLToPath(import.meta.url))
const cli = join(here, '..', 'dist', 'cli.js')
const hops = Number(process.argv[2] ?? 400)
const WARM = 60
const base = await mkdtemp(join(tmpdir(), 'vaultplan-mcp-profile-'))
const kept = await mkdtemp(join(tmpdir(), 'vaultplan-mcp-profiles-'))
const median = (values) => [...values].sort((a, b) => a - b)[values.length >> 1]

/** Self time by where the code lives: a package under node_modules, a folder of dist/, node's own, or V8's. */
function byPlace(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const self = new Map()
  profile.samples.forEach((id, index) => {
    const url = byId.get(id).callFrame.url
    const place = url.includes('/node_modules/')
      ? url.replace(/^.*\/node_modules\/((@[^/]+\/)?[^/]+).*$/, '$1')
      : url.includes('/dist/')
        ? url.replace(/^.*\/dist\/([^/]+\/)?.*$/, 'dist/$1')
        : url.startsWith('node:')
          ? 'node:*'
          : url === ''
            ? `(${byId.get(id).callFrame.functionName || 'native'})`
            : url.replace(/^.*\//, '')
    self.set(place, (self.get(place) ?? 0) + (profile.timeDeltas[index] ?? 0))
  })
  const total = [...self.values()].reduce((a, b) => a + b, 0)
  return [...self]
    .sort((a, b) => b[1] - a[1])
    .slice(0, 15)
    .map(([place, time]) => ({ ms: +(time / 1000).toFixed(1), pct: +((100 * time) / total).toFixed(1), place }))
}

function report(title, profile, times) {
  const { totalMs, self, inclusive } = topFunctions(profile, 25)
  console.log(`\n## ${title}: ${hops} hops, median ${median(times).toFixed(2)} ms a hop, ${totalMs.toFixed(0)} ms sampled`)
  const rows = (list, name) => list.forEach((row) => console.log(`${String(row.ms).padStart(9)} ms ${String(row.pct).padStart(5)}%  ${row[name]}`))
  console.log('\nself time by place')
  rows(byPlace(profile), 'place')
  console.log('\nself time')
  rows(self, 'name')
  console.log('\ninclusive time')
  rows(inclusive, 'name')
}

try {
  // The server, profiled by V8 from its start to its exit (the client closes its stdin).
  const root = join(base, 'root')
  const profiles = join(kept, 'server')
  await mkdir(root)
  const connection = await connectStdio(process.execPath, ['--cpu-prof', `--cpu-prof-dir=${profiles}`, '--cpu-prof-interval=200', cli, 'mcp', '--root', root])
  await mcpHops(connection.client, root, 'warm', WARM)
  const served = await mcpHops(connection.client, root, 'loop', hops)
  await connection.close()
  let [file] = await readdir(profiles).catch(() => [])
  for (let wait = 0; !file && wait < 50; wait++) {
    await new Promise((resolve) => setTimeout(resolve, 100))
    ;[file] = await readdir(profiles).catch(() => [])
  }
  if (file) report('MCP server (plan_finish over stdio, whole process life)', JSON.parse(await readFile(join(profiles, file), 'utf8')), served)
  else console.log('The server wrote no profile.')

  // completeStep in this process, the profiler around the loop only.
  await steppingHops(join(base, 'step-warm'), WARM)
  const session = new Session()
  session.connect()
  await session.post('Profiler.enable')
  await session.post('Profiler.setSamplingInterval', { interval: 200 })
  await session.post('Profiler.start')
  const stepped = await steppingHops(join(base, 'step'), hops)
  const { profile } = await session.post('Profiler.stop')
  session.disconnect()
  await writeFile(join(kept, 'in-process.cpuprofile'), JSON.stringify(profile))
  report('completeStep in process (no MCP)', profile, stepped)
  console.log(`\nprofiles: ${kept}`)
} finally {
  await rm(base, { recursive: true, force: true })
}
