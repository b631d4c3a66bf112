import { mkdir, readdir, writeFile } from 'node:fs/promises'
import { dirname, join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { displayPath, EXIT, shellWord, UsageError, type Io } from './cli-support.js'
import { VaultPathError } from '../core/errors.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import { statOrNothing } from '../vault/stat-or-nothing.js'

export const INIT_HELP = `Usage: vaultplan init [dir] [--code]

Writes a small starter plan into <dir> (default: the current folder), which
must be new or empty (dot-folders such as .git/ or .obsidian/ are allowed):
a draft/review loop, an approval a person gives by ticking a box, and a final
step, with a README note in ${TRACE_FOLDER}/ explaining the format. Open the
folder in Obsidian, edit the notes, then 'vaultplan validate <dir>' and
'vaultplan run <dir> --query "..."'.

Options:
  --code         write the starter for code instead: a change checked by
                 \`npm test\` (\`check: test\`, retried once), and an approval
                 that gives up after two days (\`wait: 2d\`, a \`timeout\` edge)
  -h, --help     show this help

Exit codes: 0 written, 2 bad usage or a folder that is not empty or not a
folder, 70 internal error.`

/** The starter plan, path -> text: what `init` writes; its README note names the CLI as `self` (`npx vaultplan`). */
export function starterPlan(self: string): Record<string, string> {
  return {
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

    ${self} validate <this folder>
    ${self} run <this folder> --query "Announce our release"
    ${self} status <this folder>

\`vaultplan run\` uses the model set in \`LLM_BASE_URL\`, \`LLM_MODEL\` and
\`LLM_API_KEY\`. Each step's \`status:\` shows how far the run is, and
\`${TRACE_FOLDER}/trace.md\` records every hop.
`,
  }
}

/** The starter for code (`init --code`), path -> text: a check that decides `passed` / `failed`, and an approval with a deadline; its README note names the CLI as `self`. */
export function codeStarter(self: string): Record<string, string> {
  return {
    'change.md': `---
type: start
check: test
retries: 1
max_visits: 3
---
# Make the change

Make the change the query asks for, with a test that shows it works. If the
tests failed last time, their output is among the outputs: fix what they say.

## Next
- passed -> [[approve]]
- failed -> [[change]]
`,
    'approve.md': `---
judge: human
wait: 2d
---
# Approve

Sum up the change for a person: what changed, and how it was tested.

## Next
- [ ] merge -> [[merge]]
- [ ] rework -> [[change]]
- [ ] timeout -> [[remind]]
`,
    'merge.md': `# Merge

Write the summary of the approved change as the final result.
`,
    'remind.md': `# Remind

Nobody approved the change within two days: write a short reminder saying
what waits for a decision.
`,
    [`${TRACE_FOLDER}/README.md`]: `---
vaultplan: readme
---
# How this plan works

This folder is a plan that \`vaultplan\` runs. This note is not part of it.

- [[change]] has \`check: test\`: after the agent's work, the command behind
  \`test\` runs, and its exit code decides \`passed\` or \`failed\` (the agent
  cannot talk its way past it). The command is given by whoever runs the plan,
  never by the plan: \`--check test='npm test'\`, or \`"checks"\` in a
  \`vaultplan.config.json\` in the folder you run from. \`retries: 1\` works
  the note once more if the agent fails.
- [[approve]] waits for a person (\`judge: human\`): tick one box under its
  \`## Next\`. \`wait: 2d\` gives up after two days and takes the \`timeout\`
  edge to [[remind]].

Run it from a terminal in the folder of the code:

    ${self} run <this folder> --check test='npm test' --query "Add a --verbose flag" --wait
`,
  }
}

/** `vaultplan init [dir] [--code]`: writes a starter plan into a new or empty folder. */
export async function initCommand(args: string[], io: Io): Promise<number> {
  const { positionals, values } = parseArgs({ args, options: { code: { type: 'boolean' } }, allowPositionals: true, strict: true })
  if (positionals.length > 1) throw new UsageError(`expected at most one argument (the folder), got ${positionals.length}`)
  const dir = positionals[0] ?? '.'
  const folder = resolve(io.cwd, dir)
  await assertEmptyFolder(folder, dir)
  const shown = displayPath(io.cwd, folder)
  // The command that works where init ran (`npx vaultplan` in a project, `node dist/cli.js` in a clone), never a bare name that may not be on PATH.
  const self = io.self ?? 'vaultplan'
  for (const [path, text] of Object.entries(values.code ? codeStarter(self) : starterPlan(self))) {
    await mkdir(dirname(join(folder, path)), { recursive: true })
    // `wx`: a file that appeared meanwhile is never overwritten.
    await writeFile(join(folder, path), text, { flag: 'wx' })
    io.stdout.write(`wrote ${join(shown, path)}\n`)
  }
  const check = values.code ? ` --check test='npm test'` : ''
  const typed = shellWord(shown)
  io.stdout.write(`\nNext: open ${shown} in Obsidian, or run\n  ${self} validate ${typed}${check}\n  ${self} run ${typed}${check} --query "..."\n`)
  return EXIT.ok
}

/** A `VaultPathError` unless `folder` is missing (it is made) or holds nothing but dot-entries. */
async function assertEmptyFolder(folder: string, dir: string): Promise<void> {
  const info = await statOrNothing(folder).catch((error: unknown) => {
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
