import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest'
import { sleep } from '../src/core/abort.js'

describe('sleep: a wait an abort cuts short', () => {
  beforeEach(() => {
    vi.useFakeTimers()
  })
  afterEach(() => {
    vi.useRealTimers()
  })

  it('resolves once its time has passed, not before', async () => {
    let done = false
    const waited = sleep(1_000).then(() => (done = true))
    await vi.advanceTimersByTimeAsync(999)
    expect(done).toBe(false)
    await vi.advanceTimersByTimeAsync(1)
    await waited
    expect(done).toBe(true)
  })

  it('rejects with the signal’s reason as soon as it aborts, its timer cleared and its listener removed', async () => {
    const controller = new AbortController()
    const waited = sleep(60_000, controller.signal)
    expect(vi.getTimerCount()).toBe(1)
    const reason = new Error('stopped')
    controller.abort(reason)
    await expect(waited).rejects.toBe(reason)
    expect(vi.getTimerCount()).toBe(0)
    // Once ended by its time instead, it leaves no listener on a signal that lives on (a run's).
    const other = new AbortController()
    const add = vi.spyOn(other.signal, 'addEventListener')
    const remove = vi.spyOn(other.signal, 'removeEventListener')
    const timed = sleep(10, other.signal)
    await vi.advanceTimersByTimeAsync(10)
    await timed
    expect(remove.mock.calls.map(([type, listener]) => [type, listener])).toEqual(add.mock.calls.map(([type, listener]) => [type, listener]))
  })

  it('with a signal aborted already, rejects at once and sets no timer', async () => {
    const controller = new AbortController()
    controller.abort('too late')
    await expect(sleep(1_000, controller.signal)).rejects.toBe('too late')
    expect(vi.getTimerCount()).toBe(0)
  })
})
