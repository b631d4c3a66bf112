#!/usr/bin/env node
/**
 * Runs the npm scripts named on the command line at the same time, prints
 * each one's output in one piece as it ends, and exits 1 if any failed.
 * `npm test` runs `typecheck`, `lint` and `build` this way: they read the
 * sources and share no output, so a second core need not wait.
 *
 *   node scripts/run-all.mjs typecheck lint build
 */
import { spawn } from 'node:child_process'

const names = process.argv.slice(2)
if (names.length === 0) {
  console.error('Expected the names of npm scripts, e.g. `node scripts/run-all.mjs typecheck lint build`')
  process.exit(2)
}
// npm sets npm_execpath for the scripts it runs; outside npm, the `npm` on the PATH.
const [command, prefix] = process.env.npm_execpath ? [process.execPath, [process.env.npm_execpath]] : ['npm', []]

const runs = names.map(
  (name) =>
    new Promise((done) => {
      const child = spawn(command, [...prefix, 'run', '--silent', name], { shell: !process.env.npm_execpath && process.platform === 'win32' })
      const chunks = []
      child.stdout.on('data', (chunk) => chunks.push(chunk))
      child.stderr.on('data', (chunk) => chunks.push(chunk))
      child.on('error', (error) => chunks.push(Buffer.from(`${error.message}\n`)))
      child.on('close', (code) => {
        const ok = code === 0
        process.stdout.write(`> npm run ${name}: ${ok ? 'ok' : `failed (exit ${code})`}\n${Buffer.concat(chunks).toString()}`)
        done(ok)
      })
    }),
)

if (!(await Promise.all(runs)).every(Boolean)) process.exit(1)
