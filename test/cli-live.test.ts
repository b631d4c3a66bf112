import { afterEach, expect, test } from 'vitest'
import { main } from '../src/cli.js'
import { startChatServer } from './support/chat-server.js'
import { reviewedLoop } from './support/plans.js'
import { writeVault } from './helpers/vault.js'

const servers: { close: () => Promise<void> }[] = []
afterEach(async () => {
  for (const server of servers.splice(0)) await server.close()
})

/** A terminal as `vaultplan run` sees one: everything written, in order. */
function terminal(tty: boolean): { isTTY: boolean; text: string; write(chunk: string): boolean } {
  return {
    isTTY: tty,
    text: '',
    write(chunk: string) {
      this.text += chunk
      return true
    },
  }
}

test('on a terminal, a live line shows the note, its visit against its budget and the tokens, redrawn in place; piped output has none', async () => {
  const model = await startChatServer((request) => (request.kind === 'judge' ? '1: YES\n2: NO' : `work for ${request.prompt.length}`))
  servers.push(model)
  const env = { LLM_MODEL: 'm', LLM_BASE_URL: model.url }
  const tty = terminal(true)
  const vault = await writeVault(reviewedLoop)
  expect(await main(['run', vault, '--query', 'q', '--no-fsync'], { stdout: tty, stderr: terminal(false), cwd: vault, env })).toBe(0)
  expect(tty.text).toContain('\r\x1b[2K  … draft (visit 1/3) ')
  expect(tty.text).toMatch(/\r\x1b\[2K {2}… review \(visit 1\/3\) [\d.]+s · [\d,]+ tokens so far/)
  const piped = terminal(false)
  const other = await writeVault(reviewedLoop)
  expect(await main(['run', other, '--query', 'q', '--no-fsync'], { stdout: piped, stderr: terminal(false), cwd: other, env })).toBe(0)
  expect(piped.text).not.toContain('\x1b')
  expect(piped.text).toContain('step   1  draft (visit 1)')
})

test('text a model wrote reaches the terminal without its escape sequences', async () => {
  const model = await startChatServer((request) =>
    request.kind === 'judge' ? '1: YES\n2: NO' : 'done \x1b]52;c;ZXZpbA==\x07 \x1b[2Aforged \x1b]8;;http://x\x07link',
  )
  servers.push(model)
  const out = terminal(false)
  const vault = await writeVault(reviewedLoop)
  await main(['run', vault, '--query', 'q', '--no-fsync'], {
    stdout: out,
    stderr: terminal(false),
    cwd: vault,
    env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url },
  })
  expect(out.text).toContain('done  forged link')
  expect(out.text).not.toContain('\x1b')
})
