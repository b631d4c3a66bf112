/**
 * The benches bench/run.mjs runs in processes of their own: one whose JSON
 * it folds into its results, and ones that print and write their own.
 */
import { execFile, spawn } from 'node:child_process'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { promisify } from 'node:util'

const bench = join(dirname(fileURLToPath(import.meta.url)), '..')

/** Runs `node bench/<script> ...args` and resolves to what it printed on stdout, parsed as JSON. */
export async function scriptJson(script, args) {
  const { stdout } = await promisify(execFile)(process.execPath, [join(bench, script), ...args], { maxBuffer: 1 << 20 })
  return JSON.parse(stdout)
}

/**
 * Runs `node bench/<script> ...args` with this process's output, and
 * resolves to its exit code: a bench that fails is reported, and the
 * others still run.
 */
export function runScript(script, args) {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(bench, script), ...args], { stdio: 'inherit' })
    child.once('error', (error) => {
      process.stderr.write(`bench/${script} did not start: ${error.message}\n`)
      resolve(1)
    })
    child.once('exit', (code, signal) => {
      if (code !== 0) process.stderr.write(`bench/${script} failed (${signal ?? `exit code ${code}`})\n`)
      resolve(code ?? 1)
    })
  })
}
