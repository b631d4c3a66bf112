import { mkdir, readdir, stat, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { displayPath, EXIT, isSystemError, UsageError, type Io } from './cli-support.js'
import { VaultPathError } from '../core/errors.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'

export const INIT_HELP = `Usage: vaultplan init [dir]

Writes a small starter plan into <dir> (default: the current folder), which
must be new or empty (dot-folders such as .git/ or .obsidian/ are allowed):
a draft/review loop, an approval a person gives by ticking a box, and a final
step, with a README note in ${TRACE_FOLDER}/ explaining the format. Open the
folder in Obsidian, edit the notes, then 'vaultplan validate <dir>' and
'vaultplan run <dir> --query "..."'.

Options:
  -h, --help     show this help

Exit codes: 0 written, 2 bad usage or a folder that is not empty or not a
folder, 70 internal error.`

/** The starter plan, path -> text: what `init` writes. */
export const STARTER_PLAN: Readonly<Record<string, string>> = {
  'draft.md': `---
type: start
---
# Draft

Write a first draft of what the query asks for. If the review or a person
asked for changes, make them and say what you changed.

## Next
- [[review]]
`,
  'review.md': `---
role: review
max_visits: 3
---
# Review

Read the latest draft critically against the query. Is it ready for a
person to approve, or what must change?

## Next
- approved -> [[approve]]
- needs revision -> [[draft]]
`,
  'approve.md': `---
judge: human
max_visits: 2
---
# Approve

Put the reviewed draft in its final form for a person to read.

## Next
- [ ] publish -> [[publish]]
- [ ] rework -> [[draft]]
`,
  'publish.md': `# Publish

Write the approved draft out as the final result.
`,
  [`${TRACE_FOLDER}/README.md`]: `---
vaultplan: readme
---
# How this plan works

This folder is a plan that \`vaultplan\` runs. This note is not part of it:
nothing under \`${TRACE_FOLDER}/\` is a step (runs write their trace and
outputs here).

- **One note is one step.** Its text is the instruction the agent gets:
  [[draft]], [[review]], [[approve]], [[publish]].
- **\`## Next\` lists where to go.** \`- approved -> [[approve]]\` is an edge
  taken when its condition holds (a model answers YES or NO);
  \`- [[review]]\` is taken always. A note without \`## Next\` ends the run.
- **Frontmatter holds the knobs.** \`type: start\` marks the first step,
  \`max_visits\` (default 3) bounds how often a step may run, \`role\`
  picks the model for it, \`judge: human\` lets a person decide.
- **People decide by ticking a box.** When the run reaches [[approve]] it
  stops and waits: tick one box under its \`## Next\` (\`- [x] publish ->
  [[publish]]\`), write under a \`## Feedback\` heading if you like, and run
  the vault again.

Run it from a terminal in the folder above:

    vaultplan validate <this folder>
    vaultplan run <this folder> --query "Announce our release"
    vaultplan status <this folder>

\`vaultplan run\` uses the model set in \`LLM_BASE_URL\`, \`LLM_MODEL\` and
\`LLM_API_KEY\`. Each step's \`status:\` shows how far the run is, and
\`${TRACE_FOLDER}/trace.md\` records every hop.
`,
}

/** `vaultplan init [dir]`: writes the starter plan into a new or empty folder. */
export async function initCommand(args: string[], io: Io): Promise<number> {
  const { positionals } = parseArgs({ args, options: {}, allowPositionals: true, strict: true })
  if (positionals.length > 1) throw new UsageError(`expected at most one argument (the folder), got ${positionals.length}`)
  const dir = positionals[0] ?? '.'
  const folder = resolve(io.cwd, dir)
  await assertEmptyFolder(folder, dir)
  const shown = displayPath(io.cwd, folder)
  for (const [path, text] of Object.entries(STARTER_PLAN)) {
    await mkdir(dirname(join(folder, path)), { recursive: true })
    // `wx`: a file that appeared meanwhile is never overwritten.
    await writeFile(join(folder, path), text, { flag: 'wx' })
    io.stdout.write(`wrote ${join(shown, path)}\n`)
  }
  io.stdout.write(`\nNext: open ${shown} in Obsidian, or run\n  vaultplan validate ${shown}\n  vaultplan run ${shown} --query "..."\n`)
  return EXIT.ok
}

/** A `VaultPathError` unless `folder` is missing (it is made) or holds nothing but dot-entries. */
async function assertEmptyFolder(folder: string, dir: string): Promise<void> {
  const info = await stat(folder).catch((error: unknown) => {
    if (isSystemError(error) && error.code === 'ENOENT') return undefined
    throw new VaultPathError('vault-unreadable', `cannot read \`${dir}\`: ${(error as Error).message}`, { cause: error })
  })
  if (info === undefined) return
  if (!info.isDirectory()) throw new VaultPathError('vault-not-folder', `\`${dir}\` is not a folder; pass a new or empty folder for the starter plan`)
  const entries = (await readdir(folder)).filter((name) => !name.startsWith('.'))
  if (entries.length > 0) {
    const listed = entries
      .slice(0, 3)
      .map((name) => `'${name}'`)
      .join(', ')
    throw new VaultPathError(
      'vault-not-empty',
      `\`${dir}\` is not empty (${listed}${entries.length > 3 ? ', ...' : ''}); init writes only into a new or empty folder, so nothing of yours is overwritten`,
    )
  }
}
