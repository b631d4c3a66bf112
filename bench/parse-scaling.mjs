// Time per KB of each parser at growing input sizes, on hostile shapes of input.
// A linear parser keeps about the same time per KB as the input grows; the last
// column divides the largest size's time per KB by the smallest's.
// Run after `npm run build`: `node bench/parse-scaling.mjs [--max-kb N]`.
import { parseArgs } from 'node:util'
import { extractJson, parseGridReply } from '../dist/models/judge-reply.js'
import { parseFrontmatter, setFrontmatterStatus } from '../dist/vault/frontmatter.js'
import { LinkResolver } from '../dist/vault/links.js'
import { parseNote } from '../dist/vault/parse-note.js'
import { parsePlanDocument } from '../dist/plan/plan-document.js'

const { values } = parseArgs({ options: { 'max-kb': { type: 'string' } } })
const MAX_KB = Number(values['max-kb'] ?? 1024)
/** A size whose run takes longer than this is the last one tried for its case. */
const GIVE_UP_MS = 2_000

const repeat = (piece, kb) => piece.repeat(Math.max(1, Math.ceil((kb * 1024) / piece.length)))
const tryParse = (fn) => {
  try {
    fn()
  } catch {
    // an invalid plan is fine here: the time to find out is what is measured
  }
}

const cases = [
  ['judge reply: white space inside a row', (kb) => `1${repeat(' ', kb)}x`, (text) => parseGridReply(text, 2)],
  ['judge reply: white space lines', (kb) => `1:${repeat(' \t', kb)}\n2: YES`, (text) => parseGridReply(text, 2)],
  ['judge reply: unclosed code fence, blank lines', (kb) => `\`\`\`json${repeat('\n', kb)}x`, (text) => extractJson(text)],
  ['judge reply: many unclosed fences', (kb) => repeat('```\n', kb), (text) => extractJson(text)],
  ['judge reply: label then spaces', (kb) => repeat(`1. approved${' '.repeat(60)}-\n`, kb), (text) => parseGridReply(text, 3)],
  [
    'note: emphasis runs in ## Next',
    (kb) => `# T\n\n## Next\n${repeat('- *a _b **c __d [[x]] ~e\n  *f_ **g\n', Math.min(kb, 48))}`,
    (text) => parseNote('n.md', text),
  ],
  ['note: many ## Next headings', (kb) => `# T\n${repeat('## Next\n- [[a]]\n', kb)}`, (text) => parseNote('n.md', text)],
  ['note: heading with a long white-space run', (kb) => `# a${repeat(' ', kb)}b\n`, (text) => parseNote('n.md', text)],
  [
    'note: ## Next label with white space across lines',
    (kb) => `## Next\n- a${repeat(`${' '.repeat(200)}\n `, Math.min(kb, 48))}*x* -> [[b]]\n`,
    (text) => parseNote('n.md', text),
  ],
  ['note: long body with fences', (kb) => repeat('text\n```\ncode\n```\n', kb), (text) => parseNote('n.md', text)],
  [
    'frontmatter: plain keys with comments',
    (kb) =>
      `---\n${repeat('key_x: value # c\n# a comment\n', kb)
        .split('key_x')
        .map((part, i) => (i ? `k${i}${part}` : part))
        .join('')}---\nbody\n`,
    (text) => parseFrontmatter(text),
  ],
  ['frontmatter: a value with a white-space run', (kb) => `---\nkey: a${repeat(' ', kb)}b\n---\n`, (text) => parseFrontmatter(text)],
  [
    'frontmatter: status patch, long plain frontmatter',
    (kb) => `---\n${Array.from({ length: Math.ceil((kb * 1024) / 14) }, (_, i) => `k${i}: value\n`).join('')}status: done\n---\n`,
    (text) => setFrontmatterStatus(text, 'active'),
  ],
  ['plan document: heading with a white-space run', (kb) => `## a${repeat(' ', kb)}b\nDo it.\n`, (text) => tryParse(() => parsePlanDocument(text))],
  [
    'plan document: many sections',
    (kb) =>
      repeat('## s\nDo it.\n### Next\n- [[s]]\n', kb)
        .split('## s')
        .map((part, i) => (i ? `## s${i}${part.replace('[[s]]', `[[s${i + 1}]]`)}` : part))
        .join(''),
    (text) => tryParse(() => parsePlanDocument(text)),
  ],
  [
    'links: many notes of one name',
    (kb) => Array.from({ length: Math.ceil(kb * 16) }, (_, i) => `f${i}/index`),
    (ids) => {
      const resolver = new LinkResolver(ids.map((id) => ({ id, aliases: [] })))
      for (const id of ids.slice(0, 64)) resolver.resolve(id.slice(id.indexOf('/') + 1))
    },
  ],
]

const sizes = []
for (let kb = 0.25; kb <= MAX_KB; kb *= 4) sizes.push(kb)

const header = ['case', ...sizes.map((kb) => `${kb} KB`), 'last/first']
const rows = []
for (const [name, make, run] of cases) {
  const perKB = []
  run(make(0.25)) // warm-up
  for (const kb of sizes) {
    const input = make(kb)
    const actualKB = (typeof input === 'string' ? input.length : input.join('\n').length) / 1024
    const started = performance.now()
    run(input)
    const ms = performance.now() - started
    perKB.push(ms / actualKB)
    if (ms > GIVE_UP_MS) break
  }
  const cells = sizes.map((_, index) => (perKB[index] === undefined ? '(skipped)' : `${perKB[index].toFixed(4)} ms/KB`))
  const ratio = perKB.length > 1 ? (perKB.at(-1) / perKB[0]).toFixed(2) : '-'
  rows.push([name, ...cells, ratio])
  console.error(`${name}: ${cells.join(', ')} (${ratio})`)
}
const widths = header.map((cell, column) => Math.max(cell.length, ...rows.map((row) => row[column].length)))
const line = (row) => `| ${row.map((cell, column) => cell.padEnd(widths[column])).join(' | ')} |`
console.log(line(header))
console.log(line(widths.map((width) => '-'.repeat(width))))
for (const row of rows) console.log(line(row))
