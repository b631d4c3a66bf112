/**
 * One repetition of each thing the benchmark measures. Every function
 * prepares what it needs outside the timed part and returns the timed figure.
 */
import { appendFileSync, closeSync, constants, fsyncSync, openSync, renameSync, writeFileSync, writeSync } from 'node:fs'
import { mkdir, open, rename, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { Annotation, END, GraphRecursionError, START, StateGraph } from '@langchain/langgraph'
import { SqliteSaver } from '@langchain/langgraph-checkpoint-sqlite'
import Database from 'better-sqlite3'
import { runPlan } from '../../dist/index.js'
import { cpuNow, now } from './stats.mjs'

/** What every scripted worker returns: the same text in both frameworks. */
export function output(node, visit) {
  return `Output of ${node}, visit ${visit}: the work is done and nothing needs to change.`
}

/**
 * Runs a vaultplan plan with an instant worker and a scripted judge that
 * answers `1: NO` until its `yesAt`-th call, then `1: YES`.
 *
 * `prompts`: an array that receives `{ step, chars }` for each judge call (the
 * prompt's length in characters, the step being judged).
 *
 * @returns `{ steps, walkMs, cpuMs, totalMs, status, windows }`: `walkMs` runs from
 *   the run's `start` event (vault read, validated, trace header written)
 *   to its `end` or `stop` event, so it holds the hops and nothing else;
 *   with `window`, `windows` lists the time per hop of each run of
 *   `window` hops in a row (by `enter` events).
 */
export async function runVaultplan(vault, { fsync, maxSteps, yesAt = Infinity, fresh = false, window = 0, prompts }) {
  let judged = 0
  let entered = 0
  let startedAt
  let endedAt
  let cpuStarted
  let cpuEnded
  const marks = []
  const before = now()
  const result = await runPlan(vault, {
    query: 'benchmark',
    fsync,
    fresh,
    maxSteps,
    work: async (step) => output(step.node.id, step.visit),
    llm: async (prompt) => {
      prompts?.push({ step: entered, chars: prompt.length })
      return ++judged >= yesAt ? '1: YES' : '1: NO'
    },
    onEvent(event) {
      if (event.type === 'enter') entered = event.step
      if (event.type === 'start') {
        startedAt = now()
        cpuStarted = cpuNow()
      } else if (event.type === 'end' || event.type === 'stop') {
        endedAt = now()
        cpuEnded = cpuNow()
      }
      else if (window > 0 && event.type === 'enter' && (event.step - 1) % window === 0) marks.push(now())
    },
  })
  const totalMs = now() - before
  const windows = marks.slice(1).map((mark, index) => (mark - marks[index]) / window)
  return { steps: result.steps, walkMs: endedAt - startedAt, cpuMs: cpuEnded - cpuStarted, totalMs, status: result.status, windows }
}

const State = Annotation.Root({
  output: Annotation(),
  visit: Annotation(),
  reviews: Annotation(),
  limit: Annotation(),
})

/** Node works counted across a LangGraph run (the stubs add to it). */
const counter = { hops: 0 }

/** LangGraph's path plan: `count` stub nodes in a row. */
export function langgraphPath(count) {
  const width = Math.max(4, String(count - 1).length)
  const id = (index) => `n${String(index).padStart(width, '0')}`
  const builder = new StateGraph(State)
  for (let index = 0; index < count; index++) {
    const name = id(index)
    builder.addNode(name, async () => {
      counter.hops++
      return { output: output(name, 1) }
    })
  }
  builder.addEdge(START, id(0))
  for (let index = 0; index + 1 < count; index++) builder.addEdge(id(index), id(index + 1))
  builder.addEdge(id(count - 1), END)
  return builder
}

/** LangGraph's draft/review loop: a conditional edge function sends review back to draft until `limit` reviews. */
export function langgraphLoop() {
  const builder = new StateGraph(State)
  builder.addNode('draft', async (state) => {
    counter.hops++
    const visit = (state.reviews ?? 0) + 1
    return { output: output('draft', visit), visit }
  })
  builder.addNode('review', async (state) => {
    counter.hops++
    const reviews = (state.reviews ?? 0) + 1
    return { output: output('review', reviews), reviews }
  })
  builder.addNode('send', async () => {
    counter.hops++
    return { output: output('send', 1) }
  })
  builder.addEdge(START, 'draft')
  builder.addEdge('draft', 'review')
  builder.addConditionalEdges('review', (state) => (state.reviews >= state.limit ? 'send' : 'draft'), ['send', 'draft'])
  builder.addEdge('send', END)
  return builder
}

/**
 * Runs a LangGraph graph on a fresh SQLite file with `SqliteSaver` (WAL,
 * the connection's default synchronous=NORMAL, or `synchronous: 'FULL'`).
 * `maxHops` caps the run by `recursionLimit`, as `maxSteps` caps vaultplan.
 *
 * @returns `{ steps, walkMs, cpuMs, synchronous }`
 */
export async function runLangGraph(builder, { dbPath, synchronous, maxHops = 100_000, limit = 0 }) {
  const db = new Database(dbPath)
  const saver = new SqliteSaver(db)
  saver.setup()
  if (synchronous) db.pragma(`synchronous = ${synchronous}`)
  const mode = db.pragma('synchronous', { simple: true })
  const graph = builder.compile({ checkpointer: saver })
  counter.hops = 0
  const cpuStarted = cpuNow()
  const started = now()
  try {
    await graph.invoke({ output: '', visit: 0, reviews: 0, limit }, { configurable: { thread_id: 'bench' }, recursionLimit: maxHops })
  } catch (error) {
    if (!(error instanceof GraphRecursionError)) throw error
  }
  const walkMs = now() - started
  const cpuMs = cpuNow() - cpuStarted
  const steps = counter.hops
  db.close()
  return { steps, walkMs, cpuMs, synchronous: ['OFF', 'NORMAL', 'FULL', 'EXTRA'][mode] ?? String(mode) }
}

/**
 * The file-system floor of one hop: two atomic rewrites of a 1 KB note
 * (temporary file, optional fsync, rename, optional fsync of the folder) and
 * one 200-byte append to a trace file (optional fsync).
 *
 * @returns `{ steps, walkMs, cpuMs }`
 */
export async function runFloor(dir, { hops, fsync }) {
  await mkdir(join(dir, 'trace'), { recursive: true })
  const note = join(dir, 'note.md')
  const trace = join(dir, 'trace', 'trace.md')
  await writeFile(note, 'x'.repeat(1024))
  await writeFile(trace, '')
  const texts = ['a', 'b'].map((letter) => `---\nstatus: active\n---\n${letter.repeat(1000)}\n`)
  const entry = `${'t'.repeat(199)}\n`
  const cpuStarted = cpuNow()
  const started = now()
  for (let hop = 0; hop < hops; hop++) {
    await atomicWrite(dir, note, texts[0], fsync, hop * 2)
    await atomicWrite(dir, note, texts[1], fsync, hop * 2 + 1)
    const handle = await open(trace, 'a')
    try {
      await handle.appendFile(entry, 'utf8')
      if (fsync) await handle.sync()
    } finally {
      await handle.close()
    }
  }
  const walkMs = now() - started
  return { steps: hops, walkMs, cpuMs: cpuNow() - cpuStarted }
}

async function atomicWrite(dir, path, text, fsync, serial) {
  const temp = join(dir, `.tmp-${serial}`)
  const handle = await open(temp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644)
  try {
    await handle.writeFile(text, 'utf8')
    if (fsync) await handle.sync()
  } finally {
    await handle.close()
  }
  await rename(temp, path)
  if (fsync) {
    const folder = await open(dir, 'r')
    try {
      await folder.sync()
    } finally {
      await folder.close()
    }
  }
}

/**
 * The same floor with the synchronous API (what better-sqlite3 uses, and
 * what a file-based executor faces): no thread-pool round trip per call.
 *
 * @returns `{ steps, walkMs, cpuMs }`
 */
export async function runFloorSync(dir, { hops, fsync }) {
  await mkdir(join(dir, 'trace'), { recursive: true })
  const note = join(dir, 'note.md')
  const trace = join(dir, 'trace', 'trace.md')
  writeFileSync(note, 'x'.repeat(1024))
  writeFileSync(trace, '')
  const texts = ['a', 'b'].map((letter) => `---\nstatus: active\n---\n${letter.repeat(1000)}\n`)
  const entry = `${'t'.repeat(199)}\n`
  const cpuStarted = cpuNow()
  const started = now()
  for (let hop = 0; hop < hops; hop++) {
    atomicWriteSync(dir, note, texts[0], fsync, hop * 2)
    atomicWriteSync(dir, note, texts[1], fsync, hop * 2 + 1)
    if (fsync) {
      const fd = openSync(trace, 'a')
      try {
        writeSync(fd, entry)
        fsyncSync(fd)
      } finally {
        closeSync(fd)
      }
    } else appendFileSync(trace, entry)
  }
  const walkMs = now() - started
  return { steps: hops, walkMs, cpuMs: cpuNow() - cpuStarted }
}

function atomicWriteSync(dir, path, text, fsync, serial) {
  const temp = join(dir, `.tmp-${serial}`)
  const fd = openSync(temp, constants.O_CREAT | constants.O_EXCL | constants.O_WRONLY, 0o644)
  try {
    writeSync(fd, text)
    if (fsync) fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
  renameSync(temp, path)
  if (fsync) {
    const folder = openSync(dir, 'r')
    try {
      fsyncSync(folder)
    } finally {
      closeSync(folder)
    }
  }
}
