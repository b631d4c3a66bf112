import type { Document, Scalar } from 'yaml'
import { fastPathCounts } from './fast-paths.js'
import { readPlainYaml, readSimpleLine } from './plain-frontmatter.js'
import { lazyModule } from '../core/lazy-module.js'

/** The YAML parser, loaded only for frontmatter the plain reader cannot read (see `readPlainYaml`). */
const yaml = lazyModule<typeof import('yaml')>('yaml')

/** Where the frontmatter of a note sits in its text. */
export interface FrontmatterSplit {
  /** The YAML between the fences, or `undefined` when the note has no YAML frontmatter. */
  yaml: string | undefined
  /** Offset of the first character of the YAML (after the opening fence line). */
  yamlStart: number
  /** 1-based line of the first YAML line in the file. */
  yamlLine: number
  /** Offset of the first character after the closing fence line. */
  contentStart: number
  /** The language named on an opening fence such as `---js`: never evaluated, reported. */
  foreignLanguage?: string
  /** The line ending the note uses. */
  eol: '\n' | '\r\n'
}

/** A problem found while reading frontmatter, with its offset in the file. */
export interface FrontmatterProblem {
  message: string
  line: number
  column: number
}

/** Parsed frontmatter: the data and where each top-level key's value starts. */
export interface Frontmatter {
  split: FrontmatterSplit
  data: Record<string, unknown>
  problems: FrontmatterProblem[]
  /** 1-based line and column of each top-level key's value (or key when it has none). */
  positions: Map<string, { line: number; column: number }>
}

const FENCE = /^---[ \t]*$/
// `---js` names a language (reported, never run); `----` is a thematic break, not a fence.
const OPENING = /^---[ \t]*([A-Za-z][^\r\n]*?)?[ \t]*(\r?\n)/
/** Bounds the work an alias bomb can cause: a real note never needs more. */
const MAX_ALIAS_COUNT = 100

/**
 * Finds the frontmatter the way Obsidian does: a `---` line as the very first
 * line (after an optional BOM) and a closing `---` line. An unclosed fence is
 * not frontmatter. Nothing here interprets the YAML.
 */
export function splitFrontmatter(text: string): FrontmatterSplit {
  const bom = text.startsWith('\uFEFF') ? 1 : 0
  const firstNewline = text.indexOf('\n')
  const eol = firstNewline > 0 && text[firstNewline - 1] === '\r' ? '\r\n' : '\n'
  const none: FrontmatterSplit = { yaml: undefined, yamlStart: bom, yamlLine: 1, contentStart: bom, eol }
  const opening = OPENING.exec(text.slice(bom, bom + 256))
  if (!opening) return none
  const language = (opening[1] ?? '').trim()
  const yamlStart = bom + opening[0].length
  // Only a line that opens with `---` can close it: the scan jumps from one to the next.
  for (let lineStart = yamlStart; lineStart < text.length;) {
    if (text.startsWith('---', lineStart)) {
      let lineEnd = text.indexOf('\n', lineStart)
      if (lineEnd === -1) lineEnd = text.length
      if (FENCE.test(text.slice(lineStart, text[lineEnd - 1] === '\r' ? lineEnd - 1 : lineEnd))) {
        const contentStart = Math.min(lineEnd + 1, text.length)
        if (language !== '') return { ...none, foreignLanguage: language, contentStart }
        return { yaml: text.slice(yamlStart, lineStart), yamlStart, yamlLine: 2, contentStart, eol }
      }
    }
    const next = text.indexOf('\n---', lineStart)
    if (next === -1) break
    lineStart = next + 1
  }
  return none
}

/**
 * Parses a note's frontmatter with the `yaml` package (YAML 1.2: no merge
 * keys, no custom tags, aliases bounded). Never throws: problems come back
 * with positions in the note's own lines.
 */
export function parseFrontmatter(text: string, fast = true): Frontmatter {
  const split = splitFrontmatter(text)
  const result: Frontmatter = { split, data: {}, problems: [], positions: new Map() }
  if (split.foreignLanguage !== undefined) {
    result.problems.push({
      message: `frontmatter in \`${split.foreignLanguage}\` is not supported (only YAML); the block was not evaluated`,
      line: 1,
      column: 1,
    })
    return result
  }
  if (split.yaml === undefined || split.yaml.trim() === '') return result
  const plain = fast ? readPlainYaml(split.yaml, split.yamlLine) : undefined
  if (plain) {
    fastPathCounts.frontmatter++
    result.data = plain.data
    result.positions = plain.positions
    return result
  }
  const { isMap, isScalar, LineCounter, parseDocument } = yaml()
  const lineCounter = new LineCounter()
  const at = (offset: number) => {
    const pos = lineCounter.linePos(offset)
    return { line: split.yamlLine + pos.line - 1, column: pos.col }
  }
  try {
    // yaml's own check of unique keys is quadratic in the number of keys: ours is one pass.
    const doc = parseDocument(split.yaml, { lineCounter, prettyErrors: false, uniqueKeys: false })
    const errors = [...doc.errors.map((error) => ({ message: error.message, offset: error.pos[0] })), ...duplicateKeys(doc)]
    errors.sort((a, b) => a.offset - b.offset)
    for (const error of errors) result.problems.push({ message: `invalid YAML: ${firstLine(error.message)}`, ...at(error.offset) })
    if (errors.length > 0) return result
    const contents = doc.contents
    if (contents === null || (isScalar(contents) && contents.value === null)) return result
    if (!isMap(contents)) {
      result.problems.push({ message: 'frontmatter must be a mapping of keys to values', ...at(contents.range?.[0] ?? 0) })
      return result
    }
    const data = doc.toJS({ maxAliasCount: MAX_ALIAS_COUNT }) as Record<string, unknown>
    result.data = data
    for (const pair of contents.items) {
      const key = isScalar(pair.key) ? String(pair.key.value) : undefined
      if (key === undefined) continue
      const node = (pair.value as Scalar | null)?.range ? (pair.value as Scalar) : (pair.key as Scalar)
      result.positions.set(key, at(node.range?.[0] ?? 0))
    }
  } catch (error) {
    // yaml throws (rather than reporting) on alias bombs and on nesting too deep for the stack.
    result.problems.push({ message: `invalid YAML: ${firstLine(String((error as Error).message ?? error))}`, line: split.yamlLine, column: 1 })
  }
  return result
}

/** Keys repeated in one mapping, anywhere in the document, as yaml's `uniqueKeys` reports them. */
function duplicateKeys(doc: Document): { message: string; offset: number }[] {
  const { isScalar, visit } = yaml()
  const found: { message: string; offset: number }[] = []
  visit(doc, {
    Map(_, map) {
      const seen = new Set<unknown>()
      for (const pair of map.items) {
        const key = isScalar(pair.key) ? pair.key.value : pair.key
        if (seen.has(key)) found.push({ message: 'Map keys must be unique', offset: (pair.key as Scalar | null)?.range?.[0] ?? 0 })
        seen.add(key)
      }
    },
  })
  return found
}

/**
 * Returns `text` with its frontmatter `status:` value set to `status`, every
 * other byte unchanged: comments, key order, quoting style, line endings. A
 * note without frontmatter gains one holding only the status.
 *
 * @throws `Error` when the frontmatter is not a YAML block mapping that can be patched in place.
 */
export function setFrontmatterStatus(text: string, status: string): string {
  return setValue(text, 'status', status, (quote) => `${quote}${status}${quote}`, false)
}

/** A key the patch writes as a line of its own: plain, so it reads back as itself. */
const PLAIN_KEY = /^[A-Za-z_][A-Za-z0-9_-]*$/

/**
 * Returns `text` with its frontmatter key `key` set to the value `source`
 * says, one line of YAML as a person writes it (`review`, `[search, fetch]`,
 * `"a: b"`), every other byte unchanged: comments, the other keys and their
 * order, quoting and flow style, blank lines, line endings. Only the value
 * of `key` is replaced (a comment after it stays); a key the frontmatter
 * lacks becomes its last line, and a note without frontmatter gains one.
 *
 * @throws `Error` when the frontmatter is not a YAML block mapping that can be patched in place (it has a problem,
 *   or the patch would change another value: an alias of this one, a `...` end marker)
 * @throws `TypeError` for a `key` that is not a plain word, or a `source` that is not one line of YAML
 */
export function setFrontmatterValue(text: string, key: string, source: string): string {
  if (!PLAIN_KEY.test(key)) throw new TypeError(`Expected \`key\` to be a plain key such as \`role\`, got \`${key}\``)
  const written = /[\r\n\u2028\u2029]/.test(source) ? undefined : parseFrontmatter(`---\n${key}: ${source}\n---\n`)
  if (!written || written.problems.length > 0 || !Object.hasOwn(written.data, key))
    throw new TypeError(`Expected \`source\` to be one line of YAML, got \`${source}\``)
  return setValue(text, key, written.data[key], () => source.trim(), true)
}

/**
 * Sets `key` to `value` through `write` (given the quote the value had), checking by reading back that nothing else
 * changed; `onKeyLine`: a value on the lines below its key is replaced from the key's line.
 */
function setValue(text: string, key: string, value: unknown, write: (quote: string) => string, onKeyLine: boolean): string {
  const updated = patchValue(text, key, write, onKeyLine)
  const before = readBack(text)
  // A patch that cannot be read back and compared is not made: duplicate keys, an alias bomb ...
  if (before.problem !== undefined) throw new Error(`cannot set \`${key}\`: the frontmatter has a problem (${before.problem}); fix it first`)
  // The patch works on bytes; reading it back catches YAML it cannot handle
  // (a `...` end marker, a value that an alias elsewhere refers to).
  const after = readBack(updated)
  if (after.problem !== undefined || othersOf(before, key) !== othersOf(after, key) || JSON.stringify(after.data[key]) !== JSON.stringify(value)) {
    throw new Error(`cannot set \`${key}\`: this frontmatter cannot be patched in place without changing other values; set \`${key}:\` by hand`)
  }
  return updated
}

/** A note's frontmatter as a patch compares it: its first problem, its values, and per key every other value as JSON. */
interface ReadBack {
  problem: string | undefined
  data: Record<string, unknown>
  others: Map<string, string>
}

/** The last texts read back: a run rewrites the same notes over and over, so the text before a patch is mostly the one after the last. */
const readBacks = new Map<string, ReadBack>()
const READ_BACKS_KEPT = 16

function readBack(text: string): ReadBack {
  const known = readBacks.get(text)
  if (known) return known
  const { data, problems } = parseFrontmatter(text)
  const result = { problem: problems[0]?.message, data, others: new Map<string, string>() }
  readBacks.set(text, result)
  if (readBacks.size > READ_BACKS_KEPT) readBacks.delete(readBacks.keys().next().value!)
  return result
}

/** Every value of a read-back frontmatter but `key`'s, as JSON. */
function othersOf(read: ReadBack, key: string): string {
  let others = read.others.get(key)
  if (others === undefined) read.others.set(key, (others = JSON.stringify({ ...read.data, [key]: undefined })))
  return others
}

function patchValue(text: string, key: string, write: (quote: string) => string, onKeyLine: boolean): string {
  const split = splitFrontmatter(text)
  const { eol } = split
  if (split.foreignLanguage !== undefined) {
    // A second, YAML frontmatter above it would hide the block from every reader.
    throw new Error(`cannot set \`${key}\`: the frontmatter is in \`${split.foreignLanguage}\`, not YAML; rewrite it as YAML`)
  }
  if (split.yaml === undefined) {
    const at = split.yamlStart // after the BOM, if any
    return `${text.slice(0, at)}---${eol}${key}: ${write('')}${eol}---${eol}${text.slice(at)}`
  }
  const closingFence = split.yamlStart + split.yaml.length
  const added = () => `${text.slice(0, closingFence)}${key}: ${write('')}${eol}${text.slice(closingFence)}`
  const simple = patchSimpleValue(text, split, key, write)
  if (simple !== undefined) return simple === 'absent' ? added() : simple
  const { isMap, isScalar, parseDocument } = yaml()
  const doc = parseDocument(split.yaml, { uniqueKeys: false })
  const contents = doc.contents
  if (doc.errors.length > 0) {
    throw new Error(`cannot set \`${key}\`: the frontmatter is not valid YAML (${firstLine(doc.errors[0]!.message)})`)
  }
  if (contents === null || (isScalar(contents) && contents.value === null && !contents.source)) return added()
  if (!isMap(contents) || contents.flow) {
    throw new Error(`cannot set \`${key}\`: the frontmatter is not a block mapping of keys to values`)
  }
  const pair = contents.items.find((item) => isScalar(item.key) && item.key.value === key)
  if (!pair) return added()
  const value = pair.value as Scalar | null
  const range = value?.range
  const colon = text.indexOf(':', split.yamlStart + (pair.key as Scalar).range![1])
  if (!value || !range) return `${text.slice(0, colon + 1)} ${write('')}${text.slice(colon + 1)}`
  let start = split.yamlStart + range[0]
  let end = split.yamlStart + range[1]
  if (range[0] === range[1]) {
    // `key:` with no value, maybe `key: # comment`: keep one space on each side.
    const before = /[ \t]$/.test(text.slice(0, start)) ? '' : ' '
    const after = /^[^\r\n]/.test(text.slice(end)) ? ' ' : ''
    return `${text.slice(0, start)}${before}${write('')}${after}${text.slice(end)}`
  }
  // A block value (`|`, `>`, a `- list`) owns the line breaks after it; they must stay.
  end -= trailingBreaks(text.slice(start, end))
  const quote = value.type === 'QUOTE_DOUBLE' ? '"' : value.type === 'QUOTE_SINGLE' ? "'" : ''
  // A value on the lines below its key (`- a` items) is replaced on the key's line, unless a comment stands between.
  let lead = ''
  if (onKeyLine && /^[ \t]*\r?\n[ \t]*$/.test(text.slice(colon + 1, start))) [start, lead] = [colon + 1, ' ']
  return `${text.slice(0, start)}${lead}${write(quote)}${text.slice(end)}`
}

/**
 * The patch for frontmatter the fast reader can read (plain `key: value`
 * lines): found by line, without the YAML parser. `'absent'` when the key
 * is not there, `undefined` for frontmatter that is not plain.
 */
function patchSimpleValue(text: string, split: FrontmatterSplit, key: string, write: (quote: string) => string): string | 'absent' | undefined {
  const plain = readPlainYaml(split.yaml!, split.yamlLine)
  if (!plain) return undefined
  if (!Object.hasOwn(plain.data, key)) return 'absent'
  let offset = split.yamlStart
  for (const line of split.yaml!.split('\n')) {
    const simple = readSimpleLine(line)
    if (simple?.key === key) {
      const start = offset + simple.valueStart
      const raw = simple.raw
      const quote = raw.startsWith('"') ? '"' : raw.startsWith("'") ? "'" : ''
      return `${text.slice(0, start)}${write(quote)}${text.slice(start + raw.length)}`
    }
    offset += line.length + 1
  }
  return undefined
}

/** The length of the white space ending `text` from its first line break on (what `/[\r\n]\s*$/` matches), found in one scan. */
function trailingBreaks(text: string): number {
  let start = text.length
  while (start > 0 && /\s/.test(text[start - 1]!)) start--
  for (let at = start; at < text.length; at++) if (text[at] === '\r' || text[at] === '\n') return text.length - at
  return 0
}

function firstLine(message: string): string {
  return message.split('\n')[0]!.slice(0, 200)
}
