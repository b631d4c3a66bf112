import { spawn } from 'node:child_process'
import { cp, mkdir, readFile, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, test } from 'vitest'
import { startChatServer, stepOf, type ChatRequest } from './support/chat-server.js'
import { readTree, tempDir, writeVault } from './helpers/vault.js'
import { reviewedLoop } from './support/plans.js'
import { bin, root, vaultplan } from './helpers/cli.js'

const servers: { close(): Promise<void> }[] = []
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

function reviewer(request: ChatRequest): string {
  if (request.kind === 'judge') return /\(visit 1\)/.test(request.prompt) ? '1: NO\n2: YES' : '1: YES\n2: NO'
  return `work for ${stepOf(request)}`
}

/** The hops recorded in a vault's trace: `step node visit -> next [decidedBy]`. */
async function hops(vault: string): Promise<string[]> {
  const trace = await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8')
  return [...trace.matchAll(/^<!-- vaultplan:hop (.*) -->$/gm)].map(([, json]) => {
    const hop = JSON.parse(json!) as { kind: string; step: number; node: string; visit: number; next: string | null; decidedBy: string }
    return `${hop.step} ${hop.node} ${hop.visit} -> ${hop.next} [${hop.decidedBy}]`
  })
}

const path = [
  '1 draft 1 -> review [unconditional]',
  '2 review 1 -> draft [llm]',
  '3 draft 2 -> review [unconditional]',
  '4 review 2 -> send [llm]',
  '5 send 1 -> null [terminal]',
]

/** draft -> approve (a person decides) -> send. */
const approvedByAPerson = {
  'draft.md': '---\ntype: start\n---\n# Draft\n\n## Next\n- [[approve]]\n',
  'approve.md': '---\njudge: human\n---\n# Approve\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] rejected -> [[draft]]\n',
  'send.md': '# Send\n',
}

describe('vaultplan run', () => {
  test("the demo's plan: a note naming a tool the CLI's worker does not have is warned about once, at the run vault's file", async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const dir = await tempDir()
    await cp(join(root, 'vaults/draft-review'), join(dir, 'plan'), { recursive: true })
    const run = await vaultplan(['run', 'plan', '--run-vault', 'runs/announce', '--query', 'announce it', '--no-fsync'], {
      cwd: dir,
      env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url },
    })
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout.split('\n').filter((line) => line.includes('warning'))).toMatchInlineSnapshot(`
      [
        "runs/announce/review.md:4:8 warning unknown-tool names tool \`fetch_url\`, which the runner does not have",
        "runs/announce/send.md:3:8 warning unknown-tool names tool \`send_email\`, which the runner does not have",
      ]
    `)
  })

  test('a broken plan: each diagnostic names the file as the user finds it, in the template or in the run vault', async () => {
    const dir = await tempDir()
    await cp(join(root, 'vaults/draft-review'), join(dir, 'plan'), { recursive: true })
    const review = await readFile(join(dir, 'plan/review.md'), 'utf8')
    await writeFile(join(dir, 'plan/review.md'), review.replace('[[send]]', '[[sned]]'))
    const env = { LLM_MODEL: 'm', LLM_BASE_URL: 'http://127.0.0.1:9/v1' }
    const args = ['run', 'plan', '--run-vault', 'runs/announce', '--query', 'announce it', '--no-fsync']
    expect((await vaultplan(args, { cwd: dir, env })).stderr).toMatchInlineSnapshot(`
      "plan/review.md:4:8 warning unknown-tool names tool \`fetch_url\`, which the runner does not have
      plan/review.md:18:15 error dangling-edge edge \`approved\` -> \`[[sned]]\` matches no note; did you mean \`[[send]]\`?
      plan/send.md:3:8 warning unknown-tool names tool \`send_email\`, which the runner does not have
      vaultplan: the plan is invalid; fix the notes above and run again.
      "
    `)
    // A run vault holding a broken copy (a person's edit, say) is named as such.
    await cp(join(dir, 'plan'), join(dir, 'runs/announce'), { recursive: true })
    expect((await vaultplan(args, { cwd: dir, env })).stderr).toMatchInlineSnapshot(`
      "runs/announce/review.md:4:8 warning unknown-tool names tool \`fetch_url\`, which the runner does not have
      runs/announce/review.md:18:15 error dangling-edge edge \`approved\` -> \`[[sned]]\` matches no note; did you mean \`[[send]]\`?
      runs/announce/send.md:3:8 warning unknown-tool names tool \`send_email\`, which the runner does not have
      vaultplan: the plan is invalid; fix the notes above and run again.
      "
    `)
  })

  test('runs a vault hop by hop with the env-configured model and shows progress', async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const vault = await writeVault(reviewedLoop)
    const run = await vaultplan(['run', vault, '--query', 'announce it', '--no-fsync'], { env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })
    expect(run.stderr).toBe('')
    expect(run.code).toBe(0)
    expect(run.stdout).toMatch(/step {3}2 {2}review \(visit 1\) {2}needs revision -> draft {2}\[llm\] {2}\d+\.\ds/)
    expect(run.stdout).toContain('completed after 5 steps at send')
    expect(run.stdout).toContain('work for Send')
    expect(await hops(vault)).toEqual(path)
    // The trace a person reads: the roles and model each hop used, the tokens reported, the answers named.
    const trace = await readFile(join(vault, '00_plan-trace/trace.md'), 'utf8')
    expect(trace).toMatch(
      /## Step 2 · \[\[review\]\] · visit 1\n\n- Edge: needs revision → \[\[draft\]\]\n- Decided by: llm\n- Answers: approved: NO · needs revision: YES\n- Time: started \S+, took [\d.]+ m?s\n- Model: role [\w, ]+, model m, \d+ tokens in, \d+ out\n/,
    )
    const output = await readFile(join(vault, '00_plan-trace/outputs/0002-review.md'), 'utf8')
    expect(output).toMatch(/^---\nvaultplan: output\nrun: \S+\nstep: 2\nvisit: 1\nid: review\nnode: "\[\[review\]\]"\ndigest: [0-9a-f]{16}\n---\n/)

    // Run again: the recorded result, no model call (none is even configured).
    const again = await vaultplan(['run', vault], { env: {} })
    expect(again.code).toBe(0)
    expect(again.stdout).toContain('(resumed)')
    expect(model.requests).toHaveLength(7)
  })

  test('--json prints NDJSON: one event per line, then the result', async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const vault = await writeVault(reviewedLoop)
    const run = await vaultplan(['run', vault, '--query', 'q', '--json', '--max-steps', '3'], { env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })
    expect(run.code).toBe(3)
    const lines = run.stdout
      .trimEnd()
      .split('\n')
      .map((line) => JSON.parse(line) as Record<string, unknown>)
    expect(lines.map((line) => line.type)).toEqual([
      'start',
      'enter',
      'work',
      'transition',
      'enter',
      'work',
      'transition',
      'enter',
      'work',
      'transition',
      'stop',
      'result',
    ])
    const result = lines.at(-1)!
    expect(result).toMatchObject({
      status: 'stopped',
      steps: 3,
      visits: { draft: 2, review: 1 },
      lastNode: 'draft',
      stop: { budget: 'maxSteps', node: 'review', visit: 2 },
    })
    expect(result.reason).toMatch(/maxSteps budget of 3 steps before entering `review`/)
    expect(run.stderr).toBe('')
  })

  test('a budget stop tells a person at the command line to pass a larger --max-steps, not the library’s maxSteps', async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const vault = await writeVault(reviewedLoop)
    const run = await vaultplan(['run', vault, '--query', 'q', '--max-steps', '3', '--no-fsync'], { env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })
    expect(run.code).toBe(3)
    expect(run.stdout).toContain(
      'Budget stop: the run used its --max-steps budget of 3 steps before entering `review` (visit 2). ' +
        'It sits in the loop `draft` -> `review` -> `draft`. Pass a larger `--max-steps` and run the vault again to go on.',
    )
    expect(run.stdout).not.toContain('maxSteps')
    const status = await vaultplan(['status', vault], { env: {} })
    expect(status.stdout).toContain('Pass a larger `--max-steps` and run the vault again to go on.')
    expect(status.stdout).not.toContain('maxSteps')
  })

  test('--json prints one error object when the run fails, and nothing is written without a model', async () => {
    const vault = await writeVault(reviewedLoop)
    const before = await readTree(vault)
    const run = await vaultplan(['run', vault, '--query', 'q', '--json'], { env: {} })
    expect(run.code).toBe(2)
    const lines = run.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(1)
    expect(JSON.parse(lines[0]!)).toMatchObject({ name: 'ModelConfigError', message: expect.stringContaining('LLM_MODEL') })
    // No `active` note, no trace header: a run that cannot work writes nothing.
    expect(await readTree(vault)).toEqual(before)
  })

  test('a completed vault run with another query is refused, naming fresh', async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const vault = await writeVault(reviewedLoop)
    expect((await vaultplan(['run', vault, '--query', 'first', '--no-fsync'], { env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })).code).toBe(0)
    const before = await readTree(vault)
    const again = await vaultplan(['run', vault, '--query', 'second'], { env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })
    expect(again.code).toBe(1)
    expect(again.stderr).toContain('fresh')
    expect(again.stderr).toContain('"first"')
    expect(await readTree(vault)).toEqual(before)
  })

  test('a trace from a newer format is named as the problem, not a missing --query', async () => {
    const vault = await writeVault(reviewedLoop)
    await mkdir(join(vault, '00_plan-trace'), { recursive: true })
    await writeFile(join(vault, '00_plan-trace/trace.md'), '---\nvaultplan: trace\nrun: r\nformat: 9\nquery: q\n---\n')
    const run = await vaultplan(['run', vault], { env: {} })
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('format 9')
    expect(run.stderr).not.toContain('--query')
  })

  test('with no model configured, says which variables to set', async () => {
    const vault = await writeVault(reviewedLoop)
    const run = await vaultplan(['run', vault, '--query', 'q'], { env: {} })
    expect(run.code).toBe(2)
    expect(run.stderr).toContain('LLM_MODEL')
    expect(run.stderr).toContain('LLM_BASE_URL')
    expect(run.stderr).not.toMatch(/\n\s+at /)
  })

  test('Ctrl-C leaves the vault resumable, and running it again goes on', async () => {
    let release: () => void = () => {}
    let reached: () => void = () => {}
    const third = new Promise<void>((resolve) => (reached = resolve))
    let held = false
    const model = await startChatServer(async (request) => {
      // Hold the second draft (step 3) once, long enough to press Ctrl-C.
      if (!held && request.kind === 'work' && stepOf(request) === 'Draft' && request.prompt.includes('Output of an earlier step')) {
        held = true
        reached()
        await new Promise<void>((resolve) => (release = resolve))
      }
      return reviewer(request)
    })
    servers.push(model)
    const vault = await writeVault(reviewedLoop)
    const env = { PATH: process.env.PATH ?? '', LLM_MODEL: 'm', LLM_BASE_URL: model.url }
    const child = spawn(process.execPath, [bin, 'run', vault, '--query', 'q'], { env })
    let stderr = ''
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()))
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)))
    await third
    child.kill('SIGINT')
    const code = await exited
    release()
    expect(code).toBe(130)
    expect(stderr).toContain('Interrupted. The vault is resumable')
    expect(await readFile(join(vault, 'draft.md'), 'utf8')).toContain('status: active')
    expect(await hops(vault)).toEqual(path.slice(0, 2))

    const resumed = await vaultplan(['run', vault], { env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })
    expect(resumed.code).toBe(0)
    expect(await hops(vault)).toEqual(path)
  })

  test('--wait goes on by itself once a person ticks a box in the waiting note', async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const vault = await writeVault(approvedByAPerson)
    const child = spawn(process.execPath, [bin, 'run', vault, '--query', 'q', '--wait', '--no-fsync'], {
      env: { PATH: process.env.PATH ?? '', LLM_MODEL: 'm', LLM_BASE_URL: model.url },
    })
    let stdout = ''
    const waiting = new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString()
        if (stdout.includes('--wait: watching')) resolve()
      }),
    )
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)))
    await waiting
    const note = join(vault, 'approve.md')
    const text = await readFile(note, 'utf8')
    expect(text).toContain('status: waiting')
    await writeFile(note, text.replace('- [ ] approved', '- [x] approved'))
    expect(await exited).toBe(0)
    expect(stdout).toContain('approved -> send  [human]')
    expect(await readFile(note, 'utf8')).toContain('- [ ] approved -> [[send]]')
  })

  test('--wait takes the `timeout` edge by itself at the `wait:` deadline when nobody decides', async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const vault = await writeVault({
      ...approvedByAPerson,
      'approve.md': '---\njudge: human\nwait: 2s\n---\n# Approve\n\n## Next\n- [ ] approved -> [[send]]\n- [ ] timeout -> [[escalate]]\n',
      'escalate.md': '# Escalate\n',
    })
    const child = spawn(process.execPath, [bin, 'run', vault, '--query', 'q', '--wait', '--no-fsync'], {
      env: { PATH: process.env.PATH ?? '', LLM_MODEL: 'm', LLM_BASE_URL: model.url },
    })
    let stdout = ''
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()))
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)))
    // A run that never wakes is ended after a while, so the test fails on the exit, not on its timeout.
    const asleep = setTimeout(() => child.kill('SIGKILL'), 90_000)
    const code = await exited
    clearTimeout(asleep)
    expect(code).toBe(0)
    expect(stdout).toContain('--wait: watching')
    expect(stdout).toContain('timeout -> escalate  [timeout]')
    // The wait is recorded too (a record with no edge).
    expect((await hops(vault)).filter((hop) => !hop.endsWith('[undefined]'))).toEqual([
      '1 draft 1 -> approve [unconditional]',
      '2 approve 1 -> escalate [timeout]',
      '3 escalate 1 -> null [terminal]',
    ])
  })

  test('--wait wakes when a person ticks the box of a note waiting inside a subplan branch', async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const cwd = await tempDir()
    await cp(join(root, 'vaults/research-fanout'), join(cwd, 'plan'), { recursive: true })
    const child = spawn(process.execPath, [bin, 'run', 'plan', '--run-vault', 'run', '--query', 'q', '--wait', '--no-fsync'], {
      cwd,
      env: { PATH: process.env.PATH ?? '', LLM_MODEL: 'm', LLM_BASE_URL: model.url },
    })
    let stdout = ''
    const waiting = new Promise<void>((resolve) =>
      child.stdout.on('data', (chunk: Buffer) => {
        stdout += chunk.toString()
        if (stdout.includes('--wait: watching')) resolve()
      }),
    )
    const exited = new Promise<number>((resolve) => child.on('exit', (code) => resolve(code ?? -1)))
    try {
      await waiting
      const note = join(cwd, 'run/papers/approve.md')
      const text = await readFile(note, 'utf8')
      expect(text).toContain('status: waiting')
      await writeFile(note, text.replace('- [ ] approved', '- [x] approved'))
      // A run that never wakes is ended after a while, so the test fails on the exit, not on its timeout.
      const asleep = setTimeout(() => child.kill('SIGKILL'), 90_000)
      const code = await exited
      clearTimeout(asleep)
      expect(code).toBe(0)
      expect(stdout).toContain('papers/approve (visit 1)  approved -> read  [human]')
      expect(stdout).toContain('completed after 7 steps at report')
    } finally {
      child.kill('SIGKILL')
    }
  })

  test('waiting: names the note and its choices, and does not print its output as a result', async () => {
    const model = await startChatServer(reviewer)
    servers.push(model)
    const vault = await writeVault(approvedByAPerson)
    const run = await vaultplan(['run', vault, '--query', 'q', '--no-fsync'], { env: { LLM_MODEL: 'm', LLM_BASE_URL: model.url } })
    expect(run.code).toBe(4)
    expect(run.stdout).toContain('Waiting: approve.md (choices: approved, rejected)')
    expect(run.stdout).not.toContain('work for Approve')
  })
})
