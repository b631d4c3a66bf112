import { expect, test } from 'vitest'
import { recordEntry, runPlan } from 'vaultplan'
import { main } from '../src/cli.js'
import { hopLine } from '../src/cli/cli-worker.js'
import { tempDir, writeVault } from './helpers/vault.js'

// Every CLI line of model or note text goes through one printer (`printable`, or `printableJson` for
// --json): an OSC 52 clipboard write, a CSI cursor move or line erase, an 8-bit CSI, a carriage
// return or a bidirectional override that a model or a note wrote never reaches the terminal.

/** What a hostile model or note writes: clipboard write, cursor up, 8-bit CSI erase, CR, right-to-left override. */
const HOSTILE = '\x1b]52;c;ZXZpbA==\x07\x1b[2A\x9b2K\r\u202e'
/** A terminal acts on these; output for a pipe has none but line feeds and tabs. */
const ACTED_ON = /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/

function pipe(): { text: string; write(chunk: string): boolean } {
  return {
    text: '',
    write(chunk: string) {
      this.text += chunk
      return true
    },
  }
}

async function cli(args: string[], cwd: string): Promise<string> {
  const out = pipe()
  const err = pipe()
  await main(args, { stdout: out, stderr: err, cwd, env: { NO_COLOR: '1' } })
  return out.text + err.text
}

test('model and note text with terminal escapes reaches no command output, as text or as JSON', async () => {
  const root = await tempDir()
  const vault = await writeVault(
    {
      'draft.md': `---\ntype: start\n---\n# Draft ${HOSTILE}\n\nWrite it.\n\n## Next\n- [[send]]\n`,
      'send.md': `# Send ${HOSTILE}\n\nSend it.\n`,
    },
    `${root}/plan`,
  )
  const result = await runPlan(vault, { query: `Announce ${HOSTILE}`, work: async (step) => `did ${step.node.id} ${HOSTILE}`, fsync: false })
  expect(result.status).toBe('completed')
  await recordEntry(vault, { kind: 'assumption', text: `assumed ${HOSTILE}`, reason: `because ${HOSTILE}`, node: 'draft' }, { fsync: false })

  const outputs = {
    validate: await cli(['validate', vault], root),
    status: await cli(['status', vault], root),
    'status --json': await cli(['status', vault, '--json'], root),
    graph: await cli(['graph', vault], root),
    'graph dot': await cli(['graph', vault, '--format', 'dot'], root),
    'graph canvas': await cli(['graph', vault, '--format', 'canvas'], root),
    ledger: await cli(['ledger', vault], root),
    'ledger --json': await cli(['ledger', vault, '--json'], root),
    search: await cli(['search', 'did', '--root', root], root),
    'search --json': await cli(['search', 'did', '--root', root, '--json'], root),
    'search, a hostile query': await cli(['search', `nothing ${HOSTILE}`, '--root', root], root),
  }
  // Each command did print the hostile text's words: the test would pass vacuously otherwise.
  expect(outputs.ledger).toContain('assumed')
  expect(outputs.search).toContain('did draft')
  expect(outputs['status --json']).toContain('Announce')
  for (const [command, text] of Object.entries(outputs)) expect({ command, acted: ACTED_ON.exec(text)?.[0] }).toEqual({ command, acted: undefined })
})

test('a queue worker prints a hop whose vault, note and error a model or note named without their escapes', () => {
  const line = hopLine({
    vault: `/runs/a${HOSTILE}`,
    jobId: 'j',
    worked: { node: `n${HOSTILE}`, visit: 1, step: 1, key: 'k' },
    outcome: 'failed',
    error: `boom${HOSTILE}`,
    ms: 5,
  })
  expect(line).toContain('boom')
  expect(ACTED_ON.exec(line)?.[0]).toBeUndefined()
})
