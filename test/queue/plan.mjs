// The plan the queue's load test and benchmark run: ten hops with a
// draft/review loop and a person's decision, written the way people write
// notes (comments, tags, CRLF, unicode), and the worker and predicates that
// walk it the same way every time.
import { mkdir, writeFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'

export const QUERY = 'Write a short post about queues of plans'

const crlf = (text) => text.replace(/\n/g, '\r\n')

/** Vault-relative path -> contents. */
export const FILES = {
  'research.md': `---
type: start
# the user's comment: research first
tags: [blog, queue]
created: 2026-12-01
---
# Research

Find three sources: café, naïve, 日本語, 🧪.

## Next
- [[outline]]
`,
  'outline.md': `# Outline

Three parts, one idea each.

## Next
- [[draft]]
`,
  'draft.md': crlf(`---
max_visits: 3
cssclasses: wide
---
# Draft

Write it from the outline.   
Trailing spaces above are the user's.

## Next
- next -> [[review]]
`),
  'review.md': `---
max_visits: 3
priority: high
---
# Review

Approved, or what must change?

## Next
- approved -> [[approve]]
- needs revision -> [[draft]]

Notes after the list stay notes.
`,
  'approve.md': `---
judge: human
---
# Approve

A person reads the reviewed draft.

## Next
- [ ] approved -> [[polish]]
- [ ] start over -> [[draft]]
`,
  'polish.md': `# Polish

Tighten the prose.

## Next
- [[notify]]
`,
  'notify.md': `# Notify

Tell the editor.

## Next
- [[publish]]
`,
  'publish.md': `# Publish

Put it online.`,
}

/** The hops of the plan, as `node#visit`: what every run must take. */
export const EXPECTED_PATH = ['research#1', 'outline#1', 'draft#1', 'review#1', 'draft#2', 'review#2', 'approve#1', 'polish#1', 'notify#1', 'publish#1']

/** The person's decision, made with `decide` when the run waits at `approve`. */
export const DECISION = { node: 'approve', edge: 'approved' }

/** The review sends the first draft back and approves the second. */
export const predicates = {
  approved: (context) => context.visit >= 2,
  'needs revision': (context) => context.visit < 2,
}

/** Writes the plan into `dir`. */
export async function writePlan(dir) {
  for (const [file, text] of Object.entries(FILES)) {
    await mkdir(dirname(join(dir, file)), { recursive: true })
    await writeFile(join(dir, file), text)
  }
}

/** The output of a visit: the same for every attempt, so a retried visit leaves the same bytes. */
export function outputOf(step) {
  return `${step.node.id} (visit ${step.visit}): ${step.outputs.length} outputs before; ${'·'.repeat(step.visit * 8)}`
}
