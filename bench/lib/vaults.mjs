/**
 * Generates the plan vaults the benchmark runs on, into temporary folders:
 * a path plan, a draft/review loop, and a large vault of realistic notes.
 */
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'

/** A deterministic pseudo-random generator (mulberry32), so every run writes the same vaults. */
export function random(seed) {
  let state = seed >>> 0
  return () => {
    state = (state + 0x6d2b79f5) >>> 0
    let t = state
    t = Math.imul(t ^ (t >>> 15), t | 1)
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61)
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}

const WORDS = (
  'draft review source claim evidence reader outline section argument summary revise check fact quote table figure ' +
  'method result budget risk owner deadline scope milestone release note feedback editor publish schedule audience ' +
  'tone length clarity example citation appendix metric baseline target latency memory throughput vault plan graph'
).split(' ')

/** Prose of about `bytes` characters: sentences of plain words. */
export function prose(rand, bytes) {
  let text = ''
  let sentence = []
  while (text.length < bytes) {
    sentence.push(WORDS[Math.floor(rand() * WORDS.length)])
    if (sentence.length > 8 + rand() * 10) {
      const line = sentence.join(' ')
      text += `${line[0].toUpperCase()}${line.slice(1)}. `
      sentence = []
    }
  }
  return text.trim()
}

async function writeAll(dir, files) {
  const folders = new Set(files.map(([file]) => dirname(join(dir, file))))
  for (const folder of folders) await mkdir(folder, { recursive: true })
  for (let index = 0; index < files.length; index += 64) {
    await Promise.all(files.slice(index, index + 64).map(([file, text]) => writeFile(join(dir, file), text)))
  }
}

/** A step note of about 1 KB: frontmatter, title, body, `## Next`. */
function stepNote({ front, title, body, next }) {
  const yaml = Object.entries(front).map(([key, value]) => `${key}: ${value}`).join('\n')
  return `---\n${yaml}\n---\n# ${title}\n\n${body}\n\n## Next\n${next.join('\n')}\n`.replace(/\n## Next\n\n$/, '\n')
}

/** A path plan of `count` notes `n0000` -> `n0001` -> ...; each note is about 1 KB. */
export async function writePathVault(dir, count) {
  const rand = random(1)
  const width = Math.max(4, String(count - 1).length)
  const id = (index) => `n${String(index).padStart(width, '0')}`
  const files = []
  for (let index = 0; index < count; index++) {
    const front = index === 0 ? { type: 'start', status: 'pending', tags: '[bench]' } : { status: 'pending', tags: '[bench]' }
    const next = index + 1 < count ? [`- [[${id(index + 1)}]]`] : []
    files.push([`${id(index)}.md`, stepNote({ front, title: `Step ${index}`, body: prose(rand, 800), next })])
  }
  await writeAll(dir, files)
  return { start: id(0), ids: files.map(([file]) => file.slice(0, -3)) }
}

/**
 * The draft/review loop: `draft` (start) -> `review`; review's condition
 * `approved` leads to `send` (the exit), its unconditional edge back to
 * `draft`. Budgets are high enough for long runs. `filler` more notes
 * (not reachable from the start) make the vault bigger.
 */
export async function writeLoopVault(dir, { filler = 0 } = {}) {
  const rand = random(2)
  const files = [
    ['draft.md', stepNote({ front: { type: 'start', status: 'pending', max_visits: 100000 }, title: 'Write the draft', body: prose(rand, 850), next: ['- [[review]]'] })],
    [
      'review.md',
      stepNote({
        front: { status: 'pending', role: 'review', max_visits: 100000 },
        title: 'Review the draft',
        body: prose(rand, 800),
        next: ['- approved -> [[send]]', '- [[draft]]'],
      }),
    ],
    ['send.md', stepNote({ front: { status: 'pending' }, title: 'Send it', body: prose(rand, 900), next: [] })],
  ]
  await writeAll(dir, files)
  if (filler > 0) await writeBigVault(dir, filler, { start: false })
}

/**
 * A large vault of realistic notes: `count` notes in areas (folders) of 100
 * (`area-07/n00712.md`), bodies of 1-2 KB with lists, prose wikilinks and
 * now and then a code block. Each area is a sub-plan: a chain whose notes
 * have two or three edges (forward, skip ahead, and every fifth a loop back
 * whose forward edge is its exit), ending in a terminal; the first note of
 * an area also leads to the next area. With `start`, the first note is the
 * start node of a valid plan.
 */
export async function writeBigVault(dir, count, { start = true } = {}) {
  const rand = random(3)
  const id = (index) => `n${String(index).padStart(5, '0')}`
  const folder = (index) => `area-${String(Math.floor(index / 100)).padStart(2, '0')}`
  const files = []
  for (let index = 0; index < count; index++) {
    const front = { status: 'pending', tags: `[bench, ${folder(index)}]`, created: '2026-01-01', aliases: `["Step ${index}"]` }
    if (index === 0 && start) front.type = 'start'
    if (index % 4 === 1) front.max_visits = 5
    if (index % 7 === 3) front.role = 'review'
    const areaEnd = Math.min(count, (Math.floor(index / 100) + 1) * 100)
    const next = []
    if (index + 1 < areaEnd) next.push(`- [[${id(index + 1)}]]`)
    // A loop back three steps; the forward edge above is its exit.
    if (index % 5 === 4 && index % 100 >= 3 && index + 1 < areaEnd) next.push(`- needs more work -> [[${id(index - 3)}]]`)
    if ((index % 5 !== 4 || index % 3 === 0) && index + 2 < areaEnd) next.push(`- [ ] urgent -> [[${folder(index + 2)}/${id(index + 2)}|skip ahead]]`)
    if (index % 100 === 0 && index + 100 < count) next.push(`- next area -> [[${folder(index + 100)}/${id(index + 100)}]]`)
    const bytes = 1000 + Math.floor(rand() * 1000)
    const paragraphs = [prose(rand, bytes * 0.45), `- ${prose(rand, 60)}\n- ${prose(rand, 60)}\n- see [[${id(Math.floor(rand() * count))}]] for context`, prose(rand, bytes * 0.35)]
    if (index % 10 === 0) paragraphs.push('```js\n// ## Next is not a heading inside code\nconst x = 1\n```')
    paragraphs.splice(2, 0, '### Notes')
    files.push([`${folder(index)}/${id(index)}.md`, stepNote({ front, title: `Step ${index}: ${prose(rand, 20)}`, body: paragraphs.join('\n\n'), next })])
  }
  await writeAll(dir, files)
  return { files: files.map(([file]) => file), bytes: files.reduce((sum, [, text]) => sum + Buffer.byteLength(text), 0) }
}

/** The notes of {@link writeWalkVault}: id, title, body. */
const WALK = [
  ['collect', 'Collect the changes', 'List the pull requests merged since the last tag, one line each: number, title, author.'],
  ['group', 'Group them', 'Sort the list into features, fixes and internal changes; drop the internal ones from what users read.'],
  ['breaking', 'Find breaking changes', 'Mark each change that alters a public API, a CLI flag or a file format, and say what a user must do.'],
  ['draft', 'Draft the release notes', 'Write the notes in markdown: a two-sentence summary, then the groups, breaking changes first.'],
  ['examples', 'Add examples', 'Give each breaking change a before/after snippet of at most five lines.'],
  ['approve', 'Approve the notes', 'A maintainer reads the notes and approves them, or asks for changes.'],
  ['version', 'Bump the version', 'Set the next version in package.json by semver from the breaking changes, and update the lock file.'],
  ['changelog', 'Update the changelog', 'Prepend the approved notes to CHANGELOG.md under the new version and today’s date.'],
  ['tests', 'Run the tests', 'Run the whole test suite on the release branch and fix what fails before going on.'],
  ['tag', 'Tag the release', 'Commit, tag the commit with the version, and push the tag.'],
  ['publish', 'Publish the package', 'Publish to the registry and check that the new version installs in an empty project.'],
  ['announce', 'Announce it', 'Post the summary and a link to the notes where the users read news; that is the final answer.'],
]

/**
 * A release plan of 12 notes in a row, each a sentence or two of task, for
 * the agent's walk of bench/mcp-tokens.mjs: `approve` (the sixth) is
 * decided by a person (`judge: human`: `approved` goes on, `changes` back
 * to `draft`).
 *
 * @returns `{ human, edge }`: the note a person decides, and the edge they choose
 */
export async function writeWalkVault(dir) {
  const files = WALK.map(([id, title, body], index) => {
    const front = index === 0 ? { type: 'start' } : {}
    const next = index + 1 < WALK.length ? [`- [[${WALK[index + 1][0]}]]`] : []
    if (id === 'approve') {
      front.judge = 'human'
      next.splice(0, 1, `- [ ] approved -> [[${WALK[index + 1][0]}]]`, '- [ ] changes -> [[draft]]')
    }
    return [`${id}.md`, stepNote({ front, title, body, next }).replace(/^---\n\n---\n/, '')]
  })
  await writeAll(dir, files)
  return { human: 'approve', edge: 'approved' }
}
