// What the example scripts share: a run vault under runs/, the model they talk
// to (the scripted stand-in on 127.0.0.1 unless LLM_BASE_URL names a real
// one) and the vaultplan CLI run with it.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { startStandInModel } from './stand-in-model.mjs'

/** The repository's root: the examples run the built CLI from there. */
export const root = fileURLToPath(new URL('..', import.meta.url))

/**
 * The CLI as a person in a clone types it (after `npm ci`, which builds
 * dist/); `vaultplan status` names itself the same way in its suggestions.
 */
export const cli = 'node dist/cli.js'

/** A word as a POSIX shell needs it: as it is when it is safe, else single-quoted. */
export function shellWord(word) {
  return /^[\w@%+=:,./-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`
}

/**
 * Starts an example: a fresh run vault name (`runs/<name>-<time>`), the
 * stand-in model when no LLM_BASE_URL is set (said on the console), and
 * `vaultplan(args)`, which echoes and runs the CLI with that model and resolves to its
 * exit code. Call `close()` when done.
 */
export async function startExample(name) {
  const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
  const env = { ...process.env }
  let standIn
  if (!env.LLM_BASE_URL) {
    standIn = await startStandInModel()
    env.LLM_BASE_URL = standIn.url
    env.LLM_MODEL = 'stand-in'
    console.log(`No LLM_BASE_URL set: using the scripted stand-in model at ${standIn.url}`)
    console.log('(it writes placeholder outputs and judges by a fixed rule; set LLM_BASE_URL, LLM_MODEL and LLM_API_KEY for a real model)\n')
  }
  const vaultplan = (args) => {
    // Echoed as it can be pasted into a shell in the clone: the command that runs, each word quoted as needed.
    console.log(`$ ${cli} ${args.map(shellWord).join(' ')}\n`)
    const child = spawn(process.execPath, ['dist/cli.js', ...args], { cwd: root, env, stdio: 'inherit' })
    return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)))
  }
  return { runVault: `runs/${name}-${stamp}`, vaultplan, close: async () => standIn?.close() }
}
