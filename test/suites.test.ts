import { execFile } from 'node:child_process'
import { readdir } from 'node:fs/promises'
import { join, relative } from 'node:path'
import { expect, test } from 'vitest'
import { root } from './helpers/cli.js'
import { slowFiles } from '../vitest.config.js'

/** The test files vitest collects for `project`, as vitest itself lists them (the queue's and the browser's included, as with a database and Chromium). */
function listed(project: string): Promise<string[]> {
  // Listing runs nothing: any executable stands in for Chromium.
  const env = { ...process.env, VAULTPLAN_TEST_PG: 'postgres://127.0.0.1:1/listed-only', VAULTPLAN_CHROMIUM: process.execPath }
  return new Promise((done, fail) => {
    execFile(
      process.execPath,
      [join(root, 'node_modules/vitest/vitest.mjs'), 'list', '--filesOnly', '--json', '--project', project],
      { cwd: root, env },
      (error, stdout) => {
        if (error) fail(error)
        else done((JSON.parse(stdout) as { file: string }[]).map(({ file }) => relative(root, file).replaceAll('\\', '/')).sort())
      },
    )
  })
}

test('every test file is in exactly one suite: npm test (fast) or npm run test:slow (slow)', async () => {
  const files = (await readdir(join(root, 'test'), { recursive: true }))
    .map((file) => `test/${file.replaceAll('\\', '/')}`)
    .filter((file) => file.endsWith('.test.ts') && !file.includes('/node_modules/'))
    .sort()
  const [fast, slow] = await Promise.all([listed('fast'), listed('slow')])
  expect(slow).toEqual([...slowFiles].sort())
  expect([...fast, ...slow].sort()).toEqual(files)
  expect(fast.filter((file) => slow.includes(file))).toEqual([])
}, 60_000)
