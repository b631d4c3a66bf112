import { appendFile, readFile, rename, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { completeStep, nextStep, type Step } from 'vaultplan'
import { RunFiles } from '../src/store/run-files.js'
import { parseTrace } from '../src/store/trace.js'
import { FINE_RACY_MS, RACY_MS, stampTells } from '../src/vault/note-version.js'
import { edit, read, writeVault } from './helpers/vault.js'
import { chain, work } from './helpers/plans.js'

// A process that makes many stepping calls keeps the run's own files (its trace, its output notes) and
// reads one again only when its stamp could hide a change: these tests change them between two calls, the
// way a person does, and the next call must hand on what is on disk.

const query = 'Ship it'
const options = { fsync: false }

const outputsOf = (step: Step) => work(step).outputs.map((output) => output.output)

/** The stamp's parts a second write of the same size could leave as they were. */
async function stampOf(path: string): Promise<[number, number, number]> {
  const info = await stat(path)
  return [info.size, info.ino, info.mtimeMs]
}

describe('when a kept stamp tells every later write', () => {
  it.each([
    ['a time with a part of a second, confirmed within the fine window', 1_000_000.5, 1_000_000.5 + FINE_RACY_MS - 1, false],
    ['a time with a part of a second, confirmed after the fine window', 1_000_000.5, 1_000_000.5 + FINE_RACY_MS + 1, true],
    ['a time in whole seconds, confirmed after the fine window', 1_000_000, 1_000_000 + FINE_RACY_MS + 1, false],
    ['a time in whole seconds, confirmed within the long window', 1_000_000, 1_000_000 + RACY_MS, false],
    ['a time in whole seconds, confirmed after the long window', 1_000_000, 1_000_000 + RACY_MS + 1, true],
    ['a time ahead of the confirmation (another clock)', 1_000_000.5, 999_000, false],
  ])('%s: %s', (_, mtimeMs, checkedAt, tells) => {
    expect(stampTells({ mtimeMs, size: 10, ino: 1, mode: 0o644 }, checkedAt)).toBe(tells)
  })

  it('a stamp never confirmed with the bytes tells nothing', () => {
    expect(stampTells({ mtimeMs: 1_000_000.5, size: 10, ino: 1, mode: 0o644 }, undefined)).toBe(false)
  })
})

describe('the run files a process keeps between stepping calls', () => {
  it('an output note a person edits in place right after a call, keeping its size, inode and fine time: the next call hands on their bytes', async () => {
    const dir = await writeVault(chain())
    const s2 = work(await completeStep(dir, work(await nextStep(dir, { ...options, query })).key, { output: 'one' }, options))
    const path = join(dir, '00_plan-trace/outputs/0001-s1.md')
    // A time with a part of a second, as a file system with fine times gives, a little ahead of ours (a
    // shared file system's clock): the look the next call takes cannot tell a second write in its tick.
    const at = (Date.now() + 1000.5) / 1000
    await utimes(path, at, at)
    const s3 = work(await completeStep(dir, s2.key, { output: 'two' }, options))
    expect(outputsOf(s3)).toEqual(['one', 'two'])
    const before = await stampOf(path)
    await writeFile(path, (await readFile(path, 'utf8')).replace('\none', '\nONE'))
    await utimes(path, at, at)
    expect(await stampOf(path)).toEqual(before)
    expect(outputsOf(await completeStep(dir, s3.key, { output: 'three' }, options))).toEqual(['ONE', 'two', 'three'])
  })

  it('an output note a person replaces again and again (another file renamed over it, same size and time): every next call hands on the last one', async () => {
    const dir = await writeVault(chain())
    let step = work(await completeStep(dir, work(await nextStep(dir, { ...options, query })).key, { output: 'one' }, options))
    const path = join(dir, '00_plan-trace/outputs/0001-s1.md')
    // Written a minute ago: once read, its stamp tells any later write, and the call after trusts it.
    const old = Math.floor(Date.now() / 1000) - 60
    await utimes(path, old, old)
    step = work(await completeStep(dir, step.key, { output: 'two' }, options))
    expect(outputsOf(step)).toEqual(['one', 'two'])
    const seen: string[][] = []
    for (const word of ['uno', 'een']) {
      const [size, ino, mtimeMs] = await stampOf(path)
      await writeFile(`${path}.new`, (await readFile(path, 'utf8')).replace(/\n(one|uno)$/, `\n${word}`))
      await utimes(`${path}.new`, old, old)
      await rename(`${path}.new`, path)
      const now = await stampOf(path)
      expect([now[0], now[1] === ino, now[2]]).toEqual([size, false, mtimeMs])
      step = work(await completeStep(dir, step.key, { output: `after ${word}` }, options))
      seen.push(outputsOf(step).slice(0, 1))
    }
    expect(seen).toEqual([['uno'], ['een']])
  })

  it('a trace a person cuts by hand after a call that could trust its stamp: the next call replays the trace as it is now', async () => {
    const dir = await writeVault(chain())
    const s2 = work(await completeStep(dir, work(await nextStep(dir, { ...options, query })).key, { output: 'one' }, options))
    const s3 = work(await completeStep(dir, s2.key, { output: 'two' }, options))
    const tracePath = join(dir, '00_plan-trace/trace.md')
    // Written a minute ago: the next call reads it once, and its stamp tells any later write from then on.
    const old = Math.floor(Date.now() / 1000) - 60
    await utimes(tracePath, old, old)
    // The same step again (nothing appended): the trace is as that call confirmed it.
    expect(work(await nextStep(dir, options)).key).toBe(s3.key)
    expect(work(await nextStep(dir, options)).key).toBe(s3.key)
    const trace = await read(dir, '00_plan-trace/trace.md')
    await writeFile(tracePath, trace.slice(0, trace.indexOf('\n', trace.indexOf('"node":"s1"')) + 1))
    await rm(join(dir, '00_plan-trace/outputs/0002-s2.md'))
    await edit(dir, 's3.md', (text) => text.replace('status: active', 'status: pending'))
    await edit(dir, 's2.md', (text) => text.replace('status: done', 'status: pending'))
    expect(work(await nextStep(dir, options))).toMatchObject({ step: 2, node: { id: 's2' }, visit: 1 })
  })

  it('a trace appended to, or changed by hand before its end, reads as a whole read of it does', async () => {
    const dir = await writeVault(chain())
    // An agent's name beyond ASCII: its claims are records whose bytes decode only as UTF-8.
    const agent = { ...options, agent: 'Zoë → ✓' }
    const s2 = work(await completeStep(dir, work(await nextStep(dir, { ...agent, query })).key, { output: 'one' }, agent))
    const tracePath = join(dir, '00_plan-trace/trace.md')
    const files = new RunFiles(dir)
    const whole = async () => {
      const { trace } = parseTrace(dir, await read(dir, '00_plan-trace/trace.md'))
      return { header: trace.header, records: trace.records, claims: trace.claims }
    }
    expect(await files.readTrace()).toEqual(await whole())
    // A person's note beyond ASCII, then the run's next hop: the added bytes decode as the whole file does.
    await appendFile(tracePath, '\nUne remarque — écrite à la main → ✓\n')
    await completeStep(dir, s2.key, { output: 'two' }, agent)
    expect((await files.readTrace())?.records.map((record) => record.node)).toEqual(['s1', 's2'])
    expect((await files.readTrace())?.claims?.at(-1)).toMatchObject({ node: 's3', agent: 'Zoë → ✓' })
    expect(await files.readTrace()).toEqual(await whole())
    // The first hop's record changed in place, the file as long as before: read whole again.
    const text = await read(dir, '00_plan-trace/trace.md')
    await writeFile(tracePath, text.replace('"kind":"hop","step":1,"node":"s1","visit":1', '"kind":"hop","step":1,"node":"s1","visit":7'))
    expect((await files.readTrace())?.records.map((record) => record.visit)).toEqual([7, 1])
    expect(await files.readTrace()).toEqual(await whole())
  })
})
