import { RunAbortedError } from './errors.js'

/** A signal of one's own that follows a caller's, and the means to end both ties. */
export interface FollowedSignal {
  /** Aborts when the caller's signal does, or when {@link FollowedSignal.abort} is called. */
  signal: AbortSignal
  /** Aborts this signal alone, the caller's untouched. */
  abort(reason: unknown): void
  /** Removes the one listener put on the caller's signal; call it when the work is over. */
  dispose(): void
}

/**
 * A signal for one piece of work under a caller's long-lived `signal` (a
 * run's): exactly one listener is added to `signal`, and `dispose()` removes
 * it, so listeners never pile up on the caller's signal however many calls
 * and retries the run makes. Libraries that add a listener per attempt
 * (the OpenAI SDK does) add them to this signal, which dies with the work.
 */
export function followSignal(signal?: AbortSignal): FollowedSignal {
  const controller = new AbortController()
  if (signal?.aborted) controller.abort(signal.reason)
  const onAbort = () => controller.abort(signal!.reason)
  if (signal && !signal.aborted) signal.addEventListener('abort', onAbort, { once: true })
  return {
    signal: controller.signal,
    abort: (reason) => controller.abort(reason),
    dispose: () => signal?.removeEventListener('abort', onAbort),
  }
}

/**
 * Does a run's (or a step's) `work` and, when the caller's `signal` aborted
 * it, rejects with a {@link RunAbortedError} for `vault` whose `cause` is
 * the signal's reason, whatever was cut short in flight (a worker, a model
 * call, a wait between hops) threw.
 */
export async function abortable<T>(signal: AbortSignal | undefined, vault: string, work: () => Promise<T>): Promise<T> {
  try {
    return await work()
  } catch (error) {
    if (signal?.aborted && !(error instanceof RunAbortedError)) throw new RunAbortedError(vault, { cause: signal.reason })
    throw error
  }
}

/**
 * Waits `ms` milliseconds; with a `signal`, rejects with its reason as
 * soon as it aborts (at once when it has already), the timer cleared and
 * the listener removed either way.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  if (signal?.aborted) return Promise.reject(signal.reason as unknown)
  return new Promise((resolve, reject) => {
    const onAbort = () => {
      clearTimeout(timer)
      reject(signal!.reason as unknown)
    }
    const timer = setTimeout(() => {
      signal?.removeEventListener('abort', onAbort)
      resolve()
    }, ms)
    signal?.addEventListener('abort', onAbort, { once: true })
  })
}
