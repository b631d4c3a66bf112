import { parseArgs } from 'node:util'
import { EXIT, UsageError, vaultFolder, displayPath, printable, printableJson, type Io } from './cli-support.js'
import type { SearchHit } from '../memory/search-runs.js'

export const SEARCH_HELP = `Usage: vaultplan search "<query>" [--root DIR] [--limit N] [--json]

Searches what the runs of every vault under DIR produced: outputs, final
answers, ledger entries and the judges' rationales, archived runs included,
best first. The query is words: quotes, dashes and operators are matched as
text. The index is a cache in DIR/.vaultplan/, built at the first search and
brought up to date at each one; deleting it is safe.

Options:
  --root DIR     the folder to search under (default: the working directory)
  --limit N      hits to show at most (default 10)
  --json         print the hits as a JSON array on stdout and nothing else
  -h, --help     show this help

Exit codes: 0 something was found, 1 nothing was, 2 bad usage or a root
that is not a folder, 70 internal error.`

/** `vaultplan search`: the best hits over past runs, as a list or as JSON. */
export async function searchCommand(args: string[], io: Io): Promise<number> {
  const { values, positionals } = parseArgs({
    args,
    options: { root: { type: 'string' }, limit: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  })
  const query = positionals.join(' ')
  if (query.trim() === '') throw new UsageError('missing the query')
  const limit = values.limit === undefined ? 10 : Number(values.limit)
  if (!Number.isInteger(limit) || limit < 1) throw new UsageError(`--limit takes an integer from 1 up, got '${values.limit}'`)
  const root = await vaultFolder(values.root ?? '.', io)
  const { queryTooLong, searchRuns } = await import('../memory/search-runs.js')
  const tooLong = queryTooLong(query)
  if (tooLong !== undefined) throw new UsageError(tooLong)
  const hits = await searchRuns(root, query, { limit })
  if (values.json) {
    io.stdout.write(`${printableJson(hits, 2)}\n`)
    return hits.length > 0 ? EXIT.ok : EXIT.invalid
  }
  if (hits.length === 0) {
    io.stdout.write(`Nothing found under ${displayPath(io.cwd, root)} for ${printableJson(query)}.\n`)
    return EXIT.invalid
  }
  io.stdout.write(hits.map(render).join('\n'))
  return EXIT.ok
}

function render(hit: SearchHit): string {
  const where = [hit.step === undefined ? undefined : `step ${hit.step}`, hit.node].filter((part) => part !== undefined).join(' ')
  return printable(`${hit.file}  [${hit.kind}${where === '' ? '' : `, ${where}`}, run ${hit.runId || '?'}]\n  ${hit.snippet}\n`)
}
