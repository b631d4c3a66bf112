import { execFile } from 'node:child_process'
import { mkdtemp, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { promisify } from 'node:util'
import { expect, test } from 'vitest'
import { root } from './helpers/cli.js'

const run = promisify(execFile)

/** Imports a built entry point in a fresh process and lists the pg-boss and pg files it loaded. */
function queueFilesLoadedBy(entry: string, then = ''): Promise<string[]> {
  const script = `
    import { createRequire } from 'node:module'
    const lib = await import(${JSON.stringify(pathToFileURL(join(root, 'dist', entry)).href)})
    ${then}
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((file) => /node_modules[\\\\/](pg-boss|pg)[\\\\/]/.test(file))
    console.log(JSON.stringify(loaded))`
  return new Promise((done, fail) =>
    execFile(process.execPath, ['--input-type=module', '-e', script], { cwd: root }, (error, stdout, stderr) =>
      error ? fail(new Error(stderr || error.message)) : done(JSON.parse(stdout) as string[]),
    ),
  )
}

test("import 'vaultplan' loads nothing of pg-boss", async () => {
  expect(await queueFilesLoadedBy('index.js')).toEqual([])
})

test("import 'vaultplan/queue' loads pg-boss only when a queue is opened", async () => {
  expect(await queueFilesLoadedBy('queue/index.js')).toEqual([])
  // A connection that fails at once (nothing listens on port 9) still had to load pg-boss and its pg.
  const opened = await queueFilesLoadedBy('queue/index.js', `await lib.readQueueStatus('postgres://127.0.0.1:9/none').catch(() => undefined)`)
  expect(opened.some((file) => /pg-boss[\\/]src[\\/]index\.js$/.test(file))).toBe(true)
  expect(opened.some((file) => /[\\/]pg[\\/]lib[\\/]index\.js$/.test(file))).toBe(true)
})

/** The packages of the parsers a load can do without: YAML, markdown, schemas. */
const PARSERS = /node_modules[\\/](yaml|zod|remark-parse|unified|micromark)[\\/]/

/** Runs `vaultplan validate` on `notes` in a fresh process and lists the parser packages it loaded. */
async function parsersLoadedByValidate(notes: Record<string, string>): Promise<string[]> {
  const vault = await mkdtemp(join(tmpdir(), 'vaultplan-light-'))
  try {
    for (const [file, text] of Object.entries(notes)) await writeFile(join(vault, file), text)
    // NODE_DEBUG prints every module loaded: `module` the CommonJS ones, `esm` the ES ones.
    const { stderr } = await run(process.execPath, [join(root, 'dist', 'cli.js'), 'validate', vault], {
      env: { ...process.env, NODE_DEBUG: 'module,esm' },
      maxBuffer: 64 * 1024 * 1024,
    })
    return [...new Set(stderr.split('\n').flatMap((line) => PARSERS.exec(line)?.[1] ?? []))].sort()
  } finally {
    await rm(vault, { recursive: true, force: true })
  }
}

const plainPlan = {
  'draft.md': '---\ntype: start\nstatus: pending\n---\n# Draft\n\nWrite it.\n\n## Next\n- [[review]]\n',
  'review.md': '---\nstatus: pending\nmax_visits: 3\n---\n# Review\n\nCheck it.\n\n## Next\n- approved -> [[send]]\n- [ ] [[draft]]\n',
  'send.md': '---\nstatus: pending\ntools: [mail]\n---\n# Send\n\nSend it.\n',
}

test('`vaultplan validate` on plain notes loads no YAML, markdown or schema parser', async () => {
  expect(await parsersLoadedByValidate(plainPlan)).toEqual([])
})

test('`vaultplan validate` loads the YAML and markdown parsers for the notes that need them', async () => {
  const marked = { ...plainPlan, 'review.md': '---\nstatus: pending\nnotes:\n  - {a: 1}\n---\n# Review\n\n## Next\n- **approved** -> [[send]]\n- [[draft]]\n' }
  expect(await parsersLoadedByValidate(marked)).toEqual(['micromark', 'remark-parse', 'unified', 'yaml'])
})
