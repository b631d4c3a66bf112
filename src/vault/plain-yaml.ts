import { fastPathCounts } from './fast-paths.js'
import { lazyModule } from '../core/lazy-module.js'

/** The YAML writer, for values the plain writer below does not handle. */
const yaml = lazyModule<typeof import('yaml')>('yaml')

/** A string YAML writes as it is: letters, digits and `_./-`, no space (so never folded), opening with a letter or digit. */
const PLAIN = /^[A-Za-z0-9][A-Za-z0-9_./-]*$/
/** Of those, the ones YAML 1.2's core schema reads as a number, a boolean or null, which it quotes. */
const READS_AS_OTHER = /^(?:[-+]?(?:\.\d+|\d+(?:\.\d*)?)(?:e[-+]?\d+)?|0x[0-9a-f]+|0o[0-7]+|true|false|null)$/i
/** A wikilink of a plain id, which YAML double-quotes (a plain scalar cannot open with `[`). */
const PLAIN_LINK = /^\[\[[A-Za-z0-9][A-Za-z0-9_./-]*\]\]$/

/**
 * Writes a flat mapping of strings and integers as the `yaml` package's
 * `stringify` does, byte for byte, without loading it for the usual values
 * (ids, run ids, counts, wikilinks of ids): a run writes an output note's
 * frontmatter at every hop. Anything else goes to `yaml`.
 *
 * @returns the YAML text, ending with a line break
 */
export function stringifyFlat(fields: Record<string, string | number>): string {
  let text = ''
  for (const [key, value] of Object.entries(fields)) {
    const written = plainValue(value)
    if (written === undefined || !PLAIN.test(key) || READS_AS_OTHER.test(key)) return yaml().stringify(fields)
    text += `${key}: ${written}\n`
  }
  if (text === '') return yaml().stringify(fields)
  fastPathCounts.flatYaml++
  return text
}

function plainValue(value: string | number): string | undefined {
  // yaml writes -0 as `-0`, which String() does not.
  if (typeof value === 'number') return Number.isSafeInteger(value) && !Object.is(value, -0) ? String(value) : undefined
  if (PLAIN.test(value)) return READS_AS_OTHER.test(value) ? undefined : value
  return PLAIN_LINK.test(value) ? `"${value}"` : undefined
}
