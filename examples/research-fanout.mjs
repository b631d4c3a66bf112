// node examples/research-fanout.mjs: runs vaults/research-fanout with the
// vaultplan CLI and the demo's stand-in model (no network needed; set
// LLM_BASE_URL, LLM_MODEL and LLM_API_KEY for a real one). The plan fans out
// into web/ and papers/; the run waits for a person inside papers/. Here the
// script ticks `approved` for you (as you would in Obsidian) and runs again.
import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { startStandInModel } from './stand-in-model.mjs'

const root = fileURLToPath(new URL('..', import.meta.url))
const stamp = new Date().toISOString().replace(/[-:]/g, '').replace('T', '-').slice(0, 15)
const runVault = `runs/fanout-${stamp}`
const env = { ...process.env }
let standIn
if (!env.LLM_BASE_URL) {
  standIn = await startStandInModel()
  env.LLM_BASE_URL = standIn.url
  env.LLM_MODEL = 'stand-in'
  console.log(`No LLM_BASE_URL set: using the scripted stand-in model at ${standIn.url}\n`)
}

/** Runs the CLI; resolves to its exit code. */
function vaultplan(args) {
  console.log(`$ vaultplan ${args.join(' ')}\n`)
  const child = spawn(process.execPath, ['dist/cli.js', ...args], { cwd: root, env, stdio: 'inherit' })
  return new Promise((resolve) => child.on('exit', (code) => resolve(code ?? 1)))
}

let code = await vaultplan(['run', 'vaults/research-fanout', '--run-vault', runVault, '--query', 'How do heat pumps perform in cold climates?'])
if (code === 4) {
  const note = join(root, runVault, 'papers/approve.md')
  await writeFile(note, (await readFile(note, 'utf8')).replace('- [ ] approved', '- [x] approved'))
  console.log(`\n(ticked "approved" in ${runVault}/papers/approve.md, as a person would in Obsidian)\n`)
  code = await vaultplan(['run', runVault])
}
await standIn?.close()
if (code === 0) console.log(`\n\`node dist/cli.js status ${runVault}\` shows each branch nested under \`gather\`.`)
process.exit(code)
