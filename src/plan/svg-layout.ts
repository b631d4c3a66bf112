import { createRequire } from 'node:module'
import { Worker } from 'node:worker_threads'
import { PictureTooLargeError } from '../core/errors.js'

/** What Graphviz answers for a DOT text: `@viz-js/viz`'s render result, as the worker posts it. */
export type LayoutResult = { status: 'success'; output: string; errors: LayoutMessage[] } | { status: 'failure'; output?: undefined; errors: LayoutMessage[] }

/** A message of Graphviz's. */
export interface LayoutMessage {
  level?: 'error' | 'warning'
  message: string
}

/** Layouts running at once; more wait their turn (each worker holds a Graphviz of its own). */
const MAX_LAYOUTS = 2

/**
 * The worker, a CommonJS script: loads Graphviz (`@viz-js/viz`'s CommonJS
 * build, resolved by the caller so the worker needs no module resolution of
 * its own), lays out the DOT text it was given, posts the result.
 */
const WORKER = `
const { parentPort, workerData } = require('node:worker_threads')
require(workerData.viz)
  .instance()
  .then(
    (viz) => viz.render(workerData.dot, { format: 'svg' }),
    (error) => ({ status: 'failure', errors: [{ level: 'error', message: 'Graphviz did not load: ' + (error && error.message) }] }),
  )
  .then((result) => parentPort.postMessage({ status: result.status, output: result.output, errors: result.errors.map((each) => ({ level: each.level, message: each.message })) }))
`

let running = 0
const waiting: (() => void)[] = []

/**
 * Lays `dot` out as SVG with Graphviz in a worker thread, so a large plan
 * never stops the process (an MCP server's other sessions, its signals):
 * the worker is terminated after `timeoutMs`, or when `signal` aborts. At
 * most two layouts run at once; the others wait, their time not yet counted.
 *
 * @param notes - the plan's notes, for the error's message
 * @throws {PictureTooLargeError} when the layout did not end within `timeoutMs`
 * @throws the signal's reason when `signal` aborted
 */
export async function layOut(dot: string, notes: number, options: { timeoutMs: number; signal?: AbortSignal | undefined }): Promise<LayoutResult> {
  const { timeoutMs, signal } = options
  signal?.throwIfAborted()
  if (running >= MAX_LAYOUTS) await new Promise<void>((resolve) => waiting.push(resolve))
  running++
  try {
    signal?.throwIfAborted()
    return await inWorker(dot, notes, timeoutMs, signal)
  } finally {
    running--
    waiting.shift()?.()
  }
}

function inWorker(dot: string, notes: number, timeoutMs: number, signal: AbortSignal | undefined): Promise<LayoutResult> {
  const viz = createRequire(import.meta.url).resolve('@viz-js/viz')
  const worker = new Worker(WORKER, { eval: true, workerData: { viz, dot } })
  return new Promise<LayoutResult>((resolve, reject) => {
    const end = (settle: () => void) => {
      clearTimeout(timer)
      signal?.removeEventListener('abort', onAbort)
      worker.removeAllListeners()
      worker.on('error', () => undefined)
      // A worker still laying out is stopped where it is; one that answered is done anyway.
      void worker.terminate()
      settle()
    }
    const timer = setTimeout(() => end(() => reject(new PictureTooLargeError(notes, timeoutMs))), timeoutMs)
    const onAbort = () => end(() => reject(signal!.reason))
    signal?.addEventListener('abort', onAbort, { once: true })
    worker.once('message', (result: LayoutResult) => end(() => resolve(result)))
    worker.once('error', (error) => end(() => reject(error)))
    worker.once('exit', (code) => end(() => reject(new Error(`The Graphviz worker stopped (exit code ${code}) before it answered`))))
  })
}
