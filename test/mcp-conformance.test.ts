import { execFile } from 'node:child_process'
import { join } from 'node:path'
import { describe, expect, it } from 'vitest'
import { bin, root as repository } from './helpers/cli.js'
import { httpServer } from './helpers/mcp.js'
import { writeVault } from './helpers/vault.js'
import { draftReview } from './helpers/plans.js'

/** Runs a Node script of an installed package and resolves to its exit code and output. */
function node(script: string, args: string[], cwd: string): Promise<{ code: number | null; stdout: string; stderr: string }> {
  return new Promise((done) => {
    execFile(process.execPath, [script, ...args], { cwd, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr })
    })
  })
}

const modules = join(repository, 'node_modules', '@modelcontextprotocol')

describe('vaultplan mcp against the MCP tools of others', () => {
  it("passes @modelcontextprotocol/conformance's server scenarios but those needing the suite's own fixtures", async () => {
    const server = await httpServer(await writeVault({ ...prefix('blog/', draftReview()) }))
    const expected = join(repository, 'test', 'mcp', 'conformance-expected-failures.yaml')
    const run = await node(join(modules, 'conformance', 'dist', 'index.js'), ['server', '--url', server.url, '--expected-failures', expected], repository)
    const summary = run.stdout.slice(run.stdout.indexOf('=== SUMMARY ==='))
    expect(summary, run.stdout + run.stderr).toContain('Baseline check passed: all failures are expected.')
    for (const scenario of [
      'server-initialize',
      'ping',
      'logging-set-level',
      'tools-list',
      'resources-list',
      'resources-subscribe',
      'resources-unsubscribe',
      'prompts-list',
      'dns-rebinding-protection',
    ]) {
      expect(summary).toMatch(new RegExp(`✓ ${scenario}: \\d+ passed, 0 failed`))
    }
    expect(run.code).toBe(0)
  }, 240_000)

  it("answers the MCP inspector's CLI over stdio: tools/list and a tools/call", async () => {
    const root = await writeVault(prefix('blog/', draftReview()))
    // The inspector reads its own version from ../package.json of its working folder: start it one folder down.
    const cwd = join(repository, 'test')
    const inspector = join(modules, 'inspector-cli', 'build', 'cli.js')
    const server = ['--cli', process.execPath, bin, 'mcp', '--root', root]

    const list = await node(inspector, [...server, '--method', 'tools/list'], cwd)
    expect(list.code, list.stderr).toBe(0)
    expect(JSON.parse(list.stdout).tools.map((tool: { name: string }) => tool.name)).toContain('plan_next')

    const call = await node(inspector, [...server, '--method', 'tools/call', '--tool-name', 'plan_validate', '--tool-arg', 'vault=blog'], cwd)
    expect(call.code, call.stderr).toBe(0)
    expect(JSON.parse(call.stdout).structuredContent).toEqual({ vault: 'blog', valid: true, errors: 0, warnings: 0, issues: [] })
  })
})

function prefix(folder: string, files: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(files).map(([file, text]) => [`${folder}${file}`, text]))
}
