import type { HttpBindings } from '@hono/node-server'
import type { Context } from 'hono'
import { streamSSE } from 'hono/streaming'
import type { RootWatch } from './root-watch.js'

/** How many open pages the board follows at once, and how much one may fall behind. */
export interface EventLimits {
  /** Streams open at once; one more is answered 503. */
  maxStreams: number
  /** Bytes of change notices waiting for one page that does not read them; past it, its connection is closed. */
  maxQueuedBytes: number
}

/**
 * The handler of `/events`: a server-sent event stream per open page, which
 * hears of every burst of changes under the root (`change`, the paths as
 * JSON) after a first `ready`. Bounded both ways: past `maxStreams` open
 * streams a new one is refused (503, the page then stays as loaded), and a
 * page whose notices pile up past `maxQueuedBytes` unread (a client that
 * never reads) has its connection closed, freeing what it held.
 */
export function eventStreams(watch: Pick<RootWatch, 'listen'>, limits: EventLimits): (c: Context<{ Bindings: HttpBindings }>) => Response | Promise<Response> {
  let open = 0
  return (c) => {
    if (open >= limits.maxStreams)
      return c.text(`Service unavailable: ${limits.maxStreams} pages follow this board already; this one shows what was on disk when it loaded`, 503, {
        'retry-after': '60',
      })
    open++
    return streamSSE(c, async (stream) => {
      const queue: string[] = []
      let queued = 0
      let wake: (() => void) | undefined
      const stop = watch.listen((paths) => {
        const data = JSON.stringify(paths)
        queue.push(data)
        queued += Buffer.byteLength(data)
        // A page that does not read: its notices would pile up for as long as the root changes.
        if (queued > limits.maxQueuedBytes) {
          stream.abort()
          c.env.outgoing.destroy()
        }
        wake?.()
      })
      stream.onAbort(() => {
        stop()
        wake?.()
      })
      try {
        await stream.writeSSE({ event: 'ready', data: '' })
        while (!stream.aborted) {
          const data = queue.shift()
          if (data === undefined) await new Promise<void>((resolve) => (wake = resolve))
          else {
            queued -= Buffer.byteLength(data)
            await stream.writeSSE({ event: 'change', data })
          }
        }
      } finally {
        stop()
        open--
      }
    })
  }
}
