// The plan vault the crash harness runs: a draft/review loop, a branch, a
// rework self-loop and a terminal in a subfolder, written the way people
// write notes (comments in frontmatter, tags, CRLF, quoted and missing
// statuses, prose links), plus files that are not notes. The start note
// retries its worker (whose first try fails in each process: a backoff),
// and the draft is checked by a command (check.mjs) whose pass takes its
// `passed` edge, on each of its three visits.
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

export const QUERY = 'Write a short post about crash-safe note taking'

const crlf = (text) => text.replace(/\n/g, '\r\n')

/** Vault-relative path -> contents (string or bytes). */
export const FILES = {
  'research.md': `---
# The user's comment: research always comes first.
type: start
status: pending   # vaultplan moves this value
retries: 1 # the scripted worker fails its first try in each process
tags: [blog, "research/sources"]
aliases:
  - Sources
created: 2024-03-01
---
# Research the topic

Find three sources. Keep [[draft]] in mind: this link is prose, not an edge.

> A quote the user cares about: café, naïve, 日本語, emoji 🧪.

## Next
- [[draft]]
`,
  // CRLF throughout, a quoted status, an inline comment in a list.
  'draft.md': crlf(`---
status: "pending"
max_visits: 3
check: done
tags:
  - writing # inline comment
cssclasses: wide
---
# Write the draft

Write it from the sources.   
Trailing spaces above are the user's.

## Next
- passed -> [[review]]
`),
  // No status key at all: the executor inserts one before the closing fence.
  'review.md': `---
role: review
max_visits: 3
judge: llm
# the reviewer is strict
priority: high
---
# Review the draft

Approved, or what must change?

## Next
- [ ] approved -> [[polish]]
- needs revision → [[draft]]

Notes after the list stay notes.
`,
  'polish.md': `---
status: 'pending'
max_visits: 3
aliases: [Polish step]
---
# Polish

Tighten the prose; work it again if neither form fits yet.

## Next
- long form -> [[blog/post|the post]]
- short form -> [[tweet]]
`,
  // No frontmatter, no final newline: the executor adds a frontmatter block.
  'blog/post.md': `# Publish the post

Publish it. This note has no frontmatter and no final newline.`,
  'tweet.md': `---
status: pending
tags: [social]
---
# Tweet it

Never reached in this plan.
`,
  '.obsidian/app.json': '{\n  "alwaysUpdateLinks": true\n}\n',
  'assets/diagram.png': Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a, 0x00, 0x00, 0x00, 0x0d, 0xff, 0x00, 0x7f]),
}

/** Visit budgets as written in the notes (3 is the default). */
export const MAX_VISITS = { research: 3, draft: 3, review: 3, polish: 3, 'blog/post': 3, tweet: 3 }
export const MAX_STEPS = 12

/** The note whose worker fails its first try in each process (`retries: 1`), and the note a check decides (`check: done`). */
export const RETRIED_NOTE = 'research'
export const CHECKED_NOTE = 'draft'
/** The command behind the check `done`: a node script that logs to the side log and passes. */
export const CHECK_SCRIPT = fileURLToPath(new URL('check.mjs', import.meta.url))

/**
 * The runner's definition of the check the fixture names: the check logs to
 * `sideLog` as child run `attempt`, with the visit the scripted worker last
 * worked (it sets `CRASH_VISIT` in the environment the check inherits).
 */
export function checksFor(sideLog, attempt) {
  // CRASH_VISIT is set in the runner's environment as each visit is worked: a check gets it only passed through by name.
  return { done: { command: [process.execPath, CHECK_SCRIPT], env: { CRASH_SIDE_LOG: sideLog, CRASH_ATTEMPT: String(attempt) }, inheritEnv: ['CRASH_VISIT'] } }
}

/**
 * The nested plan (`--plan nested`): a top plan whose `fanout` note runs two
 * branches at once, `post/` (the vault above, as it is) and `side/`. The
 * kills land inside the branches as well as in the top plan.
 */
export const BRANCH = 'post'
export const NESTED_FILES = {
  'intro.md': `---
type: start
---
# Introduce the post

Say what the post is about.

## Next
- [[fanout]]
`,
  'fanout.md': `---
plan: [post, side]
tags: [fan-out]
---
# Write and gather at once

## Next
- [[outro]]
`,
  'outro.md': `# Close

Sum up both branches.
`,
  'side/gather.md': `---
type: start
---
# Gather links

## Next
- [[sort]]
`,
  'side/sort.md': `# Sort the links
`,
}
/** The nested plan's works: 10 in \`post/\`, 2 in \`side/\`, 2 in the top plan. */
export const NESTED_MAX_STEPS = 16

export async function writeVault(dir, { nested = false } = {}) {
  const files = nested ? { ...NESTED_FILES, ...Object.fromEntries(Object.entries(FILES).map(([file, contents]) => [`${BRANCH}/${file}`, contents])) } : FILES
  for (const [file, contents] of Object.entries(files)) {
    await mkdir(dirname(join(dir, file)), { recursive: true })
    await writeFile(join(dir, file), contents)
  }
}

export const STATUSES = ['pending', 'active', 'done', 'waiting']

/**
 * The original note with only its status value changed, computed without
 * the library: the status word replaced where it stands, inserted before the
 * closing fence when the note had no `status:` key, or a new frontmatter
 * block when the note had none.
 */
export function withStatus(original, status) {
  const eol = original.includes('\r\n') ? '\r\n' : '\n'
  if (!original.startsWith(`---${eol}`)) return `---${eol}status: ${status}${eol}---${eol}${original}`
  const close = original.indexOf(`${eol}---${eol}`, 3) + eol.length
  const front = original.slice(0, close)
  const match = /^(status:[ \t]*)(["']?)([a-z]+)\2/m.exec(front)
  if (match) return original.slice(0, match.index) + match[1] + match[2] + status + match[2] + original.slice(match.index + match[0].length)
  return `${front}status: ${status}${eol}${original.slice(close)}`
}

/** The status value written in a note's text, read without the library. */
export function statusIn(text) {
  const eol = text.includes('\r\n') ? '\r\n' : '\n'
  if (!text.startsWith(`---${eol}`)) return undefined
  const close = text.indexOf(`${eol}---${eol}`, 3)
  const match = /^status:[ \t]*["']?([A-Za-z]+)/m.exec(text.slice(0, close))
  return match?.[1]
}
