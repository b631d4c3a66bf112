import type { Document, Scalar } from 'yaml'
import { fastPathCounts } from './fast-paths.js'
import { lazyModule } from '../core/lazy-module.js'

/** The YAML parser, loaded only for frontmatter the plain reader cannot read (see `readSimpleYaml`). */
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
  if (fast && readSimpleYaml(split, result)) {
    fastPathCounts.frontmatter++
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
  const updated = patchStatus(text, status)
  const before = readBack(text)
  // A patch that cannot be read back and compared is not made: duplicate keys, an alias bomb ...
  if (before.problem !== undefined) throw new Error(`cannot set \`status\`: the frontmatter has a problem (${before.problem}); fix it first`)
  // The patch works on bytes; reading it back catches YAML it cannot handle
  // (a `...` end marker, a status value that an alias elsewhere refers to).
  const after = readBack(updated)
  if (after.problem !== undefined || before.others !== after.others || after.status !== status) {
    throw new Error('cannot set `status`: this frontmatter cannot be patched in place without changing other values; set `status:` by hand')
  }
  return updated
}

/** A note's frontmatter as `setFrontmatterStatus` compares it: its first problem, its status and every other value (as JSON). */
interface ReadBack {
  problem: string | undefined
  status: unknown
  others: string
}

/** The last texts read back: a run rewrites the same notes over and over, so the text before a patch is mostly the one after the last. */
const readBacks = new Map<string, ReadBack>()
const READ_BACKS_KEPT = 16

function readBack(text: string): ReadBack {
  const known = readBacks.get(text)
  if (known) return known
  const { data, problems } = parseFrontmatter(text)
  const result = { problem: problems[0]?.message, status: data.status, others: JSON.stringify({ ...data, status: undefined }) }
  readBacks.set(text, result)
  if (readBacks.size > READ_BACKS_KEPT) readBacks.delete(readBacks.keys().next().value!)
  return result
}

function patchStatus(text: string, status: string): string {
  const split = splitFrontmatter(text)
  const { eol } = split
  if (split.foreignLanguage !== undefined) {
    // A second, YAML frontmatter above it would hide the block from every reader.
    throw new Error(`cannot set \`status\`: the frontmatter is in \`${split.foreignLanguage}\`, not YAML; rewrite it as YAML`)
  }
  if (split.yaml === undefined) {
    const at = split.yamlStart // after the BOM, if any
    return `${text.slice(0, at)}---${eol}status: ${status}${eol}---${eol}${text.slice(at)}`
  }
  const closingFence = split.yamlStart + split.yaml.length
  const simple = patchSimpleStatus(text, split, status)
  if (simple !== undefined) return simple
  const { isMap, isScalar, parseDocument } = yaml()
  const doc = parseDocument(split.yaml, { uniqueKeys: false })
  const contents = doc.contents
  if (doc.errors.length > 0) {
    throw new Error(`cannot set \`status\`: the frontmatter is not valid YAML (${firstLine(doc.errors[0]!.message)})`)
  }
  if (contents === null || (isScalar(contents) && contents.value === null && !contents.source)) {
    return `${text.slice(0, closingFence)}status: ${status}${eol}${text.slice(closingFence)}`
  }
  if (!isMap(contents) || contents.flow) {
    throw new Error('cannot set `status`: the frontmatter is not a block mapping of keys to values')
  }
  const pair = contents.items.find((item) => isScalar(item.key) && item.key.value === 'status')
  if (!pair) {
    return `${text.slice(0, closingFence)}status: ${status}${eol}${text.slice(closingFence)}`
  }
  const value = pair.value as Scalar | null
  const range = value?.range
  if (!value || !range) {
    const keyEnd = split.yamlStart + (pair.key as Scalar).range![1]
    const colon = text.indexOf(':', keyEnd)
    return `${text.slice(0, colon + 1)} ${status}${text.slice(colon + 1)}`
  }
  const start = split.yamlStart + range[0]
  let end = split.yamlStart + range[1]
  if (range[0] === range[1]) {
    // `status:` with no value, maybe `status: # comment`: keep one space on each side.
    const before = /[ \t]$/.test(text.slice(0, start)) ? '' : ' '
    const after = /^[^\r\n]/.test(text.slice(end)) ? ' ' : ''
    return `${text.slice(0, start)}${before}${status}${after}${text.slice(end)}`
  }
  // A block value (`|`, `>`, a `- list`) owns the line breaks after it; they must stay.
  end -= trailingBreaks(text.slice(start, end))
  const quote = value.type === 'QUOTE_DOUBLE' ? '"' : value.type === 'QUOTE_SINGLE' ? "'" : ''
  return `${text.slice(0, start)}${quote}${status}${quote}${text.slice(end)}`
}

/**
 * The patch for frontmatter the fast reader can read (plain `key: value`
 * lines): found by line, without the YAML parser. `undefined` for anything else.
 */
function patchSimpleStatus(text: string, split: FrontmatterSplit, status: string): string | undefined {
  const probe: Frontmatter = { split, data: {}, problems: [], positions: new Map() }
  if (!readSimpleYaml(split, probe)) return undefined
  const closingFence = split.yamlStart + split.yaml!.length
  if (!Object.hasOwn(probe.data, 'status')) return `${text.slice(0, closingFence)}status: ${status}${split.eol}${text.slice(closingFence)}`
  let offset = split.yamlStart
  for (const line of split.yaml!.split('\n')) {
    const simple = readSimpleLine(line)
    if (simple?.key === 'status') {
      const start = offset + simple.valueStart
      const raw = simple.raw
      const quote = raw.startsWith('"') ? '"' : raw.startsWith("'") ? "'" : ''
      return `${text.slice(0, start)}${quote}${status}${quote}${text.slice(start + raw.length)}`
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

/**
 * A `key: value` line: the key (`[A-Za-z_][A-Za-z0-9_-]*`, then `:` and at
 * least one space), where the value starts and the value as written,
 * without a trailing `# comment` and white space. `undefined` for any other
 * line. A scan of character codes, not a pattern: `(.*?)[ \t]*$` is
 * quadratic in a long run of white space, and a load reads every line.
 */
function readSimpleLine(line: string): { key: string; valueStart: number; raw: string } | undefined {
  if (!isKeyStart(line.charCodeAt(0))) return undefined
  let colon = 1
  while (isKeyChar(line.charCodeAt(colon))) colon++
  if (line.charCodeAt(colon) !== 0x3a || line.charCodeAt(colon + 1) !== 0x20) return undefined
  let valueStart = colon + 2
  while (line.charCodeAt(valueStart) === 0x20) valueStart++
  const end = line.endsWith('\r') ? Math.max(valueStart, line.length - 1) : line.length
  let valueEnd = end
  for (let at = valueStart; at < end; at++) {
    const code = line.charCodeAt(at)
    // `.` stops at these: the pattern this replaces did not read such lines.
    if (code === 0x0d || code === 0x2028 || code === 0x2029) return undefined
    // A comment starts at a `#` after white space; a `#` inside quotes is left to the YAML parser (the value then does not read as simple).
    if (code === 0x23 && valueEnd === end && at > valueStart && isBlank(line.charCodeAt(at - 1))) valueEnd = at - 1
  }
  while (valueEnd > valueStart && isBlank(line.charCodeAt(valueEnd - 1))) valueEnd--
  return { key: line.slice(0, colon), valueStart, raw: line.slice(valueStart, valueEnd) }
}

/** Whether a character (by code) can follow in a plain key: a letter, a digit, `_` or `-`. */
function isKeyChar(code: number): boolean {
  return isKeyStart(code) || (code >= 0x30 && code <= 0x39) || code === 0x2d
}

function isBlank(code: number): boolean {
  return code === 0x20 || code === 0x09
}
/** A plain scalar the fast reader reads as YAML does: a small integer, a quoted string without escapes, a date (a string in YAML 1.2) or a plain word. */
function scalar(raw: string): string | number | undefined {
  const first = raw.charCodeAt(0)
  if (first >= 0x30 && first <= 0x39) {
    if (SIMPLE_INT.test(raw)) return Number(raw)
    // A word of digits, small letters and `-` that YAML 1.2 reads as no number: a date, a run id, a digest.
    return DIGIT_WORD.test(raw) && !YAML_NUMBER.test(raw) ? raw : undefined
  }
  if (first === 0x22) return /^"[^"\\]*"$/.test(raw) ? raw.slice(1, -1) : undefined
  if (first === 0x27) return /^'[^']*'$/.test(raw) ? raw.slice(1, -1) : undefined
  return SIMPLE_STRING.test(raw) && !RESERVED.test(raw) ? raw : undefined
}

/** Whether a character (by code) can open a plain key: a letter or `_`. */
function isKeyStart(code: number): boolean {
  return (code >= 0x41 && code <= 0x5a) || (code >= 0x61 && code <= 0x7a) || code === 0x5f
}

const SIMPLE_STRING = /^[A-Za-z][A-Za-z0-9_ ./-]*$/
const SIMPLE_INT = /^\d{1,9}$/
const DIGIT_WORD = /^\d[0-9a-z-]*$/
/** What YAML 1.2's core schema reads as a number among {@link DIGIT_WORD}s: an integer (decimal, octal, hex) or a float with an exponent. */
const YAML_NUMBER = /^(\d+|0o[0-7]+|0x[0-9a-f]+|\d+e-?\d+)$/
const RESERVED = /^(true|false|null)$/i

/**
 * Reads frontmatter made only of `key: value` lines whose values are plain
 * words, small integers or flow lists of them, the way most plan notes are
 * written; the YAML parser costs as much as the rest of a load. Returns
 * `false` (reading nothing) for anything else, which the parser then reads.
 */
function readSimpleYaml(split: FrontmatterSplit, result: Frontmatter): boolean {
  const data: Record<string, unknown> = {}
  const positions = new Map<string, { line: number; column: number }>()
  const lines = split.yaml!.split('\n')
  if (lines.at(-1) === '') lines.pop()
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!
    // A comment line, or a blank one, holds no key (a key line opens with a letter or `_`).
    if (!isKeyStart(line.charCodeAt(0)) && /^[ \t]*(#.*)?\r?$/.test(line) && !/[\u2028\u2029]/.test(line)) continue
    const simple = readSimpleLine(line)
    if (!simple) return false
    const { key, valueStart, raw } = simple
    if (key === '__proto__' || Object.hasOwn(data, key) || raw === '') return false
    let value: unknown
    if (raw.startsWith('[') && raw.endsWith(']')) {
      const inner = raw.slice(1, -1).trim()
      const items = inner === '' ? [] : inner.split(',').map((item) => scalar(item.trim()))
      if (items.some((item) => item === undefined)) return false
      value = items
    } else {
      value = scalar(raw)
      if (value === undefined) return false
    }
    data[key] = value
    positions.set(key, { line: split.yamlLine + index, column: valueStart + 1 })
  }
  result.data = data
  result.positions = positions
  return true
}
