import { spawn } from 'node:child_process'
import { readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { startChatServer, stepOf, type ChatRequest } from './support/chat-server.js'
import { edit, readTree, tempDir } from './helpers/vault.js'
import { bin, vaultplan } from './helpers/cli.js'

const servers: { close(): Promise<void> }[] = []
const children: { kill(): unknown }[] = []
afterEach(async () => {
  for (const child of children.splice(0)) child.kill()
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

const PLAN = '## research\ntype: start\nFind three sources.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft.\n'
const REVISED = '## outline\ntype: start\nOutline first.\n### Next\n- [[draft]]\n\n## draft\nWrite the draft from the outline.\n'

/** The planner writes PLAN, then REVISED; every other call is step work. */
function scripted(): (request: ChatRequest) => string {
  let plans = 0
  return (request) => (/You write plans as one markdown document/.test(request.system) ? ([PLAN, REVISED][plans++] ?? PLAN) : `work for ${stepOf(request)}`)
}

describe('vaultplan propose', () => {
  test('writes a proposal that waits; status says so; a box ticked in the note, then run (no --query), revises and runs it', async () => {
    const model = await startChatServer(scripted())
    servers.push(model)
    const cwd = await tempDir()
    const env = { LLM_MODEL: 'm', LLM_BASE_URL: model.url, NO_COLOR: '1' }
    const proposed = await vaultplan(['propose', 'Write a post', '--into', 'post', '--no-fsync'], { cwd, env })
    expect(proposed.stderr).toBe('')
    expect(proposed.code).toBe(0)
    expect(proposed.stdout).toBe(
      'Proposal v1 written to post.\n\nOpen post/00_plan-trace/proposal.md and tick approve, revise (with what must change under ## Feedback) or decline, then\n  vaultplan run post\n',
    )
    const vault = join(cwd, 'post')
    expect(Object.keys(await readTree(vault))).toEqual(['00_plan-trace/proposal.md', 'draft.md', 'research.md'])

    const status = await vaultplan(['status', 'post'], { cwd, env })
    expect(status.stdout).toContain('post: waiting for a person to approve, revise or decline proposal v1\n')
    expect(status.stdout).toContain('Waiting for a person:\n  proposal (proposal v1) in post/00_plan-trace/proposal.md: choices approve, revise, decline\n')
    expect(status.stdout).toContain(
      'Tick `approve`, `revise` (with what must change under `## Feedback`) or `decline` in `post/00_plan-trace/proposal.md`, then `vaultplan run post`.',
    )

    const waiting = await vaultplan(['run', 'post', '--no-fsync'], { cwd, env })
    expect(waiting.code).toBe(4)
    expect(waiting.stdout).toContain('Waiting: 00_plan-trace/proposal.md (choices: approve, revise, decline)')

    await edit(vault, '00_plan-trace/proposal.md', (text) =>
      text.replace('- [ ] revise', '- [x] revise').replace('## Feedback\n\n', '## Feedback\n\nOutline first.\n'),
    )
    const revised = await vaultplan(['run', 'post', '--no-fsync', '--json'], { cwd, env })
    expect(revised.code).toBe(4)
    expect(JSON.parse(revised.stdout.trimEnd().split('\n').at(-1)!)).toMatchObject({
      type: 'result',
      status: 'waiting',
      waiting: [{ node: 'proposal', file: '00_plan-trace/proposal.md' }],
    })
    expect(await readFile(join(vault, '00_plan-trace/proposals/v1/research.md'), 'utf8')).toContain('Find three sources.')

    await edit(vault, '00_plan-trace/proposal.md', (text) => text.replace('- [ ] approve', '- [x] approve'))
    expect((await vaultplan(['status', 'post'], { cwd, env })).stdout).toContain(
      'Next: Start the run of the approved proposal: `vaultplan run post`. It starts at `outline`.\n',
    )
    const run = await vaultplan(['run', 'post', '--no-fsync'], { cwd, env })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('completed after 2 steps at draft')
    const work = model.requests.filter((request) => request.kind === 'work' && !/You write plans/.test(request.system))
    expect(work.map((request) => stepOf(request))).toEqual(['outline', 'draft'])
    expect(work[0]!.prompt).toContain('Write a post')
  })

  test('run --wait goes on by itself once a person approves the proposal in its note', async () => {
    const model = await startChatServer(scripted())
    servers.push(model)
    const cwd = await tempDir()
    const env = { PATH: process.env.PATH ?? '', LLM_MODEL: 'm', LLM_BASE_URL: model.url, NO_COLOR: '1' }
    await vaultplan(['propose', 'Write a post', '--into', 'post', '--no-fsync'], { cwd, env })
    const child = spawn(process.execPath, [bin, 'run', 'post', '--wait', '--no-fsync'], { cwd, env })
    children.push(child)
    let stdout = ''
    const watching = new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString()
        if (stdout.includes('--wait: watching')) resolve()
      }),
    )
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)))
    await watching
    expect(stdout).toContain('Waiting: Proposal v1 waits for a person')
    await edit(join(cwd, 'post'), '00_plan-trace/proposal.md', (text) => text.replace('- [ ] approve', '- [x] approve'))
    expect(await exited).toBe(0)
    expect(stdout).toContain('completed after 2 steps at draft')
  })

  test('status of a declined proposal says so, and run refuses it', async () => {
    const model = await startChatServer(scripted())
    servers.push(model)
    const cwd = await tempDir()
    const env = { LLM_MODEL: 'm', LLM_BASE_URL: model.url, NO_COLOR: '1' }
    await vaultplan(['propose', 'Write a post', '--into', 'post', '--no-fsync'], { cwd, env })
    await edit(join(cwd, 'post'), '00_plan-trace/proposal.md', (text) => text.replace('- [ ] decline', '- [x] decline'))
    const run = await vaultplan(['run', 'post', '--no-fsync'], { cwd, env })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('was declined: its plan never runs')
    const status = await vaultplan(['status', 'post'], { cwd, env })
    expect(status.stdout).toContain('post: declined: the proposal was declined, its plan never runs\n')
    expect(status.stdout).toContain('Next: The proposal was declined')
  })

  test('a model that fails: exit 1, nothing written', async () => {
    const model = await startChatServer(() => ({ status: 400, body: { error: { message: 'bad request' } } }))
    servers.push(model)
    const cwd = await tempDir()
    const failed = await vaultplan(['propose', 'Write a post', '--into', 'post'], { cwd, env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })
    expect(failed.code).toBe(1)
    expect(failed.stderr).toMatch(/^vaultplan: LLM call for role `planning` failed[\s\S]*\nNothing was written\.\n$/)
    expect(await readTree(cwd)).toEqual({})
  })

  test('--document proposes a plan document the caller wrote, read from a file or stdin, with no model; --wait sets its deadline', async () => {
    const cwd = await tempDir()
    await writeFile(join(cwd, 'plan.md'), PLAN)
    const proposed = await vaultplan(['propose', 'Write a post', '--into', 'post', '--document', 'plan.md', '--wait', '2d', '--no-fsync', '--json'], {
      cwd,
      env: {},
    })
    expect(proposed.stderr).toBe('')
    expect(proposed.code).toBe(0)
    expect(JSON.parse(proposed.stdout)).toMatchObject({ proposal: { version: 1, status: 'pending', planner: 'agent' } })
    const vault = join(cwd, 'post')
    expect(Object.keys(await readTree(vault))).toEqual(['00_plan-trace/proposal.md', 'draft.md', 'research.md'])
    expect(await readFile(join(vault, '00_plan-trace/proposal.md'), 'utf8')).toMatch(/^wait: 2d$/m)

    const early = await vaultplan(['propose', 'Write a post', '--into', 'post', '--document', 'plan.md'], { cwd, env: {} })
    expect(early.code).toBe(2)
    expect(early.stderr).toContain('waits for a person, not sent back with `revise`: nothing was written.')

    // Sent back: the next document, piped in, is version 2.
    await edit(vault, '00_plan-trace/proposal.md', (text) =>
      text.replace('- [ ] revise', '- [x] revise').replace('## Feedback\n\n', '## Feedback\n\nOutline first.\n'),
    )
    const sentBack = await vaultplan(['run', 'post', '--no-fsync'], { cwd, env: {} })
    expect(sentBack.code).toBe(4)
    // It says who goes on, how, and what the person asked; no note was worked, so it names none.
    expect(sentBack.stdout).toContain('\nwaiting after 0 steps\n')
    expect(sentBack.stdout).toContain('`vaultplan propose --document`')
    expect(sentBack.stdout).toContain('Waiting: 00_plan-trace/proposal.md (nothing for a person to tick: it waits for an agent; feedback: Outline first.)')
    const child = spawn(process.execPath, [bin, 'propose', 'Write a post', '--into', 'post', '--document', '-', '--no-fsync'], { cwd, env: {} })
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    child.stdin.end(REVISED)
    expect(await new Promise((done) => child.on('exit', done))).toBe(0)
    expect(stdout).toContain('Proposal v2 written to post.')
    expect(Object.keys(await readTree(vault))).toContain('outline.md')
  })

  test('--document and --wait: a missing file, an invalid document and a bad duration say so and write nothing', async () => {
    const cwd = await tempDir()
    const missing = await vaultplan(['propose', 'Write a post', '--into', 'post', '--document', 'nowhere.md'], { cwd, env: {} })
    expect(missing.code).toBe(2)
    expect(missing.stderr).toContain("vaultplan: cannot read --document 'nowhere.md': no such file\n")
    await writeFile(join(cwd, 'bad.md'), '## research\nFind sources.\n### Next\n- [[nowhere]]\n')
    const invalid = await vaultplan(['propose', 'Write a post', '--into', 'post', '--document', 'bad.md'], { cwd, env: {} })
    expect(invalid.code).toBe(1)
    expect(invalid.stderr).toContain('bad.md: research (line 4:3) error dangling-edge edge `next` -> `[[nowhere]]` matches no note\n')
    expect(invalid.stderr).toContain('vaultplan: the plan document is invalid; fix it and propose again. Nothing was written.\n')
    await writeFile(join(cwd, 'plan.md'), PLAN)
    const badWait = await vaultplan(['propose', 'Write a post', '--into', 'post', '--document', 'plan.md', '--wait', 'soon'], { cwd, env: {} })
    expect(badWait.code).toBe(2)
    expect(badWait.stderr).toContain("vaultplan: --wait takes a duration such as `45s`, `30m`, `4h` or `2d`, at most `365d` (a year), got 'soon'\n")
    expect(Object.keys(await readTree(cwd)).sort()).toEqual(['bad.md', 'plan.md'])
  })

  test('needs --into and a configured model; writes nothing without them', async () => {
    const cwd = await tempDir()
    const noInto = await vaultplan(['propose', 'Write a post'], { cwd, env: {} })
    expect(noInto.code).toBe(2)
    expect(noInto.stderr).toContain('--into DIR is required')
    const noModel = await vaultplan(['propose', 'Write a post', '--into', 'post'], { cwd, env: {} })
    expect(noModel.code).toBe(2)
    expect(noModel.stderr).toContain('Nothing was written')
    expect(await readTree(cwd)).toEqual({})
  })
})
