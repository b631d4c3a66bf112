import { existsSync, readdirSync } from 'node:fs'
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises'
import { tmpdir } from 'node:os'
import { dirname, join } from 'node:path'
import { afterAll, beforeAll, describe, expect, test } from 'vitest'
import { bin, root, vaultplan } from './helpers/cli.js'

let temp: string

async function vault(name: string, files: Record<string, string>): Promise<string> {
  const dir = join(temp, name)
  for (const [file, text] of Object.entries(files)) {
    await mkdir(dirname(join(dir, file)), { recursive: true })
    await writeFile(join(dir, file), text)
  }
  return dir
}

const VALID = {
  'research.md': '---\ntype: start\ntools: [search]\n---\n# Research\n\nFind three sources.\n\n## Next\n- [[draft]]\n',
  'draft.md': '# Draft\n\nWrite the draft.\n\n## Next\n- [[send]]\n',
  'send.md': '# Send\n\nSend it.\n',
}

// The dangling link sits on line 11, column 21, counting the frontmatter's four lines.
const DANGLING = {
  'review.md':
    '---\ntype: start\nrole: review\n---\n# Review the draft\n\nApproved, or what must change?\n\n## Next\n- approved -> [[send]]\n- needs revision -> [[drfat]]\n',
  'send.md': '# Send\n',
  'draft.md': '# Draft\n\n## Next\n- [[review]]\n',
}

const TWO_ERRORS = {
  'a.md': '---\ntype: start\nmax_visits: zero\n---\n# A\n\n## Next\n- [[b]]\n',
  'b.md': '# B\n\n## Next\n- done -> [[c]]\n- [[ghost]]\n',
  'c.md': '# C\n',
}

const STACK_LINE = /^\s+at /m

beforeAll(async () => {
  if (!existsSync(bin)) throw new Error(`\`${bin}\` is missing; run \`npm run build\` first (\`npm test\` does)`)
  temp = await mkdtemp(join(tmpdir(), 'vaultplan-cli-'))
})

afterAll(async () => {
  if (temp) await rm(temp, { recursive: true, force: true })
})

describe.concurrent('vaultplan validate', () => {
  test('a valid plan: a summary line, exit 0', async () => {
    const dir = await vault('valid', VALID)
    expect(await vaultplan(['validate', dir])).toEqual({ code: 0, stdout: `${dir}: 3 notes, 0 errors, 0 warnings\n`, stderr: '' })
  })

  test('diagnostics name the file from the working directory, with line and column', async () => {
    await vault('vaults/draft-review', DANGLING)
    expect(await vaultplan(['validate', 'vaults/draft-review'], { cwd: temp })).toEqual({
      code: 1,
      stdout: [
        'vaults/draft-review/review.md:11:21 error dangling-edge edge `needs revision` -> `[[drfat]]` matches no note; did you mean `[[draft]]`?',
        'vaults/draft-review: 3 notes, 1 error, 0 warnings',
        '',
      ].join('\n'),
      stderr: '',
    })
  })

  test('run from inside the vault, files are shown bare', async () => {
    const dir = await vault('inside', DANGLING)
    const run = await vaultplan(['validate', '.'], { cwd: dir })
    expect(run.stdout.split('\n')[0]).toBe(
      'review.md:11:21 error dangling-edge edge `needs revision` -> `[[drfat]]` matches no note; did you mean `[[draft]]`?',
    )
    expect(run.stdout.split('\n')[1]).toBe('.: 3 notes, 1 error, 0 warnings')
  })

  test('every error is reported, not only the first', async () => {
    const dir = await vault('two-errors', TWO_ERRORS)
    expect(await vaultplan(['validate', dir])).toEqual({
      code: 1,
      stdout: [
        `${dir}/a.md:3:13 error invalid-frontmatter \`max_visits\` must be an integer from 1 up, got \`"zero"\``,
        `${dir}/b.md:5:3 error dangling-edge edge \`next\` -> \`[[ghost]]\` matches no note`,
        `${dir}: 3 notes, 2 errors, 0 warnings`,
        '',
      ].join('\n'),
      stderr: '',
    })
  })

  test('a plan-wide problem is placed at the vault itself', async () => {
    const dir = await vault('no-start', { 'a.md': '# A\n', 'b.md': '# B\n' })
    const run = await vaultplan(['validate', dir])
    expect(run.code).toBe(1)
    expect(run.stdout.split('\n')[0]).toMatch(new RegExp(`^${dir} error no-start `))
  })

  test('--json prints the issues and nothing else, with the same exit codes', async () => {
    const invalid = await vaultplan(['validate', await vault('json-invalid', TWO_ERRORS), '--json'])
    expect(invalid.code).toBe(1)
    expect(invalid.stderr).toBe('')
    expect(JSON.parse(invalid.stdout)).toEqual({
      valid: false,
      issues: [
        {
          code: 'invalid-frontmatter',
          severity: 'error',
          message: '`max_visits` must be an integer from 1 up, got `"zero"`',
          node: 'a',
          file: 'a.md',
          line: 3,
          column: 13,
        },
        {
          code: 'dangling-edge',
          severity: 'error',
          message: 'edge `next` -> `[[ghost]]` matches no note',
          node: 'b',
          file: 'b.md',
          line: 5,
          column: 3,
        },
      ],
    })

    const valid = await vaultplan(['validate', '--json', await vault('json-valid', VALID)])
    expect(valid.code).toBe(0)
    expect(valid.stderr).toBe('')
    expect(JSON.parse(valid.stdout)).toEqual({ valid: true, issues: [] })
  })

  test('--tools turns unknown tool names into warnings; the plan stays valid', async () => {
    const dir = await vault('tools', VALID)
    expect(await vaultplan(['validate', dir, '--tools', 'fetch_url,calc'])).toEqual({
      code: 0,
      stdout: `${dir}/research.md:3:8 warning unknown-tool names tool \`search\`, which the runner does not have\n${dir}: 3 notes, 0 errors, 1 warning\n`,
      stderr: '',
    })
    expect(await vaultplan(['validate', dir, '--tools', 'calc, search'])).toEqual({
      code: 0,
      stdout: `${dir}: 3 notes, 0 errors, 0 warnings\n`,
      stderr: '',
    })
    expect((await vaultplan(['validate', dir, '--tools', 'calc', '--tools', 'search'])).stdout).toBe(`${dir}: 3 notes, 0 errors, 0 warnings\n`)
  })

  test('a vault path that does not exist: exit 2, the path named, no stack trace', async () => {
    const missing = join(temp, 'no-such-vault')
    const run = await vaultplan(['validate', missing])
    expect(run).toEqual({
      code: 2,
      stdout: '',
      stderr: `vaultplan: \`${missing}\` does not exist; pass the folder that holds the plan's notes\n`,
    })
    expect(run.stderr).not.toMatch(STACK_LINE)
    expect((await vaultplan(['validate', missing, '--json'])).stdout).toBe('')
  })

  test('a vault path that is a file: exit 2, the path named', async () => {
    const dir = await vault('a-file', VALID)
    expect(await vaultplan(['validate', 'research.md'], { cwd: dir })).toEqual({
      code: 2,
      stdout: '',
      stderr: "vaultplan: `research.md` is not a folder; pass the folder that holds the plan's notes\n",
    })
  })
})

describe.concurrent('bad usage: one line of reason and the usage on stderr, exit 2', () => {
  const validateUsage = "Usage: vaultplan validate <dir> [--json] [--tools a,b] [--check ...]\nRun 'vaultplan validate --help' for details.\n"
  const mainUsage = "Usage: vaultplan <command> [options]\nRun 'vaultplan --help' for the commands.\n"

  test.each([
    [['frobnicate'], `vaultplan: unknown command 'frobnicate'\n${mainUsage}`],
    [[], `vaultplan: missing command\n${mainUsage}`],
    [['--frob'], `vaultplan: unknown option '--frob'\n${mainUsage}`],
    [['help', 'frobnicate'], `vaultplan: unknown command 'frobnicate'\n${mainUsage}`],
    [['validate'], `vaultplan: missing the vault folder\n${validateUsage}`],
    [['validate', 'a', 'b'], `vaultplan: expected one argument (the vault folder), got 2: 'a' 'b'\n${validateUsage}`],
    [['validate', '.', '--strict'], `vaultplan: Unknown option '--strict'\n${validateUsage}`],
    [['validate', '.', '--tools'], `vaultplan: Option '--tools <value>' argument missing\n${validateUsage}`],
    // A typo of a command or of an option a command takes: what was meant.
    [['vaildate', '.'], `vaultplan: unknown command 'vaildate'; did you mean 'validate'?\n${mainUsage}`],
    [['rn', '.'], `vaultplan: unknown command 'rn'; did you mean 'run'?\n${mainUsage}`],
    [['help', 'stauts'], `vaultplan: unknown command 'stauts'; did you mean 'status'?\n${mainUsage}`],
    [['validate', '.', '--jsn'], `vaultplan: Unknown option '--jsn'; did you mean '--json'?\n${validateUsage}`],
    [
      ['run', '.', '--querry', 'Announce it'],
      `vaultplan: Unknown option '--querry'; did you mean '--query'?\nUsage: vaultplan run <vault> [--query "..."] [options]\nRun 'vaultplan run --help' for details.\n`,
    ],
  ])('vaultplan %j', async (args, stderr) => {
    expect(await vaultplan(args)).toEqual({ code: 2, stdout: '', stderr })
  })
})

describe.concurrent('help and version', () => {
  test.each([[['--help']], [['-h']], [['help']]])('vaultplan %j lists the commands', async (args) => {
    const run = await vaultplan(args)
    expect(run.code).toBe(0)
    expect(run.stderr).toBe('')
    expect(run.stdout).toMatch(/^Usage: vaultplan <command> \[options\]\n/)
    expect(run.stdout).toMatch(/^ {2}validate +check a plan vault and print every problem$/m)
    expect(run.stdout).toMatch(/^ {2}-v, --version +print the version$/m)
  })

  test.each([[['validate', '--help']], [['validate', 'x', '-h']], [['help', 'validate']]])('vaultplan %j explains validate', async (args) => {
    expect(await vaultplan(args)).toEqual({
      code: 0,
      stdout: `Usage: vaultplan validate <dir> [--json] [--tools a,b] [--check ...]

Checks the plan vault in <dir> and prints every problem, one per line, as
<file>:<line>:<column> <severity> <code> <message>, then a summary line.

Options:
  --json         print {"valid":bool,"issues":[...]} on stdout and nothing else
  --tools a,b    the tools your agent supplies (comma-separated, may be
                 repeated); a note naming another one gets a warning
  --check NAME='CMD'
                 define the check a note's \`check: NAME\` names (may be
                 repeated); else the \`checks\` of vaultplan.config.json in
                 the working folder (refused when that folder is in the
                 vault); a note naming another is an error
  -h, --help     show this help

Exit codes: 0 valid (warnings allowed), 1 the plan has errors,
2 bad usage or a vault path that is not a folder, 70 internal error.
`,
      stderr: '',
    })
  })

  test('--version prints the version of package.json', async () => {
    const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string }
    expect(await vaultplan(['--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
    expect((await vaultplan(['-v'])).stdout).toBe(`${version}\n`)
  })

  test('`vaultplan version`, and a leading `--` as npm hands it on (`npx vaultplan -- --version`)', async () => {
    const { version } = JSON.parse(await readFile(join(root, 'package.json'), 'utf8')) as { version: string }
    expect(await vaultplan(['version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
    expect(await vaultplan(['--', '--version'])).toEqual({ code: 0, stdout: `${version}\n`, stderr: '' })
    expect((await vaultplan(['--', 'version'])).stdout).toBe(`${version}\n`)
    expect(await vaultplan(['version', 'x'])).toEqual({
      code: 2,
      stdout: '',
      stderr: "vaultplan: 'version' takes no arguments, got 'x'\nUsage: vaultplan version\nRun 'vaultplan version --help' for details.\n",
    })
  })
})

describe.concurrent('the example vaults of the repository', () => {
  const folders = (dir: string) =>
    readdirSync(join(root, dir), { withFileTypes: true })
      .filter((entry) => entry.isDirectory())
      .map((entry) => entry.name)
  const examples = folders('vaults').filter((name) => name !== 'broken')
  const broken = folders('vaults/broken')

  test('there are examples of both kinds', () => {
    expect(examples.length).toBeGreaterThan(0)
    expect(broken.length).toBeGreaterThan(0)
  })

  test.each(examples)('vaults/%s is valid', async (name) => {
    const run = await vaultplan(['validate', `vaults/${name}`])
    expect(run).toMatchObject({ code: 0, stderr: '' })
    expect(run.stdout).not.toMatch(/ error /)
  })

  // The folder is named after the code it shows; the code must be in a diagnostic, not just in the path.
  test.each(broken)('vaults/broken/%s fails with that code', async (code) => {
    const run = await vaultplan(['validate', `vaults/broken/${code}`])
    expect(run).toMatchObject({ code: 1, stderr: '' })
    expect(run.stdout).toMatch(new RegExp(`^vaults/broken/${code}\\S* error ${code} `, 'm'))
  })
})
