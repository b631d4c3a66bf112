import { spawn } from 'node:child_process'
import { writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { decide, proposePlan, runPlan, RunStateError, updateStatus } from 'vaultplan'
import { noJudge, scriptedJudge, scriptedWorker } from './helpers/scripted.js'
import { readFile } from 'node:fs/promises'
import { setTimeout as sleep } from 'node:timers/promises'
import { until } from './helpers/until.js'
import { readNotes, statusOf, tempDir, writeVault } from './helpers/vault.js'
import { SETTLE_CUT_MS, SETTLE_MS, settleWindow } from '../src/vault/settled-read.js'

/** The delays of the editors and of the calls racing them come from this seed (`TORN_SEED=<n>` runs another one); a failure names it. */
const SEED = Number(process.env.TORN_SEED ?? 20261202)

/** mulberry32: a small seeded generator, as source text so the editors' own processes use it too. */
const PRNG = `function seeded(seed) {
  let a = seed >>> 0
  return () => {
    a = (a + 0x6d2b79f5) >>> 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}`
const seeded = new Function(`${PRNG}; return seeded`)() as (seed: number) => () => number

/**
 * An editor that saves in place (Obsidian, VS Code, `cp`): it truncates the
 * note, writes a first part, pauses, then writes the rest. It runs in its
 * own process, saving a random note of the plan again and again with the
 * bytes it read just before (a person's words, and whatever status the run
 * last wrote), until the file `stop` appears. It prints its saves and the
 * longest a note stayed empty or cut (ms): a reader doubts such a note for
 * a second, so a machine loaded enough to stall the editor longer than that
 * is past what the library covers (docs/reliability.md), and a failure says so.
 */
const EDITOR = `
const fs = require('node:fs')
const [dir, files, seed] = [process.argv[1], process.argv[2].split(','), Number(process.argv[3])]
${PRNG}
const random = seeded(seed)
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
let saves = 0
let stall = 0
while (!fs.existsSync(dir + '/stop')) {
  const path = dir + '/' + files[Math.floor(random() * files.length)]
  const text = fs.readFileSync(path)
  const truncated = Date.now()
  const fd = fs.openSync(path, 'w')
  fs.writeSync(fd, text, 0, 40)
  const cut = Date.now()
  pause(5 + random() * 20)
  fs.writeSync(fd, text, 40)
  stall = Math.max(stall, cut - truncated, Date.now() - cut)
  fs.closeSync(fd)
  saves++
  pause(20 + random() * 40)
}
process.stdout.write(saves + ' ' + stall)
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
  it('a note left out because it keeps changing is `note-busy`, not a plan error (its links would dangle), and the run goes once it is saved', async () => {
    const dir = await writeVault({ 'draft.md': '---\ntype: start\n---\n# Draft\n\n## Next\n- [[send]]\n', 'send.md': '# Send\n' })
    let saves = 0
    let saved = Promise.resolve()
    // A person's editor saving `send.md` every 30 ms until the run gives up on it (after 3 s). Without a last line break,
    // every read of it is doubted for a second, so it keeps changing for the run even when a loaded machine delays a save.
    const saving = setInterval(() => (saved = writeFile(join(dir, 'send.md'), `# Send\n\nsaved ${++saves} times`)), 30)
    const refused = await runPlan(dir, { query: 'q', fsync: false, work: scriptedWorker(), llm: noJudge() }).catch((error: unknown) => error)
    clearInterval(saving)
    expect(refused).toBeInstanceOf(RunStateError)
    expect(refused).toMatchObject({ code: 'note-busy', message: expect.stringContaining('`send.md` kept changing') })
    // Saved: the editor's last save is written.
    await saved
    expect(await runPlan(dir, { query: 'q', fsync: false, work: scriptedWorker(), llm: noJudge() })).toMatchObject({ status: 'completed', lastNode: 'send' })
    expect((await readNotes(dir))['send.md']).toContain(`saved ${saves} times`)
  })

  it('nothing is written from, or acted on, a note caught between its truncate and its write', async () => {
    const dir = await writeVault(chain())
    const files = Object.keys(chain())
    const editor = spawn(process.execPath, ['-e', EDITOR, dir, files.join(','), String(SEED)], { stdio: ['ignore', 'pipe', 'inherit'] })
    let saves = ''
    editor.stdout.on('data', (chunk: Buffer) => (saves += chunk.toString()))
    // 'close', not 'exit': the editor's count may come after it exited.
    const ended = new Promise((resolve) => editor.once('close', resolve))
    const results = []
    let refusals = 0
    let failure: unknown
    try {
      for (let run = 0; run < 4; run++) {
        const work = scriptedWorker(() => new Promise((resolve) => setTimeout(resolve, 15)))
        // A note that kept changing for 3 s is refused (`note-busy`) by design, on a loaded machine: the run is resumed, as a person would.
        for (let fresh = true; ; fresh = false) {
          const result = await runPlan(dir, { query: 'Walk the chain', fresh, fsync: false, maxSteps: 500, work, llm: noJudge() }).catch((error: unknown) => {
            if (error instanceof RunStateError && error.code === 'note-busy' && refusals++ < 5) return undefined
            throw error
          })
          if (result === undefined) continue
          results.push(result)
          break
        }
      }
    } catch (error) {
      failure = error
    } finally {
      await writeFile(join(dir, 'stop'), '')
      await ended
    }
    const [count, stall] = saves.split(' ').map(Number)
    const seed = `TORN_SEED=${SEED}, the editor's longest stall mid-save ${stall} ms`
    expect(failure, seed).toBeUndefined()
    expect(count, seed).toBeGreaterThan(20)
    // A torn read acted on would end the run at a note without its `## Next` (a terminal by shape).
    expect(
      results.map((result) => [result.status, result.lastNode]),
      seed,
    ).toEqual(Array.from({ length: 4 }, () => ['completed', `n${NOTES - 1}`]))
    // A torn read written from would leave a note without the person's last words.
    const notes = await readNotes(dir)
    for (let index = 0; index < NOTES; index++) expect(notes[`n${index}.md`], seed).toContain(words(index))
  }, 120_000)
})

/**
 * An editor saving one note in place again and again: the bytes it read, cut
 * exactly at the line `cutBefore` opens, the rest after a pause. The first
 * part ends with a line break and has its frontmatter closed, so only a read
 * that doubts a note saved a moment ago waits for the rest.
 */
const ONE_NOTE_EDITOR = `
const fs = require('node:fs')
const [path, stop, cutBefore] = process.argv.slice(1)
const pause = (ms) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms)
while (!fs.existsSync(stop)) {
  const text = fs.readFileSync(path)
  const cut = text.indexOf(cutBefore)
  const fd = fs.openSync(path, 'w')
  fs.writeSync(fd, text, 0, cut === -1 ? text.length : cut)
  fs.writeSync(1, 'T')
  pause(80)
  if (cut !== -1) fs.writeSync(fd, text, cut)
  fs.closeSync(fd)
  fs.writeSync(1, '.')
  pause(250)
}
`

const JOURNAL = `## Journal\n\n${'What the person wrote about the draft, while they decided. '.repeat(20)}\nTHE END OF THE JOURNAL\n`

/**
 * Runs `write` 20 times at seeded random moments while ONE_NOTE_EDITOR saves `path` in place (cut
 * at `## Journal`), then stops it. Resolves to the editor's saves and to how many calls met a save
 * under way (the editor had written its first part and not yet the rest): the race the test is about.
 */
async function whileSavedInPlace(path: string, stop: string, write: (call: number) => Promise<unknown>): Promise<{ saves: number; met: number }> {
  const editor = spawn(process.execPath, ['-e', ONE_NOTE_EDITOR, path, stop, '## Journal'], { stdio: ['ignore', 'pipe', 'inherit'] })
  let marks = ''
  editor.stdout.on('data', (chunk: Buffer) => (marks += chunk.toString()))
  const ended = new Promise((resolve) => editor.once('close', resolve))
  const random = seeded(SEED)
  let met = 0
  let refusals = 0
  try {
    await until(() => marks.includes('.'), "the editor's first save")
    for (let call = 1; call <= 20; call++) {
      const before = marks.length
      const midSave = marks.endsWith('T')
      // A call refused because the note kept changing (`note-busy`: nothing written, try again) is made again, as a caller
      // would; on a loaded machine an editor saving every third of a second can keep a note changing for a call's three tries.
      for (;;) {
        try {
          await write(call)
          break
        } catch (error) {
          if (!(error instanceof RunStateError && error.code === 'note-busy') || refusals >= 5) throw error
          refusals++
        }
      }
      // A save was under way as the call began, or one began while it ran.
      if (midSave || marks.slice(before).includes('T')) met++
      await sleep(random() * 330)
    }
  } finally {
    await writeFile(stop, '')
    await ended
  }
  return { saves: marks.split('.').length - 1, met }
}

describe('decide while an editor saves the waiting note in place', () => {
  it("a decision is never written from a note caught between the editor's truncate and its write", async () => {
    const approve = `---\njudge: human\nstatus: waiting\n---\n# Approve the draft\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n\n${JOURNAL}`
    const dir = await writeVault({
      'draft.md': '---\ntype: start\nstatus: done\n---\n# Draft\n\n## Next\n- [[approve]]\n',
      'approve.md': approve,
      'send.md': '# Send\n',
    })
    const path = join(dir, 'approve.md')
    // Each decision adds feedback, so each one writes the note; they come at random moments of the editor's saves.
    const { saves, met } = await whileSavedInPlace(path, join(dir, 'stop'), (call) =>
      decide(dir, 'approve', { edge: 'approved', feedback: `Feedback ${call}.` }),
    )
    // Written from the editor's first part, the note would end at its `## Next` list, the journal gone.
    const text = await readFile(path, 'utf8')
    expect(text).toContain(JOURNAL)
    expect(text).toContain('- [x] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n')
    expect(saves, `TORN_SEED=${SEED}`).toBeGreaterThan(10)
    expect(met, `TORN_SEED=${SEED}: no call met a save under way`).toBeGreaterThan(0)
  }, 120_000)
})

describe('every other rewrite of a note while an editor saves it in place', () => {
  it('updateStatus never writes from a note caught between the truncate and the write', async () => {
    const dir = await writeVault({
      'draft.md': `---
type: start
status: pending
---
# Draft

${JOURNAL}`,
    })
    const path = join(dir, 'draft.md')
    const { saves, met } = await whileSavedInPlace(path, join(dir, 'stop'), (call) => updateStatus(dir, 'draft', call % 2 === 0 ? 'done' : 'pending'))
    // Written from the editor's first part, the note would end at its heading, the journal gone.
    expect(await readFile(path, 'utf8')).toContain(JOURNAL)
    expect(saves, `TORN_SEED=${SEED}`).toBeGreaterThan(10)
    expect(met, `TORN_SEED=${SEED}: no call met a save under way`).toBeGreaterThan(0)
  }, 120_000)

  it('a decision on a proposal is never written from a proposal caught between the truncate and the write', async () => {
    const llm = scriptedJudge(() => '## research\ntype: start\nFind three sources.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft.\n')
    const vault = await proposePlan('Write a post about tide pools', { into: join(await tempDir(), 'post'), llm, fsync: false })
    const path = join(vault, '00_plan-trace', 'proposal.md')
    await writeFile(path, `${await readFile(path, 'utf8')}\n${JOURNAL}`)
    const { saves, met } = await whileSavedInPlace(path, join(vault, 'stop'), (call) =>
      decide(vault, 'proposal', { edge: 'approve', feedback: `Feedback ${call}.` }),
    )
    const text = await readFile(path, 'utf8')
    expect(text).toContain(JOURNAL)
    expect(text).toMatch(/- \[x\] approve/)
    expect(saves, `TORN_SEED=${SEED}`).toBeGreaterThan(10)
    expect(met, `TORN_SEED=${SEED}: no call met a save under way`).toBeGreaterThan(0)
  }, 120_000)
})

/**
 * An editor descheduled between its two writes of one save in place, the
 * first ending at a line break (a read in the pause passes for whole): the
 * bytes it read, with the line `added` typed at the end, cut where
 * `cutBefore` opens. It prints `cut` when the pause starts, and goes on
 * when told to (a line on its stdin): as long as the test needs, past the
 * settle window.
 */
const PAUSED = `
const fs = require('node:fs')
const [path, cutBefore, added = ''] = process.argv.slice(1)
const text = Buffer.concat([fs.readFileSync(path), Buffer.from(added)])
const cut = text.indexOf(cutBefore)
const fd = fs.openSync(path, 'w')
fs.writeSync(fd, text, 0, cut)
fs.writeSync(1, 'cut')
fs.readSync(0, Buffer.alloc(1))
fs.writeSync(fd, text, cut)
fs.closeSync(fd)
`

/**
 * Starts PAUSED on `path`; resolves once its first part is written. The
 * editor writes the rest once the note says `status: done` (the rewrite
 * read the first part as the note, and replaced it: the rest goes into the
 * old version, while the rewrite watches it); `ended` resolves after that.
 */
async function pausedSave(path: string, added = ''): Promise<{ ended: Promise<unknown> }> {
  const editor = spawn(process.execPath, ['-e', PAUSED, path, '## Journal', added], { stdio: ['pipe', 'pipe', 'inherit'] })
  const exited = new Promise((resolve) => editor.once('close', resolve))
  await new Promise((resolve) => editor.stdout.once('data', resolve))
  const written = () => readFile(path, 'utf8').then((text) => statusOf(text) === 'done')
  const ended = until(written, 'the status to be written over the paused save').then(() => {
    editor.stdin.end('\n')
    return exited
  })
  return { ended }
}

describe('a save paused at a line break for longer than the settle window', () => {
  it('is caught going into the old version and kept, with the status patched into it', async () => {
    const note = `---\nstatus: pending\n---\n# Draft\n\n${JOURNAL}`
    const dir = await writeVault({ 'draft.md': note })
    const path = join(dir, 'draft.md')
    const { ended } = await pausedSave(path)
    await updateStatus(dir, 'draft', 'done')
    await ended
    expect(await readFile(path, 'utf8')).toBe(note.replace('status: pending', 'status: done'))
  })

  it("a running plan's status write while a person's save is paused never loses their bytes", async () => {
    const note = `---\ntype: start\nstatus: pending\n---\n# Draft\n\n## Next\n- [[send]]\n\n${JOURNAL}`
    const dir = await writeVault({ 'draft.md': note, 'send.md': '# Send\n\nSend it.\n' })
    const path = join(dir, 'draft.md')
    const typed = 'A line the person typed while the agent worked.\n'
    let save: Promise<unknown> | undefined
    const work = scriptedWorker(async (step) => {
      if (step.node.id !== 'draft') return
      // The person saves the note being worked; their editor stalls mid-save just as the worker ends and the run writes `done`.
      save = (await pausedSave(path, typed)).ended
    })
    const result = await runPlan(dir, { query: 'Draft and send', fsync: false, work, llm: noJudge() })
    await save
    expect(result).toMatchObject({ status: 'completed', lastNode: 'send' })
    expect(await readFile(path, 'utf8')).toBe(note.replace('status: pending', 'status: done') + typed)
  })
})

describe('which cut of a save in place a reader doubts (every byte offset of a note)', () => {
  const whole =
    '---\nstatus: active\nmax_visits: 3\n---\n# Draft\n\nThe words a person wrote.\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] needs revision -> [[draft]]\n'
  const stamp = { mtimeMs: 0, size: 0, ino: 1, mode: 0o644 }
  const closed = whole.indexOf('\n---\n') + 5

  it('a reader that saw the note change doubts every cut; any reader doubts a cut inside a line or inside the frontmatter for the longer window', () => {
    for (let cut = 0; cut < whole.length; cut++) {
      const text = whole.slice(0, cut)
      // Empty, or frontmatter opened and not closed ('-', '--', '---' may be a person's text: doubted as any other).
      const cutShort = cut === 0 || (cut >= 4 && cut < closed)
      expect(settleWindow(`/nowhere/${cut}`, { text, stamp: { ...stamp, size: cut } }, true)).toBe(cutShort || !text.endsWith('\n') ? SETTLE_CUT_MS : SETTLE_MS)
      // A reader that knows the version it saw (the whole note): a cut inside a line is shorter than it, doubted for longer.
      const seen = { ...stamp, ino: 2, size: whole.length }
      expect(settleWindow(`/nowhere/${cut}`, { text, stamp: { ...stamp, size: cut } }, seen)).toBe(cutShort || !text.endsWith('\n') ? SETTLE_CUT_MS : SETTLE_MS)
      // The loader, with no earlier version: only a cut at a line break after the frontmatter passes for whole (docs/reliability.md says so).
      const expected = cutShort || !text.endsWith('\n') ? SETTLE_CUT_MS : 0
      expect(settleWindow(`/nowhere/${cut}`, { text, stamp: { ...stamp, size: cut } }, false)).toBe(expected)
    }
  })
})
