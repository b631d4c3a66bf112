import { join, resolve } from 'node:path'
import { parseArgs } from 'node:util'
import { displayPath, EXIT, onlyPositional, printable, printableJson, UsageError, type Io } from './cli-support.js'
import { VaultplanError } from '../core/errors.js'

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

Options:
  --into DIR     the folder to write the vault into (new or empty)
  --no-fsync     do not flush writes to the disk
  --json         print {"vault": ..., "proposal": {...}} on stdout
  -h, --help     show this help

Exit codes: 0 written, 1 the model failed, 2 bad usage, a folder that is not
empty, or no model configured, 70 internal error.`

/** \`vaultplan propose "<query>" --into DIR\`: writes a plan that waits for a person's approval. */
export async function proposeCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { into: { type: 'string' }, 'no-fsync': { type: 'boolean' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  })
  const query = onlyPositional(positionals, 'the query')
  if (query.trim() === '') throw new UsageError('the query is empty')
  if (values.into === undefined || values.into === '') throw new UsageError('--into DIR is required: the new or empty folder to write the proposal into')
  const [{ createLLM, ModelConfigError, resolveModelConfig }, { proposePlan }, { readProposal }] = await Promise.all([
    import('../models/llm-client.js'),
    import('../run/propose-plan.js'),
    import('../vault/proposal-note.js'),
  ])
  try {
    resolveModelConfig('planning', io.env)
  } catch (error) {
    if (!(error instanceof ModelConfigError)) throw error
    io.stderr.write(printable(`vaultplan: ${error.message}\nNothing was written; set the variables and propose again.\n`))
    return EXIT.usage
  }
  let vault: string
  try {
    vault = await proposePlan(query, { into: resolve(io.cwd, values.into), llm: createLLM({ env: io.env }), fsync: !values['no-fsync'] })
  } catch (error) {
    if (error instanceof VaultplanError && error.code === 'llm-request-failed') {
      io.stderr.write(printable(`vaultplan: ${error.message}\nNothing was written.\n`))
      return EXIT.invalid
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
