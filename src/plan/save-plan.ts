import { readFile } from 'node:fs/promises'
import { dirname, resolve } from 'node:path'
import { setFrontmatterStatus } from '../vault/frontmatter.js'
import { makeFolder, writeFileAtomic, type WriteOptions } from '../vault/fs-atomic.js'
import { pathInVault } from '../vault/path-gate.js'
import { LinkResolver } from '../vault/links.js'
import { KNOB_KEYS, KNOBS, type KnobKey } from '../core/knobs.js'
import { lazyModule } from '../core/lazy-module.js'
import { aliasesOf, parseNote, readKnob } from '../vault/parse-note.js'
import { nodeFromNote } from './load-plan.js'
import type { PlanGraph } from './plan-graph.js'
import { subplanTree } from './subplan-tree.js'
import type { PlanIssue, PlanNode } from '../core/types.js'
import { PlanValidationError } from '../core/errors.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'

/**
 * Refuses nodes whose file the loader would not read as a note: a part of
 * the path that is a run folder or starts with a dot. An emitted plan's id
 * `00_plan-trace/trace` would otherwise be written as the run's own trace.
 */
export function reservedPathIssues(nodes: Iterable<{ id: string; file?: string | undefined }>): PlanIssue[] {
  const issues: PlanIssue[] = []
  for (const node of nodes) {
    const file = node.file ?? `${node.id}.md`
    const reserved = file.split(/[\\/]/).find((part) => part === TRACE_FOLDER || (part.startsWith('.') && part !== '.' && part !== '..'))
    if (reserved !== undefined)
      issues.push({
        code: 'not-a-note',
        severity: 'error',
        message: `the node \`${node.id}\` would be written to \`${file}\`, inside \`${reserved}\`, which holds no notes of a plan (a run keeps its own files there); give it another id`,
        node: node.id,
      })
  }
  return issues
}

/**
 * Checks a graph and its subplans before anything is written: no note in a
 * run folder or a dot-folder, no body that would hide its `## Next`.
 */
function checkWritable(graph: PlanGraph): void {
  for (const { folder, vault: plan } of subplanTree(graph)) {
    const within = folder === '' ? '' : `${folder}/`
    const issues = reservedPathIssues([...plan.nodes.values()].map((node) => ({ id: `${within}${node.id}`, file: `${within}${node.file ?? `${node.id}.md`}` })))
    if (issues.length > 0) throw new PlanValidationError(issues)
    for (const node of plan.nodes.values()) {
      // A body that leaves a code fence or an Obsidian `%%` comment open hides the `## Next` written after it.
      if (parseNote(node.file ?? `${node.id}.md`, renderNote(node)).edges.length !== node.edges.length) {
        throw new Error(
          `Cannot save \`${within}${node.id}\`: its body leaves a code fence or an Obsidian \`%%\` comment open, which would hide the \`## Next\` written after it; close it in the body`,
        )
      }
    }
  }
}

/** The YAML writer, loaded when a plan is saved (loading a vault does not need it). */
const yaml = lazyModule<typeof import('yaml')>('yaml')

/**
 * Writes a graph as a vault: one note per node, the notes of its subplans
 * in their folders. A note that already holds
 * the node is left byte for byte as it is; a note whose only change is the
 * status gets just that value patched.
 *
 * @returns the vault's absolute path.
 * @throws `Error` when a node's body leaves a code fence or an Obsidian `%%` comment open: the `## Next` written after it would be hidden.
 * @throws {@link PlanValidationError} `not-a-note` when a node's file would be no note of the plan: inside a run folder
 *   (`00_plan-trace/`, at any depth) or a dot-folder, where the run keeps its own state; nothing is written then
 */
export async function savePlan(graph: PlanGraph, dir: string, options: WriteOptions = {}): Promise<string> {
  checkWritable(graph)
  const vault = resolve(dir)
  // The top vault first: each subplan's folder is made inside the vault that holds it.
  for (const { folder, vault: plan } of subplanTree(graph)) await writeNotes(plan, folder === '' ? vault : await pathInVault(vault, folder), options)
  return vault
}

/** Writes the notes of one plan of a graph checked by `checkWritable` into its folder. */
async function writeNotes(graph: PlanGraph, vault: string, options: WriteOptions): Promise<void> {
  await makeFolder(vault, options)
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
    await makeFolder(dirname(path), options)
    await writeFileAtomic(path, text, options)
  }
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
