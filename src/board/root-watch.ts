import { watch, type FSWatcher } from 'node:fs'
import { sep } from 'node:path'

/** How long a burst of file events is gathered before the pages hear of it: a hop writes several files. */
const SETTLE_MS = 40
/** The most changed paths one notice names; past it, the notice says `*` (everything). */
const MAX_PATHS = 200

/**
 * One recursive watch of the whole root, shared by every open page: a
 * change anywhere under it (a hop of any process, a person's save) reaches
 * each listener once per burst, as the changed paths relative to the root,
 * `/`-separated. Nothing is polled. A root that cannot be watched
 * recursively yields no notices: the pages still show what is on disk when
 * loaded.
 */
export class RootWatch {
  private readonly listeners = new Set<(paths: string[]) => void>()
  private watcher: FSWatcher | undefined
  private pending = new Set<string>()
  private timer: NodeJS.Timeout | undefined

  constructor(private readonly root: string) {}

  /** Calls `listener` on each burst of changes until the returned function is called. */
  listen(listener: (paths: string[]) => void): () => void {
    this.listeners.add(listener)
    this.start()
    return () => {
      this.listeners.delete(listener)
      if (this.listeners.size === 0) this.stop()
    }
  }

  /** Stops watching; listeners hear nothing more. */
  close(): void {
    this.listeners.clear()
    this.stop()
  }

  private start(): void {
    if (this.watcher) return
    try {
      this.watcher = watch(this.root, { recursive: true, persistent: false }, (_event, name) => this.changed(name === null ? '*' : String(name)))
      this.watcher.on('error', () => this.stop())
    } catch {
      this.watcher = undefined
    }
  }

  private stop(): void {
    this.watcher?.close()
    this.watcher = undefined
    if (this.timer) clearTimeout(this.timer)
    this.timer = undefined
    this.pending.clear()
  }

  private changed(path: string): void {
    this.pending.add(path.split(sep).join('/'))
    this.timer ??= setTimeout(() => {
      this.timer = undefined
      const paths = this.pending.size > MAX_PATHS ? ['*'] : [...this.pending]
      this.pending = new Set()
      for (const listener of this.listeners) {
        try {
          listener(paths)
        } catch {
          // A listener that throws (a page gone) cannot stop the others.
        }
      }
    }, SETTLE_MS)
  }
}
