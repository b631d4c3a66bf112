/**
 * The walk of issue 41's figures: a coding agent walks a 7-note plan over
 * MCP, with two subplans run as branches (`web`, `papers`), a loop (the
 * review sends the draft back once) and a note a person decides. Shared by
 * test/mcp-walk.test.ts (calls and characters, through the SDK client) and
 * bench/mcp-agent.mjs (tokens).
 */

/** The plan, as the agent writes it for plan_create: 5 notes at the top, one in each subplan. */
export const WALK_DOCUMENT = `## gather
type: start
plan: [web, papers]
Gather what is known about tide pools, two ways at once.
### Next
- [[draft]]

## web/search
type: start
Search the web for tide pool facts; list five with their sources.

## papers/find
type: start
Find two papers on tide pool ecology; give title, authors, year.

## draft
Write a 300-word post on tide pools from what was gathered.
### Next
- [[review]]

## review
Check the post: accurate, sourced, under 300 words?
### Next
- approved -> [[approve]]
- needs revision -> [[draft]]

## approve
judge: human
The editor approves the post before it goes out.
### Next
- publish -> [[publish]]
- rewrite -> [[draft]]

## publish
Publish the post and report its link: that is the final answer.
`

/** What the agent answers at each note it works, by the note's path. */
const OUTPUTS = {
  'web/search': 'Five facts with sources: zonation, tides twice a day, anemones, sea stars, hermit crabs.',
  'papers/find': 'Two papers: Connell 1961 (Ecology), Paine 1966 (American Naturalist).',
  draft: 'Tide pools hold a small world between the tides: a draft of 290 words.',
  review: 'Accurate and sourced.',
  approve: 'Ready for the editor.',
  publish: 'Published at https://example.com/tide-pools.',
}

/**
 * Walks the plan: plan_create, plan_next, then plan_finish note after note
 * (the review asks for a revision once, then approves), plan_decide for the
 * person's note (which claims nothing) and plan_next to take the note after
 * it, to the end. `call(tool, args)` makes one tool call and resolves its
 * `structuredContent`. Resolves the calls made, in order, and the final step.
 */
export async function walkSeven(call, vault = 'posts/tide-pools') {
  const calls = []
  const made = async (tool, args) => {
    const result = await call(tool, args)
    calls.push({ tool, args, result })
    return result
  }
  await made('plan_create', { vault, document: WALK_DOCUMENT })
  let { step } = await made('plan_next', { vault, query: 'A post on tide pools' })
  let reviews = 0
  while (step.kind === 'work' || step.kind === 'waiting') {
    if (step.kind === 'waiting') {
      await made('plan_decide', { vault, node: step.waiting[0].node, edge: 'publish', feedback: 'Good to go.' })
      ;({ step } = await made('plan_next', { vault }))
      continue
    }
    const path = step.plan ? `${step.plan}/${step.node.id}` : step.node.id
    const choice = path === 'review' ? { choice: reviews++ === 0 ? 'needs revision' : 'approved' } : {}
    ;({ step } = await made('plan_finish', { vault, key: step.key, output: OUTPUTS[path] ?? 'Done.', ...choice }))
  }
  return { calls, step }
}
