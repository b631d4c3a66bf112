// node examples/research-fanout.mjs: runs vaults/research-fanout with the
// vaultplan CLI and the demo's stand-in model (no network needed; set
// LLM_BASE_URL, LLM_MODEL and LLM_API_KEY for a real one). The plan fans out
// into web/ and papers/; the run waits for a person inside papers/. Here the
// script ticks `approved` for you (as you would in Obsidian) and runs again.
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { cli, root, startExample } from './example-run.mjs'

const { runVault, vaultplan, close } = await startExample('fanout')
let code = await vaultplan(['run', 'vaults/research-fanout', '--run-vault', runVault, '--query', 'How do heat pumps perform in cold climates?'])
if (code === 4) {
  const note = join(root, runVault, 'papers/approve.md')
  await writeFile(note, (await readFile(note, 'utf8')).replace('- [ ] approved', '- [x] approved'))
  console.log(`\n(ticked "approved" in ${runVault}/papers/approve.md, as a person would in Obsidian)\n`)
  code = await vaultplan(['run', runVault])
}
await close()
if (code === 0) console.log(`\n\`${cli} status ${runVault}\` shows each branch nested under \`gather\`.`)
process.exit(code)
