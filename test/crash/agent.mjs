// One agent of an agent trial (agents.mjs), run inside the crash child
// (child.mjs), whose wrapped file calls give the kill points and the power
// model: a loop of nextStep/completeStep under its own `agent` name with a
// short lease, until the run completes. It works what it claims with a
// deterministic worker that sometimes takes longer than the lease (so the
// other agent takes the claim over), retries `busy` and `vault-locked`
// answers after a short sleep, and on `stale-step` (the other agent
// completed the key first) or `claimed` (the other agent took the claim
// over and holds it) asks for its next step; an answer `saved: true` (the
// other agent completed the key first with the same output) completed
// nothing of its own. The power model (a child
// whose kill is a power cut) forgets at each library call's start and end:
// the other agent writes the same files between this one's calls, and the
// model knows only this process's writes, so a cut loses only what the call
// under way had not flushed.
//
// Side-log entries (as `{ a, t, agent, ... }`): claim, work-start, completed,
// saved, stale, claimed, busy, locked, violation.
import { readFileSync } from 'node:fs'
import { join } from 'node:path'
import { statusIn } from './vault.mjs'

export const AGENT_QUERY = 'Survey crash-safe note taking'
export const AGENT_MAX_STEPS = 20

/** The worker's output for a visit: deterministic, with CRLF and non-ASCII text to carry through. */
export function agentOutput(plan, node, visit) {
  return `WORK ${plan ? `${plan}/` : ''}${node} visit=${visit}\nThe ${node} notes — café, naïve.\r\nSecond line.\n`
}

/**
 * Runs the agent to the run's end; exits the process (RESULT, or ERROR with
 * anything unexpected). `forget()` tells the power model to take what was
 * written so far as on the disk.
 */
export async function runAgent({ config, lib, line, side, point, random, forget, ops }) {
  const { vault, agent, leaseMs } = config
  const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms))
  const llm = async () => {
    side({ t: 'violation', agent, what: 'the judge was called in a plan without conditions' })
    return '1: NO'
  }
  const options = { fsync: true, agent, leaseMs, maxSteps: AGENT_MAX_STEPS, llm }
  /** A library call, run again while another process holds the vault (`vault-locked`). */
  const call = async (what, fn) => {
    for (;;) {
      forget()
      try {
        return await fn()
      } catch (error) {
        if (error?.code !== 'vault-locked') throw error
        side({ t: 'locked', agent, what })
      } finally {
        forget()
      }
      await sleep(5 + random() * 30)
    }
  }
  const next = () => call('next', () => lib.nextStep(vault, { ...options, query: AGENT_QUERY }))

  line('READY')
  try {
    let step = await next()
    for (;;) {
      if (step.kind === 'busy') {
        side({ t: 'busy', agent, claims: step.claims.map((item) => `${item.node}#${item.visit}@${item.claim?.agent ?? '-'}`) })
        await sleep(20 + random() * 40)
        step = await next()
        continue
      }
      if (step.kind === 'completed') break
      if (step.kind !== 'work') throw new Error(`unexpected step ${JSON.stringify(step)}`)
      const plan = step.plan ?? ''
      const at = `${plan ? `${plan}/` : ''}${step.node.id}#${step.visit}`
      const { key, visit } = step
      side({ t: 'claim', agent, key, plan, node: step.node.id, visit })
      line(`EV claim ${at}`)
      let status
      try {
        status = statusIn(readFileSync(join(vault, plan, step.node.file ?? `${step.node.id}.md`), 'utf8'))
      } catch (error) {
        status = `unreadable: ${error.message}`
      }
      side({ t: 'work-start', agent, key, plan, node: step.node.id, visit, status })
      line(`W+ ${at}`)
      // Mostly a few milliseconds; a tenth of the works take about the lease or longer, and the other agent may take the claim over.
      await sleep(random() < 0.1 ? leaseMs * (0.7 + random()) : random() * 15)
      await point(`work ${at}`)
      line(`W- ${at}`)
      try {
        step = await call('complete', () => lib.completeStep(vault, key, { output: agentOutput(plan, step.node.id, visit) }, options))
        side({ t: step.saved ? 'saved' : 'completed', agent, key })
      } catch (error) {
        if (error?.code !== 'stale-step' && error?.code !== 'claimed') throw error
        side({ t: error.code === 'claimed' ? 'claimed' : 'stale', agent, key })
        step = await next()
      }
    }
    line(`OPS ${ops()}`)
    line(`RESULT ${JSON.stringify(step)}`)
    process.exit(0)
  } catch (error) {
    line(`OPS ${ops()}`)
    line(`ERROR ${JSON.stringify({ name: error?.name, code: error?.code, message: String(error?.message ?? error), stack: String(error?.stack ?? '') })}`)
    process.exit(1)
  }
}
