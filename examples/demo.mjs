// npm run demo: runs vaults/draft-review end to end with the vaultplan CLI.
// Without LLM_BASE_URL it starts the scripted stand-in model on 127.0.0.1
// (no network needed); with LLM_BASE_URL (and LLM_MODEL, LLM_API_KEY) the
// same run goes to your real endpoint.
import { cli, startExample } from './example-run.mjs'

const { runVault, vaultplan, close } = await startExample('demo')
const code = await vaultplan([
  'run',
  'vaults/draft-review',
  '--run-vault',
  runVault,
  '--query',
  'Announce vaultplan 0.1: plans as Obsidian vaults, resumable runs.',
])
await close()
if (code === 0) {
  console.log(`\nThe plan in vaults/draft-review is untouched; the run is in ${runVault}.`)
  console.log(`Run \`${cli} run ${runVault}\` again: it returns the recorded result without calling any model;`)
  console.log(`\`${cli} status ${runVault}\` tells where it stands.`)
  console.log(`\`${cli} board --root runs --open\` shows it on the board, in your browser (Ctrl-C stops the board).`)
}
process.exit(code)
