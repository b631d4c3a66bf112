// How an agent codebase uses vaultplan: your own worker does the work of each
// step (here a toy "agent" function), code decides the conditions it can, and
// the LLM judge is only asked what code cannot decide. Run: npm run example
//
// This example needs no model: every condition of vaults/draft-review is
// decided by a predicate. Remove the predicates and set LLM_BASE_URL /
// LLM_MODEL to let a model judge them instead.
import { mkdtemp } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { runPlan, type StepInput } from 'vaultplan'

/** Stands in for your agent: it gets the step's note and the outputs so far. */
async function myAgent(step: StepInput): Promise<string> {
  const feedback = step.outputs.filter((entry) => entry.node === 'review').at(-1)?.output
  switch (step.node.id) {
    case 'draft':
      return feedback
        ? `Draft v${step.visit}: shorter, upgrade steps moved last (${feedback}).`
        : `Draft v${step.visit}: vaultplan 0.1 runs plans written as notes.`
    case 'review':
      return step.visit === 1 ? 'Needs revision: upgrade steps must come last.' : 'LGTM'
    default:
      return `Sent. Message id <${step.key}>.`
  }
}

const runVault = await mkdtemp(join(tmpdir(), 'vaultplan-example-'))
const result = await runPlan('vaults/draft-review', {
  query: 'Announce vaultplan 0.1',
  runVault, // the plan folder stays a template; the run happens in a copy
  work: myAgent,
  predicates: {
    approved: ({ output }) => output.includes('LGTM'),
    'needs revision': ({ output }) => output.startsWith('Needs revision'),
  },
  onEvent: (event) => {
    if (event.type === 'transition') console.log(`${event.node} -> ${event.edge?.target ?? '(end)'} [${event.decidedBy}]`)
  },
})

console.log(`\n${result.status} after ${result.steps} steps: ${result.output}`)
console.log(`Open ${result.runVault} in Obsidian to see the statuses and the trace.`)
