/**
 * Summarises a V8 `.cpuprofile`: self and inclusive time per function, the
 * top `count` of each, as a plain table.
 *
 * Usage: node bench/lib/cpuprofile-top.mjs <file.cpuprofile> [count]
 */
import { readFile } from 'node:fs/promises'

export function topFunctions(profile, count = 25) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]))
  const parent = new Map()
  for (const node of profile.nodes) for (const child of node.children ?? []) parent.set(child, node.id)
  const self = new Map()
  const dt = profile.timeDeltas
  profile.samples.forEach((id, index) => self.set(id, (self.get(id) ?? 0) + (dt[index] ?? 0)))
  const total = [...self.values()].reduce((a, b) => a + b, 0)
  const key = (node) => {
    const frame = node.callFrame
    const file = frame.url.replace(/^file:\/\//, '').replace(/^.*\/node_modules\//, '~/').replace(/^.*\/(dist|bench)\//, '$1/')
    return `${frame.functionName || '(anonymous)'} ${file ? `${file}:${frame.lineNumber + 1}` : ''}`.trim()
  }
  const selfBy = new Map()
  const inclusiveBy = new Map()
  for (const [id, time] of self) {
    const node = byId.get(id)
    selfBy.set(key(node), (selfBy.get(key(node)) ?? 0) + time)
    const seen = new Set()
    for (let current = id; current !== undefined; current = parent.get(current)) {
      const name = key(byId.get(current))
      if (seen.has(name)) continue
      seen.add(name)
      inclusiveBy.set(name, (inclusiveBy.get(name) ?? 0) + time)
    }
  }
  const rows = (map) =>
    [...map]
      .sort((a, b) => b[1] - a[1])
      .slice(0, count)
      .map(([name, time]) => ({ ms: +(time / 1000).toFixed(1), pct: +((100 * time) / total).toFixed(1), name }))
  return { totalMs: total / 1000, self: rows(selfBy), inclusive: rows(inclusiveBy) }
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const [file, count = '25'] = process.argv.slice(2)
  const { totalMs, self, inclusive } = topFunctions(JSON.parse(await readFile(file, 'utf8')), Number(count))
  const print = (title, rows) => {
    console.log(`\n${title} (of ${totalMs.toFixed(0)} ms sampled)`)
    for (const row of rows) console.log(`${String(row.ms).padStart(9)} ms ${String(row.pct).padStart(5)}%  ${row.name}`)
  }
  print('self time', self)
  print('inclusive time', inclusive)
}
