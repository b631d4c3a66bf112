import { execFile } from 'node:child_process'
import { mkdirSync, mkdtempSync, symlinkSync } from 'node:fs'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { fileURLToPath } from 'node:url'

/** The repository, and the built binary the CLI tests run as a user's shell would (`npm test` builds first). */
export const root = fileURLToPath(new URL('../..', import.meta.url))
export const bin = join(root, 'dist', 'cli.js')

/** The binary as `npm install -g` installs it: a link named `vaultplan` on PATH (the CLI names itself by it in the commands it suggests). */
const installed = join(mkdtempSync(join(tmpdir(), 'vaultplan-bin-')), 'vaultplan')
symlinkSync(bin, installed)
/** The binary as npm links it into a project that depends on it: `node_modules/.bin/vaultplan`, which a person reaches with `npx vaultplan`. */
const inProject = join(mkdtempSync(join(tmpdir(), 'vaultplan-project-')), 'node_modules', '.bin', 'vaultplan')
mkdirSync(dirname(inProject), { recursive: true })
symlinkSync(bin, inProject)

/** What one run of the binary did; `code` is `null` when a signal ended it. */
export interface CliRun {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * Runs `vaultplan <args>` from `cwd` (the repository by default). `env`
 * replaces the environment (PATH kept), so no model variable of the machine
 * leaks in; without it the test's environment is used, colours off.
 */
export function vaultplan(
  args: string[],
  options: { cwd?: string; env?: Record<string, string>; installed?: 'globally' | 'in a project' } = {},
): Promise<CliRun> {
  const env = options.env ? { PATH: process.env.PATH ?? '', ...options.env } : { ...process.env, NO_COLOR: '1' }
  return new Promise((done) => {
    execFile(
      process.execPath,
      [options.installed === 'in a project' ? inProject : installed, ...args],
      { cwd: options.cwd ?? root, env },
      (error, stdout, stderr) => {
        const code = error ? (typeof error.code === 'number' ? error.code : null) : 0
        done({ code, stdout, stderr })
      },
    )
  })
}
