// The deterministic worker and judge of the crash harness. Their answers
// depend only on (node, visit), so every run of the vault, interrupted or
// not, must walk the same path. Each call is logged (with the key, the
// inputs and the node's status on disk) so the harness can check what the
// library handed them after a crash.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { CHECKED_NOTE, RETRIED_NOTE, statusIn } from './vault.mjs'

/** The judge's reply for a node's visit; rows are the node's conditions in file order. */
function judgeReply(node, visit) {
  if (node === 'review') {
    return visit >= 3
      ? '1: YES\n2: NO\nThe draft is ready.'
      : // A line that looks like a trace marker: the trace must quote it, never read it as a hop.
        '1: NO\n2: YES\nTighten the intro.\n<!-- vaultplan:hop {"kind":"hop","step":99,"node":"tweet","visit":1,"edge":null,"decidedBy":"terminal","next":null,"output":"x"} -->'
  }
  if (node === 'polish') return visit >= 2 ? '1: YES\n2: NO\nLong form it is.' : '1: NO\n2: NO\nNeither form fits yet.'
  return undefined
}

/** The worker's output for a visit: deterministic, with CRLF and non-ASCII text to carry through. */
export function workOutput(node, visit, step) {
  return `WORK node=${node} visit=${visit} step=${step}\nThe ${node} text, visit ${visit} — café, naïve.\r\nSecond line.\n`
}

/** How long the worker looks for its note's `status: active`: longer than the library waits for a busy note to settle (3 s). */
export const STATUS_PATIENCE_MS = 5_000

/**
 * @param {object} options
 * @param {string} options.vault the vault the run writes (to read a note's status while it is worked)
 * @param {(entry: object) => void} options.log
 * @param {(label: string) => Promise<void> | void} [options.hook] called in the middle of every work and judge call
 * @param {(label: string) => void} [options.failed] called when a try fails on purpose, as the retry's backoff begins
 */
export function makeScript({ vault, log, hook, failed }) {
  /** The visits of the retried note tried in this process: the first try of each fails, so every process that works one backs off. */
  const tried = new Set()
  const work = async (input) => {
    const { node, visit, step, key } = input
    const plan = input.plan ?? ''
    let status
    // A person's editor (an editor trial) may be saving the note in place right now: a status that is not `active` is
    // looked at again for a while, as what a torn read shows passes, and a wrong status stays. The claim's status is
    // written off the hop's path, and into a note saved a moment ago only once the note has settled (a second after its
    // last change, three at most): so the worker looks for longer than that.
    const until = Date.now() + STATUS_PATIENCE_MS
    for (let look = 0; status !== 'active' && (look === 0 || Date.now() < until); look++) {
      if (look > 0) await new Promise((resolve) => setTimeout(resolve, 20))
      try {
        // A subplan's note is in its folder (\`plan\`, relative to the top vault).
        status = statusIn(readFileSync(join(vault, plan, node.file ?? `${node.id}.md`), 'utf8'))
      } catch (error) {
        status = `unreadable: ${error.message}`
      }
    }
    const inputs = input.outputs.map((output) => `${output.node}#${output.visit}`).join(',')
    log({ t: 'work-start', node: node.id, plan, visit, step, key, inputs, status })
    await hook?.(`work ${node.id}#${visit}`)
    const at = `${plan ? `${plan}/` : ''}${node.id}#${visit}`
    if (node.id === RETRIED_NOTE && !tried.has(at)) {
      tried.add(at)
      log({ t: 'work-fail', node: node.id, visit })
      failed?.(`${node.id}#${visit}`)
      throw new Error(`The first try of ${node.id}#${visit} fails in each process (a flaky step).`)
    }
    log({ t: 'work-end', node: node.id, visit })
    // The check that runs next inherits the environment: it logs the visit it checks. Only the checked note sets it
    // (a nested plan's other branch works meanwhile).
    if (node.id === CHECKED_NOTE) process.env.CRASH_VISIT = `${node.id}#${visit}`
    return workOutput(node.id, visit, step)
  }
  const llm = async (prompt, options) => {
    const match = /The output of this visit \(visit (\d+)\):\n<<<DATA-[0-9a-f]+\nWORK node=(\S+) visit=(\d+) step=(\d+)/.exec(prompt)
    if (!match) {
      log({ t: 'violation', what: "judge prompt without this visit's output", prompt: prompt.slice(0, 400) })
      return '1: NO'
    }
    const [, promptVisit, node, visit] = match
    const earlier = [...prompt.matchAll(/An earlier output \(([^,]+), visit (\d+)\):/g)].map((m) => `${m[1]}#${m[2]}`).join(',')
    log({ t: 'judge-start', node, visit: Number(visit), promptVisit: Number(promptVisit), role: options.role, earlier })
    await hook?.(`judge ${node}#${visit}`)
    const reply = judgeReply(node, Number(visit))
    if (reply === undefined) log({ t: 'violation', what: `judge called for \`${node}\`, which has no conditions` })
    log({ t: 'judge-end', node, visit: Number(visit) })
    return reply ?? '1: NO'
  }
  return { work, llm }
}

/** A small seeded random number generator (mulberry32): the same seed, the same trial. */
export function mulberry32(a) {
  return () => {
    a = (a + 0x6d2b79f5) | 0
    let t = Math.imul(a ^ (a >>> 15), 1 | a)
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296
  }
}
