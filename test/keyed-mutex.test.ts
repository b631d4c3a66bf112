import { describe, expect, it } from 'vitest'
import { KeyedMutex } from '../src/core/keyed-mutex.js'

/** A promise and the means to settle it from outside: a test decides when each piece of work ends. */
function gate<T = void>() {
  let open!: (value: T) => void
  let fail!: (error: unknown) => void
  const promise = new Promise<T>((resolve, reject) => {
    open = resolve
    fail = reject
  })
  return { promise, open, fail }
}

/** Lets every promise callback queued so far run. */
const settle = () => new Promise((resolve) => setImmediate(resolve))

describe('KeyedMutex: one call at a time per key', () => {
  it('runs the calls of one key one after the other, in the order they came, never two at once', async () => {
    const mutex = new KeyedMutex()
    const log: string[] = []
    const gates = [gate(), gate(), gate()]
    const calls = gates.map((each, index) =>
      mutex.run('vault', async () => {
        log.push(`start ${index}`)
        await each.promise
        log.push(`end ${index}`)
        return index
      }),
    )
    await settle()
    expect(log).toEqual(['start 0'])
    gates[2]!.open()
    gates[1]!.open()
    await settle()
    // The third was let go first, but waits for the first two.
    expect(log).toEqual(['start 0'])
    gates[0]!.open()
    expect(await Promise.all(calls)).toEqual([0, 1, 2])
    expect(log).toEqual(['start 0', 'end 0', 'start 1', 'end 1', 'start 2', 'end 2'])
  })

  it('a call that fails fails its own caller only: the next call of the key runs', async () => {
    const mutex = new KeyedMutex()
    const failing = mutex.run('vault', async () => {
      throw new Error('refused')
    })
    const next = mutex.run('vault', async () => 'ran')
    await expect(failing).rejects.toThrow('refused')
    await expect(next).resolves.toBe('ran')
  })

  it('calls of other keys run at once, and a key is forgotten once its calls settled', async () => {
    const mutex = new KeyedMutex()
    const [a, b] = [gate(), gate()]
    const started: string[] = []
    const first = mutex.run('a', async () => {
      started.push('a')
      await a.promise
    })
    const second = mutex.run('b', async () => {
      started.push('b')
      await b.promise
    })
    await settle()
    expect(started).toEqual(['a', 'b'])
    expect(mutex.size).toBe(2)
    a.open()
    b.open()
    await Promise.all([first, second])
    expect(mutex.size).toBe(0)
  })
})
