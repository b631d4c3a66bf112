// npm run demo: runs vaults/draft-review end to end with the vaultplan CLI.
// Without LLM_BASE_URL it starts the scripted stand-in model on 127.0.0.1
// (no network needed); with LLM_BASE_URL (and LLM_MODEL, LLM_API_KEY) the
// same run goes to your real endpoint.
import { spawn } from 'node:child_process'
import { fileURLToPath } from 'node:url'
import { startStandInModel } from './stand-in-model.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
const runVault = `runs/demo-${stamp}`
const env = { ...process.env }
let standIn
if (!env.LLM_BASE_URL) {
  standIn = await startStandInModel()
  env.LLM_BASE_URL = standIn.url
  env.LLM_MODEL = 'stand-in'
  console.log(`No LLM_BASE_URL set: using the scripted stand-in model at ${standIn.url}`)
  console.log('(it writes placeholder outputs and judges by a fixed rule; set LLM_BASE_URL, LLM_MODEL and LLM_API_KEY for a real model)\n')
}
const args = [
  'dist/cli.js',
  'run',
  'vaults/draft-review',
  '--run-vault',
  runVault,
  '--query',
  'Announce vaultplan 0.1: plans as Obsidian vaults, resumable runs.',
]
console.log(`$ vaultplan ${args.slice(1).join(' ')}\n`)
const child = spawn(process.execPath, args, { cwd: root, env, stdio: 'inherit' })
const code = await new Promise((resolve) => child.on('exit', (exitCode) => resolve(exitCode ?? 1)))
await standIn?.close()
if (code === 0) {
  console.log(`\nThe plan in vaults/draft-review is untouched; the run is in ${runVault}.`)
  console.log(`Run \`node dist/cli.js run ${runVault}\` again: it returns the recorded result without calling any model;`)
  console.log(`\`node dist/cli.js status ${runVault}\` tells where it stands.`)
}
process.exit(code)
