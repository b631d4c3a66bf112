import { execFile, spawn } from 'node:child_process'
import { readFile, rm, writeFile } from 'node:fs/promises'
import { join } from 'node:path'
import { afterEach, describe, expect, it } from 'vitest'
import { root, vaultplan } from './helpers/cli.js'
import { tempDir } from './helpers/vault.js'

/** Run vaults the scripts made under runs/, removed after each test. */
const made: string[] = []
afterEach(async () => {
  await Promise.all(made.splice(0).map((dir) => rm(join(root, dir), { recursive: true, force: true })))
})

/** Runs an example script as the README says, with no model configured (so with the stand-in); the run vault it names is noted for removal. */
function example(script: string): Promise<{ code: number | null; stdout: string; runVault: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [script], { cwd: root, env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' } }, (error, stdout) => {
      const runVault = /runs\/[a-z]+-\d{8}-\d{6}/.exec(stdout)?.[0] ?? ''
      if (runVault) made.push(runVault)
      done({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, runVault })
    })
  })
}

describe('the example scripts (the README’s main job)', () => {
  it('`npm run demo` runs vaults/draft-review to the end with the stand-in model and leaves the plan untouched', async () => {
    const before = await readFile(join(root, 'vaults/draft-review/draft.md'), 'utf8')
    const run = await example('examples/demo.mjs')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('No LLM_BASE_URL set: using the scripted stand-in model at http://127.0.0.1:')
    expect(run.stdout).toMatch(/completed after \d+ steps at send/)
    expect(await readFile(join(root, run.runVault, '00_plan-trace/final.md'), 'utf8')).not.toBe('')
    expect(await readFile(join(root, 'vaults/draft-review/draft.md'), 'utf8')).toBe(before)
  })

  it('`npm run demo` tells a story: each draft differs from the last, and the review says why it asks for a revision, which the judge gives as its reason', async () => {
    const run = await example('examples/demo.mjs')
    expect(run.code).toBe(0)
    const outputs = join(root, run.runVault, '00_plan-trace/outputs')
    const body = async (file: string) => (await readFile(join(outputs, file), 'utf8')).replace(/^---\n[\s\S]*?\n---\n/, '')
    const query = 'Announce vaultplan 0.1: plans as Obsidian vaults, resumable runs.'
    expect(await Promise.all(['0001-draft.md', '0002-review.md', '0003-draft.md', '0004-review.md'].map(body))).toEqual([
      `[stand-in model] Draft the announcement, version 1, for "${query}". A real model would do the work the note describes here.`,
      // The first point of the review note's own checklist.
      '[stand-in model] Needs revision: version 1 of "Draft the announcement" is still general; check that every claim about the release matches the changelog.',
      '[stand-in model] Draft the announcement, version 2: revised after the review, which asked to check that every claim about the release matches the changelog; this version does.',
      '[stand-in model] Approved: version 2 of "Draft the announcement" addresses what the review asked.',
    ])
    const trace = await readFile(join(root, run.runVault, '00_plan-trace/trace.md'), 'utf8')
    expect(trace).toContain(
      '> 1: NO\n> 2: YES\n> The review asks for a revision: version 1 of "Draft the announcement" is still general; check that every claim about the release matches the changelog.\n',
    )
  })

  it('`npm run demo` echoes a command a person in the clone can paste, and suggests the commands `status` suggests too', async () => {
    const run = await example('examples/demo.mjs')
    expect(run.code).toBe(0)
    // The query has spaces and a colon: a shell needs it quoted.
    expect(run.stdout).toContain(
      `$ node dist/cli.js run vaults/draft-review --run-vault ${run.runVault} --query 'Announce vaultplan 0.1: plans as Obsidian vaults, resumable runs.'\n`,
    )
    expect(run.stdout).toContain(`\`node dist/cli.js status ${run.runVault}\` tells where it stands.`)
    // The status the demo points to suggests the next command the same way.
    const status = await new Promise<string>((done) =>
      execFile(process.execPath, ['dist/cli.js', 'status', run.runVault], { cwd: root, env: { PATH: process.env.PATH ?? '', NO_COLOR: '1' } }, (_, stdout) =>
        done(stdout),
      ),
    )
    expect(status).toContain(`or start over with \`node dist/cli.js run ${run.runVault} --fresh\`.`)
    expect(status).not.toContain('vaultplan run')
  })

  it('`npm run demo` names the command that shows its run on the board, and that board lists the run, completed', async () => {
    const run = await example('examples/demo.mjs')
    expect(run.code).toBe(0)
    const command = /`node dist\/cli\.js (board [^`]*)` shows it on the board/.exec(run.stdout)?.[1]
    expect(command).toBe('board --root runs --open')
    // As printed, but without --open (a test opens no browser) and on a free port.
    const child = spawn(process.execPath, ['dist/cli.js', ...command!.replace(' --open', '').split(' '), '--http', '127.0.0.1:0'], {
      cwd: root,
      stdio: ['ignore', 'pipe', 'ignore'],
    })
    try {
      const url = await new Promise<string>((done) => {
        let text = ''
        child.stdout.setEncoding('utf8')
        child.stdout.on('data', (chunk: string) => {
          text += chunk
          if (text.includes('\n')) done(text.slice('board: '.length, text.indexOf('\n')))
        })
      })
      const opened = await fetch(url, { redirect: 'manual' })
      const cookie = opened.headers.get('set-cookie')!.split(';')[0]!
      const page = await (await fetch(new URL('/?tab=completed', url), { headers: { cookie } })).text()
      const name = run.runVault.slice('runs/'.length)
      expect(page).toContain(`<a href="/run?vault=${name}">${name}</a></td><td><span class="phase phase-completed">completed</span>`)
    } finally {
      child.kill('SIGTERM')
    }
  })

  it('examples/research-fanout.mjs waits inside a branch, ticks the approval and completes', async () => {
    const run = await example('examples/research-fanout.mjs')
    expect(run.code).toBe(0)
    expect(run.stdout).toContain('Waiting: papers/approve.md')
    expect(run.stdout).toContain('(ticked "approved" in')
    expect(run.stdout).toContain('completed after 7 steps at report')
  })

  it('with the stand-in model, `vaultplan propose` writes a plan of four notes that validates, and runs once approved', async () => {
    const { startStandInModel } = (await import('../examples/stand-in-model.mjs' as string)) as {
      startStandInModel(): Promise<{ url: string; close(): Promise<void> }>
    }
    const model = await startStandInModel()
    try {
      const cwd = await tempDir()
      const env = { LLM_BASE_URL: model.url, LLM_MODEL: 'stand-in', NO_COLOR: '1' }
      expect(await vaultplan(['propose', 'Write a post about tide pools', '--into', 'post'], { cwd, env })).toMatchObject({ code: 0 })
      const proposal = join(cwd, 'post/00_plan-trace/proposal.md')
      const text = await readFile(proposal, 'utf8')
      expect(text).toContain('notes: ["research.md","draft.md","review.md","publish.md"]')
      expect(text).not.toMatch(/degraded|not a valid plan/)
      await writeFile(proposal, text.replace('- [ ] approve', '- [x] approve'))
      const run = await vaultplan(['run', 'post'], { cwd, env })
      expect(run.code).toBe(0)
      expect(run.stdout).toContain('review (visit 1)  the draft needs work -> draft')
      expect(run.stdout).toContain('completed after 6 steps at publish')
    } finally {
      await model.close()
    }
  })
})
