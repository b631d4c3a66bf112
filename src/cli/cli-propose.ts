import { readFile } from 'node:fs/promises'
import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { displayPath, EXIT, onlyPositional, printable, printableJson, UsageError, type Io } from './cli-support.js'
import { formatIssue, inFolder, PlanValidationError, RunStateError, VaultplanError } from '../core/errors.js'
import { durationMs } from '../core/durations.js'
import { knobExpects } from '../core/knobs.js'

export const PROPOSE_HELP = `Usage: vaultplan propose "<query>" --into DIR [options]

Has the planning model (LLM_PLANNING_MODEL ..., or LLM_MODEL, LLM_BASE_URL,
LLM_API_KEY) write a plan for <query> into DIR, a new or empty folder, as a
vault that waits for a person: 00_plan-trace/proposal.md records the query
and has three boxes. Tick one in your notes app, then 'vaultplan run DIR'
(no --query: the proposal's is used):
  approve   the plan runs
  revise    the planner writes the next version from what you wrote under
            '## Feedback' (the previous one is kept under
            00_plan-trace/proposals/v<n>/), and it waits again
  decline   the plan never runs
With --document the plan is one you wrote, and no model is asked: after a
revise, read the feedback in 00_plan-trace/proposal.md and propose the next
version with --document into the same DIR.

Options:
  --into DIR           the folder to write the vault into (new or empty, or
                       one whose proposal was sent back, with --document)
  --document FILE      a plan document you wrote (one '## <note>' section per
                       note) to propose as it is, no model needed; '-' reads
                       it from stdin
  --wait DURATION      how long a person may take (45s, 30m, 4h, 2d) before
                       the proposal shows as overdue; it keeps waiting
  --no-fsync           do not flush writes to the disk
  --json               print {"vault": ..., "proposal": {...}} on stdout
  -h, --help           show this help

Exit codes: 0 written, 1 the model failed or the document is invalid, 2 bad
usage, a file that cannot be read, a folder that is not empty, or no model
configured, 70 internal error.`

/** \`vaultplan propose "<query>" --into DIR\`: writes a plan that waits for a person's approval. */
export async function proposeCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: {
      into: { type: 'string' },
      document: { type: 'string' },
      wait: { type: 'string' },
      'no-fsync': { type: 'boolean' },
      json: { type: 'boolean' },
    },
    allowPositionals: true,
    strict: true,
  })
  const query = onlyPositional(positionals, 'the query')
  if (query.trim() === '') throw new UsageError('the query is empty')
  if (values.into === undefined || values.into === '') throw new UsageError('--into DIR is required: the new or empty folder to write the proposal into')
  if (values.wait !== undefined && durationMs(values.wait) === undefined) throw new UsageError(`--wait takes ${knobExpects('wait')}, got '${values.wait}'`)
  const document = values.document === undefined ? undefined : await readDocument(values.document, io)
  if (document === null) return EXIT.usage
  const [{ createLLM, ModelConfigError, resolveModelConfig }, { proposePlan }, { readProposal }] = await Promise.all([
    import('../models/llm-client.js'),
    import('../run/proposals/propose-plan.js'),
    import('../vault/proposal-note.js'),
  ])
  if (document === undefined) {
    try {
      resolveModelConfig('planning', io.env)
    } catch (error) {
      if (!(error instanceof ModelConfigError)) throw error
      io.stderr.write(
        printable(`vaultplan: ${error.message}\nNothing was written; set the variables and propose again (or write the plan yourself: --document).\n`),
      )
      return EXIT.usage
    }
  }
  const into = resolve(io.cwd, values.into)
  const options = {
    into,
    ...(document === undefined ? { llm: createLLM({ env: io.env }) } : { document }),
    ...(values.wait !== undefined && { wait: values.wait }),
    fsync: !values['no-fsync'],
  }
  let vault: string
  try {
    vault = await proposePlan(query, options)
  } catch (error) {
    if (error instanceof VaultplanError && error.code === 'llm-request-failed') {
      io.stderr.write(printable(`vaultplan: ${error.message}\nNothing was written.\n`))
      return EXIT.invalid
    }
    if (error instanceof PlanValidationError) {
      // Placed in the document (its sections and lines), unless a problem is in a file of the folder.
      const source = values.document === '-' ? 'stdin' : values.document
      const issues = error.issues
        .map((issue) => (issue.file === undefined ? `${source}: ${formatIssue(issue)}\n` : `${formatIssue(inFolder(issue, displayPath(io.cwd, into)))}\n`))
        .join('')
      io.stderr.write(printable(`${issues}vaultplan: the plan document is invalid; fix it and propose again. Nothing was written.\n`))
      return EXIT.invalid
    }
    // A folder whose proposal nobody sent back, another query than the proposal's, a run holding the folder.
    if (error instanceof RunStateError) {
      io.stderr.write(printable(`vaultplan: ${error.message}\n`))
      return EXIT.usage
    }
    throw error
  }
  const proposal = await readProposal(vault)
  const shown = displayPath(io.cwd, vault)
  if (values.json) io.stdout.write(`${printableJson({ vault, proposal })}\n`)
  else {
    io.stdout.write(
      printable(
        `Proposal v${proposal?.version ?? 1} written to ${shown}.\n\nOpen ${join(shown, '00_plan-trace', 'proposal.md')} ` +
          `and tick approve, revise (with what must change under ## Feedback) or decline, then\n  vaultplan ` +
          `run ${shown}\n`,
      ),
    )
  }
  return EXIT.ok
}

/**
 * The text of `--document FILE` (`-`: stdin); `null` when it cannot be read
 * or is empty, said on stderr.
 */
async function readDocument(file: string, io: Io): Promise<string | null> {
  let text: string
  try {
    text = file === '-' ? await readAll(io.stdin ?? process.stdin) : await readFile(resolve(io.cwd, file), 'utf8')
  } catch (error) {
    const code = (error as NodeJS.ErrnoException).code
    const why = code === 'ENOENT' ? 'no such file' : code === 'EISDIR' ? 'it is a folder' : (error as Error).message
    io.stderr.write(printable(`vaultplan: cannot read --document '${file}': ${why}\nNothing was written.\n`))
    return null
  }
  if (text.trim() === '') {
    io.stderr.write(printable(`vaultplan: --document '${file}' is empty; write one '## <note>' section per note.\nNothing was written.\n`))
    return null
  }
  return text
}

async function readAll(stream: AsyncIterable<string | Uint8Array>): Promise<string> {
  const chunks: Buffer[] = []
  for await (const chunk of stream) chunks.push(typeof chunk === 'string' ? Buffer.from(chunk) : Buffer.from(chunk))
  return Buffer.concat(chunks).toString('utf8')
}
