import { execFile } from 'node:child_process'
import { existsSync } from 'node:fs'
import { mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { join } from 'node:path'
import { Client } from '@modelcontextprotocol/sdk/client/index.js'
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { bin, root } from './helpers/cli.js'

// The package as a user gets it: `npm pack`, then `npm install <tarball>` into a project of their own.

interface Ran {
  code: number | null
  stdout: string
  stderr: string
}

/**
 * The environment a user's shell would have: the npm_* variables that
 * `npm test` sets for its scripts would otherwise steer the npm run here.
 */
const userEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => !/^npm_/i.test(name)))

function run(command: string, args: string[], cwd: string): Promise<Ran> {
  return new Promise((done) => {
    execFile(command, args, { cwd, env: { ...userEnv, NO_COLOR: '1' }, maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      done({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr })
    })
  })
}

let scratch: string
let project: string
let tarball: string
const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string }

beforeAll(async () => {
  if (!existsSync(bin)) throw new Error(`\`${bin}\` is missing; run \`npm run build\` first (\`npm test\` does)`)
  scratch = await mkdtemp(join(tmpdir(), 'vaultplan-pack-'))
  // --ignore-scripts: `prepare` would rebuild dist/ while other test files run it; `npm test` has just built it.
  const packed = await run('npm', ['pack', '--ignore-scripts', '--pack-destination', scratch], root)
  expect(packed).toMatchObject({ code: 0 })
  tarball = join(scratch, packed.stdout.trim().split('\n').at(-1)!)
  project = join(scratch, 'my-agent')
  await mkdir(project)
  await writeFile(join(project, 'package.json'), `${JSON.stringify({ name: 'my-agent', private: true, type: 'module' }, null, 2)}\n`)
  const installed = await run('npm', ['install', tarball, '--prefer-offline', '--no-audit', '--no-fund'], project)
  expect({ code: installed.code, stderr: installed.stderr.replace(/^npm warn .*\n/gm, '') }).toEqual({ code: 0, stderr: '' })
}, 300_000)

afterAll(async () => {
  if (scratch) await rm(scratch, { recursive: true, force: true })
})

describe('the packed package, installed from its tarball into a fresh project', () => {
  test('the tarball holds the build and the manifest, not the sources or tests', async () => {
    const listed = await run('tar', ['-tzf', tarball], scratch)
    const files = listed.stdout.trim().split('\n')
    expect(files).toContain('package/package.json')
    expect(files).toContain('package/dist/index.js')
    expect(files).toContain('package/dist/index.d.ts')
    expect(files).toContain('package/dist/cli.js')
    expect(files).toContain('package/LICENSE')
    // The board's page script and style, served as they are (no build step in the user's path).
    expect(files).toContain('package/assets/board.js')
    expect(files.filter((file) => !/^package\/(dist\/|assets\/board\.(js|css)$|package\.json$|README\.md$|LICENSE$)/.test(file))).toEqual([])
  })

  test('imports from ESM: the public names, and a plan loaded, validated and drawn as SVG', async () => {
    const vault = join(project, 'plan')
    await mkdir(vault)
    await writeFile(join(vault, 'a.md'), '---\ntype: start\n---\n# A\n\n## Next\n- done -> [[b]]\n')
    await writeFile(join(vault, 'b.md'), '# B\n')
    const script = [
      "import * as vaultplan from 'vaultplan'",
      "import { toSvg } from 'vaultplan/pictures'",
      "const graph = await vaultplan.loadPlan('plan')",
      'const svg = await toSvg(graph)',
      'console.log(JSON.stringify({ names: Object.keys(vaultplan).sort(), issues: graph.validate(), svg: svg.includes("<svg") && svg.includes("done") }))',
    ].join('\n')
    await writeFile(join(project, 'try.mjs'), `${script}\n`)
    const ran = await run(process.execPath, ['try.mjs'], project)
    expect(ran.stderr).toBe('')
    expect(JSON.parse(ran.stdout)).toEqual({ names: Object.keys(await import('vaultplan')).sort(), issues: [], svg: true })
  })

  // A TypeScript user need not have @types/node: the declarations name no Node type (`types: []`, and none is
  // installed), and every declaration the import reaches is checked (skipLibCheck off), vaultplan's and its dependencies'.
  test('type-checks a TypeScript file importing it without @types/node, and the types are real (a wrong use is an error)', async () => {
    expect(existsSync(join(project, 'node_modules/@types/node'))).toBe(false)
    await writeFile(
      join(project, 'tsconfig.json'),
      `${JSON.stringify({ compilerOptions: { module: 'nodenext', moduleResolution: 'nodenext', target: 'es2022', strict: true, noEmit: true, skipLibCheck: false, types: [] }, files: ['agent.ts'] }, null, 2)}\n`,
    )
    const agent = [
      "import { createLLM, loadPlan, resolveModelConfig, runPlan, type RunOptions, type RunResult } from 'vaultplan'",
      "import { toCanvas } from 'vaultplan/pictures'",
      "import { scriptedJudge } from 'vaultplan/testing'",
      'const llm = scriptedJudge(({ conditions }) => conditions[0])',
      "const options: RunOptions = { query: 'Announce it', work: async (step) => `did ${step.node.id}`, predicates: { done: () => true }, llm }",
      "const env: Record<string, string | undefined> = { LLM_MODEL: 'm' }",
      "console.log(resolveModelConfig('action', env).model, createLLM({ env }))",
      "const result: RunResult = await runPlan('plan', options)",
      "const canvas = toCanvas(await loadPlan('plan'))",
      'console.log(result.status, canvas.nodes.length)',
      '// @ts-expect-error: `maxSteps` is a number, so a string must not type-check',
      "await runPlan('plan', { maxSteps: 'many' })",
    ].join('\n')
    await writeFile(join(project, 'agent.ts'), `${agent}\n`)
    const checked = await run(join(root, 'node_modules/.bin/tsc'), ['-p', project], project)
    expect(checked).toEqual({ code: 0, stdout: '', stderr: '' })
  }, 120_000)

  test('runs the installed `vaultplan` bin, directly and through npx', async () => {
    expect(await readdir(join(project, 'node_modules/.bin'))).toContain('vaultplan')
    expect(await run(join(project, 'node_modules/.bin/vaultplan'), ['--version'], project)).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
    expect(await run('npx', ['--offline', 'vaultplan', '--version'], project)).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
    expect(await run('npx', ['--offline', 'vaultplan', 'version'], project)).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
    const validated = await run('npx', ['--offline', 'vaultplan', 'validate', 'plan'], project)
    expect(validated).toEqual({ code: 0, stdout: 'plan: 2 notes, 0 errors, 0 warnings\n', stderr: '' })
  }, 120_000)
})

/** The command and arguments each agent's registration in docs/mcp.md starts, as written there. */
async function documentedServers(): Promise<Record<string, { command: string; args: string[] }>> {
  const page = await readFile(join(root, 'docs/mcp.md'), 'utf8')
  const line = (agent: string) => {
    const words = new RegExp(`^${agent} mcp add vaultplan -- (.+)$`, 'm').exec(page)?.[1]?.split(' ')
    if (!words) throw new Error(`docs/mcp.md has no \`${agent} mcp add vaultplan -- ...\` line`)
    return { command: words[0]!, args: words.slice(1) }
  }
  const json = (agent: string) => {
    const text = new RegExp(`\\*\\*${agent}\\*\\*[^]*?\`\`\`json\\n([^]*?)\`\`\``).exec(page)?.[1]
    if (!text) throw new Error(`docs/mcp.md has no ${agent} \`mcp.json\``)
    return JSON.parse(text) as Record<string, Record<string, { command: string; args: string[] }>>
  }
  return { 'Claude Code': line('claude'), Cursor: json('Cursor').mcpServers!.vaultplan!, 'VS Code': json('VS Code').servers!.vaultplan!, Codex: line('codex') }
}

describe('an MCP server for a coding agent, set up as docs/mcp.md says', () => {
  test('the install line names the tarball `npm pack` writes', async () => {
    const page = await readFile(join(root, 'docs/mcp.md'), 'utf8')
    expect(page).toContain(`npm install ../vaultplan/vaultplan-${version}.tgz @modelcontextprotocol/sdk`)
    expect(await readFile(join(root, 'README.md'), 'utf8')).toContain(`npm install ../vaultplan/vaultplan-${version}.tgz`)
  })

  test('without the SDK, `vaultplan mcp` prints the line that installs it where vaultplan finds it, and that line works', async () => {
    const refused = await run(join(project, 'node_modules/.bin/vaultplan'), ['mcp', '--root', '.'], project)
    expect(refused.code).toBe(2)
    const line = /Install it beside vaultplan:\n {2}(.+)\n/.exec(refused.stderr)?.[1]
    expect(line).toBe(`cd ${project} && npm install @modelcontextprotocol/sdk`)
    // From another folder, as a user would paste it; offline from npm's cache, as the rest of the suite.
    const installed = await run('sh', ['-c', `${line} --prefer-offline --no-audit --no-fund`], scratch)
    expect(installed.code).toBe(0)
  }, 120_000)

  test.each(['Claude Code', 'Cursor', 'VS Code', 'Codex'])(
    '%s: the documented registration starts a server that lists the plans, as the agent it names',
    async (agent) => {
      const server = (await documentedServers())[agent]!
      const args = server.args.map((arg) => arg.replaceAll('/path/to/my-agent', project).replaceAll('${workspaceFolder}', project))
      // Each line names the agent its sessions work as.
      expect(args[args.indexOf('--agent') + 1]).toMatch(/^[a-z]+$/)
      const client = new Client({ name: 'package-test', version: '1.0.0' })
      await client.connect(new StdioClientTransport({ command: server.command, args, cwd: project, stderr: 'pipe' }))
      try {
        const { tools } = await client.listTools()
        expect(tools.map((tool) => tool.name)).toEqual(expect.arrayContaining(['plan_next', 'plan_finish', 'plan_status']))
        const listed = await client.callTool({ name: 'plan_list', arguments: {} })
        expect(JSON.stringify(listed.structuredContent)).toContain('"plan"')
      } finally {
        await client.close()
      }
    },
    60_000,
  )
})
