import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { runPlan } from 'vaultplan'
import { noJudge, scriptedWorker } from './helpers/scripted.js'
import { readNotes, writeVault } from './helpers/vault.js'

/**
 * An editor that saves in place (Obsidian, VS Code, `cp`): it truncates the
 * note, writes a first part, pauses, then writes the rest. It runs in its
 * own process, saving a random note of the plan again and again with the
 * bytes it read just before (a person's words, and whatever status the run
 * last wrote), until the file `stop` appears.
 */
const EDITOR = `
const fs = require('node:fs')
const [dir, files] = [process.argv[1], process.argv[2].split(',')]
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
let saves = 0
while (!fs.existsSync(dir + '/stop')) {
  const path = dir + '/' + files[Math.floor(Math.random() * files.length)]
  const text = fs.readFileSync(path)
  const fd = fs.openSync(path, 'w')
  fs.writeSync(fd, text, 0, 40)
  pause(5 + Math.random() * 20)
  fs.writeSync(fd, text, 40)
  fs.closeSync(fd)
  saves++
  pause(20 + Math.random() * 40)
}
process.stdout.write(String(saves))
`

const NOTES = 6
const words = (index: number) => `${'The words a person wrote, and will not lose. '.repeat(30)}\nEND OF NOTE ${index}\n`

function chain(): Record<string, string> {
  const files: Record<string, string> = {}
  for (let index = 0; index < NOTES; index++) {
    const front = index === 0 ? '---\ntype: start\nmax_visits: 20\n---\n' : '---\nmax_visits: 20\n---\n'
    const next = index < NOTES - 1 ? `\n## Next\n- [[n${index + 1}]]\n` : ''
    files[`n${index}.md`] = `${front}# Step ${index}\n\n${words(index)}${next}`
  }
  return files
}

describe('an editor saving in place while the run goes (torn reads)', () => {
  it('nothing is written from, or acted on, a note caught between its truncate and its write', async () => {
    const dir = await writeVault(chain())
    const files = Object.keys(chain())
    const editor = spawn(process.execPath, ['-e', EDITOR, dir, files.join(',')], { stdio: ['ignore', 'pipe', 'inherit'] })
    let saves = ''
    editor.stdout.on('data', (chunk: Buffer) => (saves += chunk.toString()))
    // 'close', not 'exit': the editor's count may come after it exited.
    const ended = new Promise((resolve) => editor.once('close', resolve))
    const results = []
    try {
      for (let run = 0; run < 4; run++) {
        const work = scriptedWorker(() => new Promise((resolve) => setTimeout(resolve, 15)))
        results.push(await runPlan(dir, { query: 'Walk the chain', fresh: true, fsync: false, maxSteps: 500, work, llm: noJudge() }))
      }
    } finally {
      await writeFile(join(dir, 'stop'), '')
      await ended
    }
    expect(Number(saves)).toBeGreaterThan(20)
    // A torn read acted on would end the run at a note without its `## Next` (a terminal by shape).
    expect(results.map((result) => [result.status, result.lastNode])).toEqual(Array.from({ length: 4 }, () => ['completed', `n${NOTES - 1}`]))
    // A torn read written from would leave a note without the person's last words.
    const notes = await readNotes(dir)
    for (let index = 0; index < NOTES; index++) expect(notes[`n${index}.md`]).toContain(words(index))
  }, 60_000)
})
