import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { pathToFileURL } from 'node:url'
import { expect, test } from 'vitest'
import { root } from './helpers/cli.js'

/** Imports a built entry point in a fresh process and lists the pg-boss and pg files it loaded. */
function queueFilesLoadedBy(entry: string, then = ''): Promise<string[]> {
  const script = `
    import { createRequire } from 'node:module'
    const lib = await import(${JSON.stringify(pathToFileURL(join(root, 'dist', entry)).href)})
    ${then}
    const loaded = Object.keys(createRequire(import.meta.url).cache).filter((file) => /node_modules[\\\\/](pg-boss|pg)[\\\\/]/.test(file))
    console.log(JSON.stringify(loaded))`
  return new Promise((done, fail) =>
    execFile(process.execPath, ['--input-type=module', '-e', script], { cwd: root }, (error, stdout, stderr) => (error ? fail(new Error(stderr || error.message)) : done(JSON.parse(stdout) as string[]))),
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
