import { cp } from 'node:fs/promises'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { formatIssue, runPlan, type RunEvent } from 'vaultplan'
import { issuesOf } from './helpers/issues.js'
import { tempDir, writeVault } from './helpers/vault.js'

/*
 * The README's quick-start plan with one mistake at a time, as a person makes
 * them: each mistake gives one diagnostic, at its cause, with a line, saying
 * what to fix. The lines are what `vaultplan validate plan` prints, without
 * the folder.
 */

const DRAFT = '---\ntype: start\n---\n# Draft the announcement\n\nWrite a short announcement for the release in the query.\n\n## Next\n- [[review]]\n'
const REVIEW =
  '---\nrole: review\nmax_visits: 3\n---\n# Review the draft\n\nApproved, or what must change?\n\n## Next\n- approved -> [[send]]\n- needs revision -> [[draft]]\n'
const SEND = '# Send\n\nSend the approved draft.\n'

/** The quick-start plan with some notes replaced or added. */
function plan(changes: Record<string, string> = {}): Record<string, string> {
  return { 'draft.md': DRAFT, 'review.md': REVIEW, 'send.md': SEND, ...changes }
}

async function lines(files: Record<string, string>, tools?: string[]): Promise<string[]> {
  return (await issuesOf(await writeVault(files), tools)).map(formatIssue)
}

describe('one mistake, one diagnostic, at its cause', () => {
  it('a typo in a link: the dangling edge says which note was meant; no loop, missing terminal or unreachable note besides', async () => {
    expect(await lines(plan({ 'review.md': REVIEW.replace('[[send]]', '[[sned]]') }))).toMatchInlineSnapshot(`
      [
        "review.md:10:15 error dangling-edge edge \`approved\` -> \`[[sned]]\` matches no note; did you mean \`[[send]]\`?",
      ]
    `)
    expect(await lines(plan({ 'send.md': '# Send\n\n## Next\n- [[pubish]]\n', 'publish.md': '# Publish\n' }))).toMatchInlineSnapshot(`
      [
        "send.md:4:3 error dangling-edge edge \`next\` -> \`[[pubish]]\` matches no note; did you mean \`[[publish]]\`?",
      ]
    `)
  })

  it('a link to no note and no likely one: the error alone, and what it cut off is still unreachable', async () => {
    expect(await lines(plan({ 'review.md': REVIEW.replace('[[send]]', '[[mail-it]]') }))).toMatchInlineSnapshot(`
      [
        "review.md:10:15 error dangling-edge edge \`approved\` -> \`[[mail-it]]\` matches no note",
        "send.md warning unreachable cannot be reached from the start node",
      ]
    `)
  })

  it('a loop with no way out (the edge out forgotten): at the edge that keeps its first note in the loop', async () => {
    expect(await lines(plan({ 'review.md': REVIEW.replace('- approved -> [[send]]\n', '') }))).toMatchInlineSnapshot(`
      [
        "draft.md:9:3 error cycle-without-exit is in a loop with no way out (\`draft\`, \`review\`); add an edge that leaves the loop",
        "send.md warning unreachable cannot be reached from the start node",
      ]
    `)
  })

  it('a knob one edit away: a warning, as the key stays the user’s', async () => {
    expect(await lines(plan({ 'review.md': REVIEW.replace('max_visits: 3', 'max_visit: 5') }))).toMatchInlineSnapshot(`
      [
        "review.md:3:12 warning misspelled-knob \`max_visit\` is no knob, so it is kept as a key of yours and does nothing; did you mean \`max_visits\`?",
      ]
    `)
    // Keys of the user's that are no typo of a knob stay silent.
    expect(await lines(plan({ 'review.md': REVIEW.replace('max_visits: 3', 'max_visits: 3\ntags: [release]\ncreated: 2026-12-01') }))).toEqual([])
  })

  it('a label a typo away from one a knob gives meaning to (`passd` beside `check:`, `timout` beside `wait:`): a warning, as the check or the deadline would never take it', async () => {
    const checked = REVIEW.replace('role: review', 'check: test\nretries: 1')
      .replace('- approved ->', '- passd ->')
      .replace('- needs revision ->', '- faild ->')
    const approve = '---\njudge: human\nwait: 2d\n---\n# Approve\n\n## Next\n- [ ] publish -> [[send]]\n- [ ] Timout -> [[send]]\n'
    expect(await lines(plan({ 'review.md': checked.replace('[[send]]', '[[approve]]'), 'approve.md': approve }))).toMatchInlineSnapshot(`
      [
        "approve.md:9:17 warning misspelled-label \`Timout\` is an ordinary condition, not the \`timeout\` that \`wait:\` takes at its deadline, so no deadline takes this edge; did you mean \`timeout\`?",
        "review.md:11:12 warning misspelled-label \`passd\` is an ordinary condition, not the \`passed\` that \`check:\` decides by the check's exit code, so no check result takes this edge; did you mean \`passed\`?",
        "review.md:12:12 warning misspelled-label \`faild\` is an ordinary condition, not the \`failed\` that \`check:\` decides by the check's exit code, so no check result takes this edge; did you mean \`failed\`?",
      ]
    `)
    // The same words are ordinary conditions on a note without those knobs, and the labels themselves (in any case) are no typo.
    expect(await lines(plan({ 'review.md': REVIEW.replace('- approved ->', '- passd ->').replace('- needs revision ->', '- Timout ->') }))).toEqual([])
    expect(await lines(plan({ 'review.md': checked.replace('- passd ->', '- Passed ->').replace('- faild ->', '- failed ->') }))).toEqual([])
  })

  it('a typo in `plan:` beside the subplan’s folder: one error, and the folder’s start is no second start', async () => {
    const research = '---\nplan: reserch\n---\n# Research the release\n\n## Next\n- [[draft]]\n'
    const files = plan({
      'draft.md': '# Draft the announcement\n\n## Next\n- [[review]]\n',
      'research.md': research,
      'research/find.md': '---\ntype: start\n---\n# Find\n\n## Next\n- [[sum-up]]\n',
      'research/sum-up.md': '# Sum up\n',
      'brief.md': '---\ntype: start\n---\n# Brief\n\n## Next\n- [[research]]\n',
    })
    expect(await lines(files)).toMatchInlineSnapshot(`
      [
        "research.md:2:7 error invalid-subplan \`plan: reserch\`: the folder \`reserch/\` is missing or holds no notes; did you mean \`research\`? Else create it with the subplan's notes (or write \`plan: generate\`)",
      ]
    `)
  })

  it('broken YAML in the start note: the YAML error only, no `no-start` (the note may say `type: start`)', async () => {
    expect(await lines(plan({ 'draft.md': DRAFT.replace('type: start', 'type: start\nrole: [writer') }))).toMatchInlineSnapshot(`
      [
        "draft.md:4:1 error invalid-frontmatter invalid YAML: Flow sequence in block collection must be sufficiently indented and end with a ]",
      ]
    `)
    // A genuine missing start is still one: no note is marked and every note has an incoming edge.
    expect(await lines(plan({ 'draft.md': DRAFT.replace('type: start\n', 'role: writer\n') }))).toMatchInlineSnapshot(`
      [
        "<plan> error no-start no note is marked \`type: start\` and every note has an incoming edge; mark the entry note with \`type: start\`",
      ]
    `)
  })

  it('two starts: each at its `type: start` line', async () => {
    expect(await lines(plan({ 'review.md': REVIEW.replace('role: review', 'type: start\nrole: review') }))).toMatchInlineSnapshot(`
      [
        "draft.md:2:7 error multiple-starts 2 notes are marked \`type: start\` (\`draft\`, \`review\`); keep one",
        "review.md:2:7 error multiple-starts 2 notes are marked \`type: start\` (\`draft\`, \`review\`); keep one",
      ]
    `)
  })

  it('a tool the runner does not have: at the `tools:` line, with the likely name', async () => {
    const files = plan({ 'review.md': REVIEW.replace('role: review', 'role: review\ntools: [fetch_ur]') })
    expect(await lines(files, ['fetch_url'])).toMatchInlineSnapshot(`
      [
        "review.md:3:8 warning unknown-tool names tool \`fetch_ur\`, which the runner does not have; did you mean \`fetch_url\`?",
      ]
    `)
    expect(await lines(files, [])).toMatchInlineSnapshot(`
      [
        "review.md:3:8 warning unknown-tool names tool \`fetch_ur\`, which the runner does not have",
      ]
    `)
  })
})

describe('where a run tells its diagnostics', () => {
  it('runPlan tells the plan’s warnings once, before the run: a `tools:` name the built-in worker does not have', async () => {
    const dir = await writeVault({
      'a.md': '---\ntype: start\ntools: [fetch_url, record_fact]\n---\n# A\n\n## Next\n- [[b]]\n',
      'b.md': '# B\n',
    })
    const events: RunEvent[] = []
    const result = await runPlan(dir, { query: 'q', fsync: false, llm: async () => 'done', onEvent: (event) => events.push(event) })
    expect(result.status).toBe('completed')
    expect(events.filter((event) => event.type === 'warnings')).toMatchInlineSnapshot(`
      [
        {
          "issues": [
            {
              "code": "unknown-tool",
              "column": 8,
              "file": "a.md",
              "line": 3,
              "message": "names tool \`fetch_url\`, which the runner does not have",
              "node": "a",
              "severity": "warning",
            },
          ],
          "type": "warnings",
        },
      ]
    `)
    expect(events[0]?.type).toBe('warnings')
    // A caller's own worker has tools of its own: nothing to say.
    const own: RunEvent[] = []
    await runPlan(dir, { query: 'q', fsync: false, fresh: true, work: async () => 'done', onEvent: (event) => own.push(event) })
    expect(own.filter((event) => event.type === 'warnings')).toEqual([])
  })

  it('a PlanValidationError names the folder it found the plan in: the template, or the run vault', async () => {
    const plan = await writeVault({ 'draft.md': DRAFT, 'review.md': REVIEW.replace('[[send]]', '[[sned]]'), 'send.md': SEND })
    const runVault = join(await tempDir(), 'runs/announce')
    const fromTemplate = await runPlan(plan, { query: 'q', fsync: false, runVault, work: async () => 'done' }).catch((error: unknown) => error)
    expect(fromTemplate).toMatchObject({ name: 'PlanValidationError', vault: plan })
    expect((fromTemplate as Error).message.replace(plan, '<plan>')).toMatchInlineSnapshot(`
      "The plan has 1 error:
        <plan>/review.md:10:15 error dangling-edge edge \`approved\` -> \`[[sned]]\` matches no note; did you mean \`[[send]]\`?"
    `)
    await cp(plan, runVault, { recursive: true })
    const fromRunVault = await runPlan(plan, { query: 'q', fsync: false, runVault, work: async () => 'done' }).catch((error: unknown) => error)
    expect(fromRunVault).toMatchObject({ name: 'PlanValidationError', vault: runVault })
    expect((fromRunVault as Error).message.replace(runVault, '<runs/announce>')).toMatchInlineSnapshot(`
      "The plan has 1 error:
        <runs/announce>/review.md:10:15 error dangling-edge edge \`approved\` -> \`[[sned]]\` matches no note; did you mean \`[[send]]\`?"
    `)
  })
})

describe('a folder of the plan that holds a run of its own', () => {
  it('is named as the cause when an edge into it dangles: its notes are left out of the plan', async () => {
    const dir = await writeVault({
      'a.md': '---\ntype: start\n---\n# A\n\nDo a.\n\n## Next\n- [[b]]\n',
      'steps/b.md': '# B\n\nDo b.\n\n## Next\n- [[c]]\n',
      'steps/c.md': '# C\n\nDone.\n',
    })
    expect((await issuesOf(dir)).map(formatIssue)).toEqual([])
    // The person ran the subfolder as a vault of its own: it now holds a run, so it is no longer the plan's.
    expect(await runPlan(join(dir, 'steps'), { query: 'q', work: async () => 'ok', fsync: false })).toMatchObject({ status: 'completed' })
    expect((await issuesOf(dir)).map(formatIssue)).toMatchInlineSnapshot(`
      [
        "a.md:9:3 error dangling-edge edge \`next\` -> \`[[b]]\` matches no note; did you mean \`[[a]]\`? Or is it in \`steps/\`, which holds a run of its own and so is not part of this plan?",
        "steps warning run-folder holds a run of its own (\`steps/00_plan-trace/\`), so its notes are not part of this plan; to make them the plan's again, move \`steps/00_plan-trace/\` out of the plan",
      ]
    `)
  })

  it('says nothing when no edge leads into it (a run vault kept beside the notes)', async () => {
    const dir = await writeVault({ ...plan(), 'runs/one/a.md': '---\ntype: start\n---\n# A\n', 'runs/one/00_plan-trace/trace.md': '' })
    expect((await issuesOf(dir)).map(formatIssue)).toEqual([])
  })
})
