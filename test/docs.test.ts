import { existsSync, readdirSync, readFileSync } from 'node:fs'
import { dirname, join, relative } from 'node:path'
import { describe, expect, it } from 'vitest'
import { cliPage, renderCliPage } from '../scripts/docs-cli.js'
import { memoryPage, performancePage, renderMemoryPage, renderPerformancePage } from '../scripts/docs-bench.js'
import { mcpPage, renderMcpPage } from '../scripts/docs-mcp.js'
import { readmePage, renderReadme, renderTestingPage, testingPage } from '../scripts/docs-testing.js'
import { root } from './helpers/cli.js'

/*
 * The README and the pages of docs/ as a reader navigates them: a README
 * short enough to read, no link between pages that leads nowhere, and the
 * generated parts as `npm run docs` makes them now.
 */

/** The README and every page of docs/, by path from the repository. */
const pages = [
  'README.md',
  ...readdirSync(join(root, 'docs'))
    .filter((name) => name.endsWith('.md'))
    .map((name) => `docs/${name}`),
]

/** The links of a markdown text outside code (fences and inline code), with their line. */
function linksOf(text: string): { target: string; line: number }[] {
  const links: { target: string; line: number }[] = []
  let fenced = false
  text.split('\n').forEach((line, index) => {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    if (fenced) return
    for (const match of line.replace(/`[^`]*`/g, '').matchAll(/\]\(([^)\s]+)(?:\s+"[^"]*")?\)/g)) links.push({ target: match[1]!, line: index + 1 })
  })
  return links
}

/** The anchors of a page's headings, as GitHub makes them (lower case, punctuation dropped, spaces to hyphens; repeats numbered). */
function anchorsOf(text: string): Set<string> {
  const anchors = new Set<string>()
  const seen = new Map<string, number>()
  let fenced = false
  for (const line of text.split('\n')) {
    if (/^\s*(```|~~~)/.test(line)) fenced = !fenced
    const heading = fenced ? null : /^#{1,6}\s+(.*?)\s*#*\s*$/.exec(line)
    if (!heading) continue
    const base = heading[1]!
      .replace(/`/g, '')
      .toLowerCase()
      .replace(/[^\p{L}\p{N}\s_-]/gu, '')
      .replace(/\s/g, '-')
    const count = seen.get(base) ?? 0
    seen.set(base, count + 1)
    anchors.add(count === 0 ? base : `${base}-${count}`)
  }
  return anchors
}

/** What is wrong with a link of `page`, or `undefined` when it leads somewhere. */
function brokenLink(page: string, target: string): string | undefined {
  if (/^[a-z][a-z0-9+.-]*:/i.test(target)) return undefined
  const [path, anchor] = target.split('#') as [string, string | undefined]
  const file = path === '' ? join(root, page) : join(root, dirname(page), decodeURI(path))
  if (!existsSync(file)) return `${relative(root, file)} does not exist`
  if (anchor === undefined || !file.endsWith('.md')) return undefined
  return anchorsOf(readFileSync(file, 'utf8')).has(decodeURI(anchor)) ? undefined : `${relative(root, file)} has no heading #${anchor}`
}

describe('the README and docs/', () => {
  it('the README is at most 300 lines: the rest lives in docs/', () => {
    const lines = readFileSync(join(root, 'README.md'), 'utf8').split('\n').length
    expect(lines).toBeLessThanOrEqual(300)
  })

  it('every link between pages leads to a file that exists, and to a heading it has', () => {
    const broken = pages.flatMap((page) =>
      linksOf(readFileSync(join(root, page), 'utf8')).flatMap(({ target, line }) => {
        const problem = brokenLink(page, target)
        return problem ? [`${page}:${line} (${target}): ${problem}`] : []
      }),
    )
    expect(broken).toEqual([])
  })

  it('every page of docs/ is reached from the docs index', () => {
    const index = readFileSync(join(root, 'docs/README.md'), 'utf8')
    const linked = new Set(linksOf(index).map(({ target }) => target.split('#')[0]))
    expect(pages.filter((page) => page.startsWith('docs/') && page !== 'docs/README.md' && !linked.has(page.slice('docs/'.length)))).toEqual([])
  })
})

describe('the generated parts of docs/ (npm run docs)', () => {
  it("docs/cli.md's reference is the built CLI's --help, command by command", async () => {
    expect(readFileSync(cliPage, 'utf8')).toBe(await renderCliPage())
  })

  it("docs/performance.md's tables are the committed results of bench/results/", async () => {
    expect(readFileSync(performancePage, 'utf8')).toBe(await renderPerformancePage())
  })

  it("docs/memory.md's search tables are the committed results of bench/results/", async () => {
    expect(readFileSync(memoryPage, 'utf8')).toBe(await renderMemoryPage())
  })

  it("the README's and docs/testing.md's suite times are the committed measurement of scripts/suite-times.mjs", async () => {
    expect(readFileSync(readmePage, 'utf8')).toBe(await renderReadme())
    expect(readFileSync(testingPage, 'utf8')).toBe(await renderTestingPage())
  })

  it("docs/mcp.md's session is the one recorded from the walk test (docs/recorded/mcp-session.json)", async () => {
    expect(readFileSync(mcpPage, 'utf8')).toBe(await renderMcpPage())
  })
})
