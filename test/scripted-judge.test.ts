import { describe, expect, it } from 'vitest'
import { createWorker, runPlan, type CallLLM } from 'vaultplan'
import { scriptedJudge } from 'vaultplan/testing'
import { draftReview } from './helpers/plans.js'
import { scriptedWorker } from './helpers/scripted.js'
import { traceEntries, writeVault } from './helpers/vault.js'

/*
 * `vaultplan/testing`'s scripted judge, as a user writes the tests of a plan with it: the judge's
 * contract (docs/models.md) read from the real prompt, answered as a model must.
 */

const query = 'Announce the release'

describe('scriptedJudge', () => {
  it('answers each judgment with the conditions that hold, as `N: YES|NO` lines, and records what it was asked', async () => {
    const vault = await writeVault(draftReview())
    const llm = scriptedJudge(({ visit }) => (visit === 1 ? 'Needs revision ' : ['approved']))
    const result = await runPlan(vault, { query, fsync: false, llm, work: scriptedWorker((step) => `draft ${step.visit}: **bold**\n\nConditions:\n1. fake`) })
    expect({ status: result.status, visits: result.visits }).toEqual({ status: 'completed', visits: { draft: 2, review: 2, send: 1 } })
    expect(llm.questions.map(({ conditions, step, visit, output, query: asked, role }) => ({ conditions, step, visit, output, query: asked, role }))).toEqual([
      {
        conditions: ['approved', 'needs revision'],
        step: 'Review',
        visit: 1,
        output: 'draft 1: **bold**\n\nConditions:\n1. fake',
        query,
        role: 'transition',
      },
      {
        conditions: ['approved', 'needs revision'],
        step: 'Review',
        visit: 2,
        output: 'draft 2: **bold**\n\nConditions:\n1. fake',
        query,
        role: 'transition',
      },
    ])
    const judged = (await traceEntries(vault)).filter((entry) => entry.decidedBy === 'llm')
    expect(judged.map((entry) => [entry.edge, entry.rationale])).toEqual([
      ['needs revision → [[draft]]', '1: NO\n2: YES\n(scripted judge)'],
      ['approved → [[send]]', '1: YES\n2: NO\n(scripted judge)'],
    ])
  })

  it('a label that is no condition of the question is a mistake of the test, said at once', async () => {
    const llm = scriptedJudge(() => 'aproved')
    const vault = await writeVault(draftReview())
    await expect(runPlan(vault, { query, fsync: false, llm, work: scriptedWorker() })).rejects.toThrow(
      'Expected the labels that hold to be among the conditions `approved`, `needs revision`, got `aproved`',
    )
  })

  it("answers only the judge: the worker's calls go to `otherwise`, or are refused", async () => {
    const worked: string[] = []
    const model: CallLLM = async (prompt) => {
      worked.push(/This step: (.*)/.exec(prompt)?.[1] ?? '')
      return 'done'
    }
    const vault = await writeVault(draftReview())
    const llm = scriptedJudge(() => 'approved', { otherwise: model })
    const result = await runPlan(vault, { query, fsync: false, llm, work: createWorker(llm) })
    expect({ status: result.status, worked }).toEqual({ status: 'completed', worked: ['Draft', 'Review', 'Send'] })

    const alone = scriptedJudge(() => 'approved')
    await expect(alone('Write the draft.', { role: 'action', system: 'You carry out one step of a plan at a time.' })).rejects.toThrow(
      "scriptedJudge answers the judge's calls only, and this call is for the role `action`",
    )
  })
})
