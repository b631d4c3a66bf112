import { execFile } from 'node:child_process'
import { readFile, rm, stat, utimes, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { fileURLToPath } from 'node:url'
import { describe, expect, it } from 'vitest'
import { completeStep, nextStep, PlanValidationError } from 'vaultplan'
import { SessionCache } from '../src/store/session-cache.js'
import { parseTrace } from '../src/store/trace.js'
import { VaultSession } from '../src/store/vault-session.js'
import { edit, note, read, statuses, writeVault } from './helpers/vault.js'
import { chain, work } from './helpers/plans.js'

// The stepping calls of one process keep each vault's session between calls (SessionCache): these
// tests change the vault between two calls, the way another worker, another process or a person does,
// and the next call must see it.

const query = 'Ship it'
const options = { fsync: false }
const index = fileURLToPath(new URL('../src/index.ts', import.meta.url))

/** Works one hop in another process, with the stepping calls, as a queue worker on another machine does. */
function hopElsewhere(vault: string): Promise<string> {
  const script = `
    const { nextStep, completeStep } = await import(${JSON.stringify(index)})
    const step = await nextStep(${JSON.stringify(vault)}, { fsync: false })
    await completeStep(${JSON.stringify(vault)}, step.key, { output: 'worked elsewhere' }, { fsync: false })
    process.stdout.write(step.node.id)
  `
  return new Promise((done, fail) =>
    execFile(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], (error, stdout, stderr) =>
      error ? fail(new Error(stderr || error.message)) : done(stdout),
    ),
  )
}

describe('the stepping calls never answer from a stale session', () => {
  it('a hop another process worked between two calls: the next call goes on from where it left the run', async () => {
    const dir = await writeVault(chain())
    const first = work(await nextStep(dir, { ...options, query }))
    const second = work(await completeStep(dir, first.key, { output: 'one' }, options))
    expect(second.node.id).toBe('s2')
    // This process's session now says s2 is active; another process works s2 and claims s3.
    expect(await hopElsewhere(dir)).toBe('s2')
    const third = work(await nextStep(dir, options))
    expect(third).toMatchObject({ step: 3, visit: 1, node: { id: 's3' } })
    expect(third.outputs.map((output) => output.output)).toEqual(['one', 'worked elsewhere'])
    const fourth = work(await completeStep(dir, third.key, { output: 'three' }, options))
    expect(fourth.node.id).toBe('s4')
    expect(await statuses(dir)).toEqual({ s1: 'done', s2: 'done', s3: 'done', s4: 'active', s5: 'pending' })
  }, 60_000)

  it('a person moves the run by hand (another note set active): the next call works that note', async () => {
    const dir = await writeVault(chain())
    const first = work(await nextStep(dir, { ...options, query }))
    work(await completeStep(dir, first.key, { output: 'one' }, options))
    await edit(dir, 's2.md', (text) => text.replace('status: active', 'status: pending'))
    await edit(dir, 's4.md', (text) => `---\nstatus: active\n---\n${text}`)
    expect(work(await nextStep(dir, options)).node.id).toBe('s4')
  })

  it("an edit that keeps the note's size, inode and time (written in place within one clock tick) is seen by its bytes", async () => {
    const dir = await writeVault(chain())
    const path = join(dir, 's3.md')
    // A time in whole seconds, which utimes sets exactly, and recent: as a note saved a moment ago.
    const second = Math.floor(Date.now() / 1000)
    await utimes(path, second, second)
    const first = work(await nextStep(dir, { ...options, query }))
    work(await completeStep(dir, first.key, { output: 'one' }, options))
    const before = await stat(path)
    await writeFile(path, (await readFile(path, 'utf8')).replace('Do step 3.', 'Do step X.'))
    await utimes(path, second, second)
    const after = await stat(path)
    expect([after.size, after.ino, after.mtimeMs]).toEqual([before.size, before.ino, before.mtimeMs])
    const s2 = work(await nextStep(dir, options))
    const s3 = work(await completeStep(dir, s2.key, { output: 'two' }, options))
    expect(s3.node).toMatchObject({ id: 's3', body: 'Do step X.' })
  })

  it('an output note edited in place between two calls, keeping its size, inode and time: the next step shows the edit', async () => {
    const dir = await writeVault(chain())
    const first = work(await nextStep(dir, { ...options, query }))
    const s2 = work(await completeStep(dir, first.key, { output: 'one' }, options))
    const path = join(dir, '00_plan-trace/outputs/0001-s1.md')
    // A time in whole seconds, which utimes sets exactly, and recent: an output written a moment ago.
    const second = Math.floor(Date.now() / 1000)
    await utimes(path, second, second)
    const s3 = work(await completeStep(dir, s2.key, { output: 'two' }, options))
    expect(s3.outputs.map((output) => output.output)).toEqual(['one', 'two'])
    const before = await stat(path)
    await writeFile(path, (await readFile(path, 'utf8')).replace('\none', '\nONE'))
    await utimes(path, second, second)
    const after = await stat(path)
    expect([after.size, after.ino, after.mtimeMs]).toEqual([before.size, before.ino, before.mtimeMs])
    expect(work(await completeStep(dir, s3.key, { output: 'three' }, options)).outputs.map((output) => output.output)).toEqual(['ONE', 'two', 'three'])
  })

  it('an output note written long ago, edited between two calls: the next step shows the edit', async () => {
    const dir = await writeVault(chain())
    const first = work(await nextStep(dir, { ...options, query }))
    const s2 = work(await completeStep(dir, first.key, { output: 'one' }, options))
    const path = join(dir, '00_plan-trace/outputs/0001-s1.md')
    // Written a minute ago: its stamp, once read, tells any later write.
    const old = Math.floor(Date.now() / 1000) - 60
    await utimes(path, old, old)
    const s3 = work(await completeStep(dir, s2.key, { output: 'two' }, options))
    const s4 = work(await completeStep(dir, s3.key, { output: 'three' }, options))
    expect(s4.outputs.map((output) => output.output)).toEqual(['one', 'two', 'three'])
    await edit(dir, '00_plan-trace/outputs/0001-s1.md', (text) => text.replace('\none', '\none, and a person added this'))
    expect(work(await completeStep(dir, s4.key, { output: 'four' }, options)).outputs.map((output) => output.output)).toEqual([
      'one, and a person added this',
      'two',
      'three',
      'four',
    ])
  })

  it('a note removed between two calls that another note links to: the next call reports the broken plan', async () => {
    const dir = await writeVault(chain())
    work(await nextStep(dir, { ...options, query }))
    await rm(join(dir, 's5.md'))
    await expect(nextStep(dir, options)).rejects.toBeInstanceOf(PlanValidationError)
  })

  it('a note added between two calls and linked from the next one: the run follows the new link', async () => {
    const dir = await writeVault(chain())
    const first = work(await nextStep(dir, { ...options, query }))
    await writeFile(join(dir, 'detour.md'), note({ title: 'Detour', body: 'Take the detour.', next: ['[[s3]]'] }))
    await edit(dir, 's2.md', (text) => text.replace('[[s3]]', '[[detour]]'))
    const s2 = work(await completeStep(dir, first.key, { output: 'one' }, options))
    expect(work(await completeStep(dir, s2.key, { output: 'two' }, options)).node.id).toBe('detour')
  })

  it('a trace record removed by hand between two calls: the next call replays the trace as it is now', async () => {
    const dir = await writeVault(chain())
    const first = work(await nextStep(dir, { ...options, query }))
    const s2 = work(await completeStep(dir, first.key, { output: 'one' }, options))
    work(await completeStep(dir, s2.key, { output: 'two' }, options))
    const trace = await read(dir, '00_plan-trace/trace.md')
    // Cut the second hop's record (and what follows it): the trace now ends after the first hop.
    await writeFile(join(dir, '00_plan-trace/trace.md'), trace.slice(0, trace.indexOf('\n', trace.indexOf('"node":"s1"')) + 1))
    await rm(join(dir, '00_plan-trace/outputs/0002-s2.md'))
    await edit(dir, 's3.md', (text) => text.replace('status: active', 'status: pending'))
    await edit(dir, 's2.md', (text) => text.replace('status: done', 'status: pending'))
    expect(work(await nextStep(dir, options))).toMatchObject({ step: 2, node: { id: 's2' }, visit: 1 })
  })
})

describe('VaultSession.open from a kept session', () => {
  it('holds the same plan as a fresh read after notes were edited, added, removed and renamed', async () => {
    const dir = await writeVault({ ...chain(), 'notes/aside.md': note({ title: 'Aside', body: 'Not linked.' }) })
    const cache = new SessionCache<VaultSession>()
    const first = await VaultSession.open(dir, options, cache)
    await first.close()
    cache.keep(first)
    await edit(dir, 's2.md', (text) => text.replace('Do step 2.', 'Do step two, now longer.'))
    await writeFile(join(dir, 'a-new.md'), note({ title: 'New', body: 'Added.' }))
    await rm(join(dir, 'notes/aside.md'))
    await writeFile(join(dir, 'notes/moved.md'), note({ title: 'Moved', body: 'Renamed.' }))
    const kept = await VaultSession.open(dir, options, cache)
    await kept.close()
    const fresh = await VaultSession.open(dir, options)
    await fresh.close()
    expect(kept).not.toBe(first)
    expect([...kept.graph.nodes.values()]).toEqual([...fresh.graph.nodes.values()])
    expect([...kept.graph.nodes.keys()]).toEqual(['a-new', 'notes/moved', 's1', 's2', 's3', 's4', 's5'])
  })

  it('a session is taken out of the cache while in use; the cache keeps the last vaults up to its number of notes', async () => {
    const a = await writeVault(chain())
    const b = await writeVault(chain())
    const cache = new SessionCache<VaultSession>(8)
    const one = await VaultSession.open(a, options, cache)
    await one.close()
    cache.keep(one)
    expect(cache.take(one.root)).toBe(one)
    expect(cache.take(one.root)).toBeUndefined()
    cache.keep(one)
    const two = await VaultSession.open(b, options, cache)
    await two.close()
    // 5 + 5 notes are over 8: the older vault goes.
    cache.keep(two)
    expect(cache.vaults).toBe(1)
    expect(cache.take(one.root)).toBeUndefined()
    expect(cache.take(two.root)).toBe(two)
    expect(() => new SessionCache(-1)).toThrow(new TypeError('Expected `maxNotes` to be an integer from 0 up, got `-1`'))
  })
})

describe('parseTrace after an append', () => {
  it('parses only the added lines and gives what a whole parse gives, line numbers of errors included', async () => {
    const dir = await writeVault(chain())
    const first = work(await nextStep(dir, { ...options, query }))
    const before = await read(dir, '00_plan-trace/trace.md')
    const s2 = work(await completeStep(dir, first.key, { output: 'one' }, options))
    await completeStep(dir, s2.key, { output: 'two' }, options)
    const after = await read(dir, '00_plan-trace/trace.md')
    const earlier = parseTrace(dir, before)
    expect(earlier.trace.records).toEqual([])
    const grown = parseTrace(dir, after, earlier)
    expect(grown).toEqual(parseTrace(dir, after))
    expect(grown.trace.records.map((record) => record.node)).toEqual(['s1', 's2'])
    const bad = `${after}<!-- vaultplan:hop {"kind":"hop","step":"x"} -->\n`
    const line = bad.split('\n').length - 1
    expect(() => parseTrace(dir, bad, grown)).toThrow(`line ${line} holds a record`)
    expect(() => parseTrace(dir, bad)).toThrow(`line ${line} holds a record`)
  })
})
