/**
 * The generated parts of the docs: text between two markers that `npm run
 * docs` rewrites and test/docs.test.ts compares, so a page cannot drift from
 * what it is generated from.
 */
import { readFile, writeFile } from 'node:fs/promises'
import { relative, resolve } from 'node:path'
import { fileURLToPath } from 'node:url'

const begin = (id: string) => `<!-- begin generated: ${id} (npm run docs writes this part; do not edit it) -->`
const end = (id: string) => `<!-- end generated: ${id} -->`

/** The page with the part `id` replaced by `body`; throws when the page lacks the part's markers. */
export function replaceGenerated(page: string, id: string, body: string): string {
  const from = page.indexOf(begin(id))
  const to = page.indexOf(end(id))
  if (from === -1 || to < from) throw new Error(`Expected the markers \`${begin(id)}\` and \`${end(id)}\` in the page, in that order`)
  return `${page.slice(0, from)}${begin(id)}\n\n${body.trim()}\n\n${page.slice(to)}`
}

/** Whether the module at `url` is the script node was started with (`tsx scripts/x.ts`), not one a test imports. */
export function isMain(url: string): boolean {
  const script = process.argv[1]
  return script !== undefined && resolve(script) === fileURLToPath(url)
}

/**
 * What a docs script does when run: rewrites the page at `path` with
 * `rendered` when they differ, or with `--check` says so and exits 1,
 * naming what the page is generated from (`from`).
 */
export async function writeOrCheck(path: string, rendered: string, from: string): Promise<void> {
  const page = await readFile(path, 'utf8')
  if (page === rendered) return
  const name = relative(resolve(fileURLToPath(new URL('..', import.meta.url))), path)
  if (process.argv.includes('--check')) {
    process.stderr.write(`${name} differs from ${from}: run \`npm run build && npm run docs\`\n`)
    process.exitCode = 1
  } else {
    await writeFile(path, rendered)
    process.stdout.write(`wrote ${name}\n`)
  }
}
