/**
 * Whether the plain line readers earn their place: 10,000 notes' plain
 * frontmatter read by the plain reader and by the `yaml` package, and
 * 10,000 plain `## Next` sections by the line reader and by the markdown
 * parser, each way twice in turns (ms for all 10,000).
 *
 *   node bench/plain-readers.mjs   (after `npm run build`)
 */
import { parseFrontmatter } from '../dist/vault/frontmatter.js'
import { readEdges } from '../dist/vault/next-section.js'

const COUNT = 10_000
const notes = Array.from(
  { length: COUNT },
  (_, i) => `---\ntype: step\nmax_visits: 3\nstatus: pending\ntags: [a, b]\n---\n# Note ${i}\n\n${'Some body text. '.repeat(60)}\n`,
)
const sections = Array.from({ length: COUNT }, (_, i) => `- [[n${i + 1}]]: when the draft is approved\n- [[n${i + 2}]]\n`)
const timed = (call) => {
  const started = performance.now()
  call()
  return (performance.now() - started).toFixed(0)
}
const ways = { 'plain reader': true, 'the package': false }
for (let round = 1; round <= 2; round++) {
  for (const [way, fast] of Object.entries(ways)) {
    const front = timed(() => notes.forEach((note) => parseFrontmatter(note, fast)))
    const next = timed(() => sections.forEach((section) => readEdges(section, '', 0, () => {}, fast)))
    console.log(`round ${round}, ${way.padEnd(12)}: frontmatter ${front.padStart(5)} ms, ## Next ${next.padStart(5)} ms (${COUNT} notes)`)
  }
}
