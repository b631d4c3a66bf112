/*
 * The plain reader of frontmatter: `key: value` lines of plain words, small
 * integers and flow lists of them, read without the YAML parser, the way
 * most plan notes are written.
 */

/** What {@link readPlainYaml} reads: the values, and where each key's value starts (1-based line and column). */
export interface PlainYaml {
  data: Record<string, unknown>
  positions: Map<string, { line: number; column: number }>
}

/**
 * A `key: value` line: the key (`[A-Za-z_][A-Za-z0-9_-]*`, then `:` and at
 * least one space), where the value starts and the value as written,
 * without a trailing `# comment` and white space. `undefined` for any other
 * line. A scan of character codes, not a pattern: `(.*?)[ \t]*$` is
 * quadratic in a long run of white space, and a load reads every line.
 */
export function readSimpleLine(line: string): { key: string; valueStart: number; raw: string } | undefined {
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
 * `undefined` for anything else, which the parser then reads.
 *
 * @param yamlLine - the 1-based line of the note that holds the YAML's first line
 */
export function readPlainYaml(yaml: string, yamlLine: number): PlainYaml | undefined {
  const data: Record<string, unknown> = {}
  const positions = new Map<string, { line: number; column: number }>()
  const lines = yaml.split('\n')
  if (lines.at(-1) === '') lines.pop()
  for (let index = 0; index < lines.length; index++) {
    const line = lines[index]!
    // A comment line, or a blank one, holds no key (a key line opens with a letter or `_`).
    if (!isKeyStart(line.charCodeAt(0)) && /^[ \t]*(#.*)?\r?$/.test(line) && !/[\u2028\u2029]/.test(line)) continue
    const simple = readSimpleLine(line)
    if (!simple) return undefined
    const { key, valueStart, raw } = simple
    if (key === '__proto__' || Object.hasOwn(data, key) || raw === '') return undefined
    let value: unknown
    if (raw.startsWith('[') && raw.endsWith(']')) {
      const inner = raw.slice(1, -1).trim()
      const items = inner === '' ? [] : inner.split(',').map((item) => scalar(item.trim()))
      if (items.some((item) => item === undefined)) return undefined
      value = items
    } else {
      value = scalar(raw)
      if (value === undefined) return undefined
    }
    data[key] = value
    positions.set(key, { line: yamlLine + index, column: valueStart + 1 })
  }
  return { data, positions }
}
