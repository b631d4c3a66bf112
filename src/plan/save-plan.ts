import { mkdir, readFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { setFrontmatterStatus } from '../vault/frontmatter.js'
import { pathInVault, writeFileAtomic, type WriteOptions } from '../vault/fs-atomic.js'
import { LinkResolver } from '../vault/links.js'
import { KNOB_KEYS, KNOBS, type KnobKey } from '../core/knobs.js'
import { lazyModule } from '../core/lazy-module.js'
import { aliasesOf, parseNote, readKnob } from '../vault/parse-note.js'
import { nodeFromNote } from './load-plan.js'
import type { PlanGraph } from './plan-graph.js'
import type { PlanNode } from '../core/types.js'

/** The YAML writer, loaded when a plan is saved (loading a vault does not need it). */
const yaml = lazyModule<typeof import('yaml')>('yaml')

/**
 * Writes a graph as a vault: one note per node. A note that already holds
 * the node is left byte for byte as it is; a note whose only change is the
 * status gets just that value patched.
 *
 * @returns the vault's absolute path.
 * @throws {Error} when a node's body leaves a code fence or an Obsidian `%%` comment open: the `## Next` written after it would be hidden.
 */
export async function savePlan(graph: PlanGraph, dir: string, options: WriteOptions = {}): Promise<string> {
  const vault = resolve(dir)
  await mkdir(vault, { recursive: true })
  const resolver = new LinkResolver([...graph.nodes.values()].map((node) => ({ id: node.id, aliases: aliasesOf(node.frontmatter) })))
  for (const node of graph.nodes.values()) {
    const file = node.file ?? `${node.id}.md`
    const path = await pathInVault(vault, file)
    let existing: string | undefined
    try {
      existing = await readFile(path, 'utf8')
    } catch {
      // a new note
    }
    let text = renderNote(node)
    // A body that leaves a code fence or an Obsidian `%%` comment open hides the `## Next` written after it.
    if (parseNote(file, text).edges.length !== node.edges.length) {
      throw new Error(
        `Cannot save \`${node.id}\`: its body leaves a code fence or an Obsidian \`%%\` comment open, which would hide the \`## Next\` written after it; close it in the body`,
      )
    }
    if (existing !== undefined) {
      const before = nodeFromNote(parseNote(file, existing), resolver)
      if (sameNode(before, node)) continue
      if (sameNode({ ...before, status: node.status }, node)) {
        try {
          text = setFrontmatterStatus(existing, node.status)
        } catch {
          // frontmatter we cannot patch in place: write the note anew
        }
      }
    }
    await mkdir(dirname(path), { recursive: true })
    await writeFileAtomic(path, text, options)
  }
  return vault
}

/** Renders a node as a note: frontmatter knobs, title, body, `## Next`. */
function renderNote(node: PlanNode): string {
  const data: Record<string, unknown> = { ...node.frontmatter }
  const knob = (key: KnobKey, value: unknown, fallback: unknown) => {
    const read = Object.hasOwn(node.frontmatter, key) ? (readKnob(key, node.frontmatter[key]) ?? fallback) : fallback
    // What the user wrote stays when it already reads as the node's value (`status:` left empty, say).
    if (JSON.stringify(read) === JSON.stringify(value)) return
    if (value === undefined) delete data[key]
    else data[key] = value
  }
  for (const key of KNOB_KEYS) {
    const { field, ...rest } = KNOBS[key]
    knob(key, node[field], 'fallback' in rest ? rest.fallback : undefined)
  }
  let text = Object.keys(data).length > 0 ? `---\n${yaml().stringify(data)}---\n` : ''
  if (node.title !== node.id) text += `# ${escapeInline(node.title)}\n\n`
  if (node.body) text += `${node.body}\n`
  if (node.edges.length > 0) {
    text += `${node.body || node.title !== node.id ? '\n' : ''}## Next\n`
    for (const edge of node.edges) text += edge.label ? `- ${escapeInline(edge.label)} -> [[${edge.target}]]\n` : `- [[${edge.target}]]\n`
  }
  return text
}

/**
 * Escapes a title or label so that markdown reads it back as the same text:
 * emphasis, code, links, HTML and entities, Obsidian's `%%` comments, a closing `#`, and what would
 * open a list, quote or heading at the start of a list item.
 */
function escapeInline(text: string): string {
  return text
    .replace(/[\\`*_[\]<>&#%]/g, '\\$&')
    .replace(/^[-+]/, '\\$&')
    .replace(/^(\d{1,9})([.)])/, '$1\\$2')
}

function sameNode(a: PlanNode, b: PlanNode): boolean {
  const shape = (node: PlanNode) =>
    JSON.stringify([
      node.id,
      node.title,
      node.body,
      node.type,
      node.status,
      node.tools ?? null,
      node.role ?? null,
      node.maxVisits,
      node.judge ?? null,
      node.plan ?? null,
      node.edges.map((edge) => [edge.label, edge.target, edge.conditional]),
      node.frontmatter,
    ])
  return shape(a) === shape(b)
}
