import { readFile } from 'node:fs/promises'
import { LIMITS } from './results.js'

/** A text as a result carries it: whole, or its start and `more`, which names the resource part that goes on. */
export interface Clipped {
  text: string
  more?: string
}

/**
 * `text` cut to `limit` characters when longer, with `more` saying how many
 * characters are left and which part of the resource `uri` (the file `file`
 * holds the text, after its front matter) goes on: `?part=N` of parts of
 * `LIMITS.part` characters.
 */
export async function clipped(text: string, limit: number, uri: string, file: string): Promise<Clipped> {
  if (text.length <= limit) return { text }
  const whole = await readFile(file, 'utf8').catch(() => '')
  const parts = partsOf(whole)
  // The file holds the text after its front matter: the part holding character `limit` of the text is the one to read next.
  const next = Math.min(parts, Math.floor(limit / LIMITS.part) + 1)
  const where = parts <= 1 ? `read ${uri}` : `read ${uri}?part=${next} (part ${next} of ${parts}, ${LIMITS.part} characters each)`
  return { text: text.slice(0, limit), more: `${text.length - limit} more characters: ${where}` }
}

/** How many parts of `LIMITS.part` characters a resource's text is read in (at least one). */
export function partsOf(text: string): number {
  return Math.max(1, Math.ceil(text.length / LIMITS.part))
}

/**
 * The part `?part=N` of a resource URI asks for, `undefined` for the whole
 * file; a `part` that is no whole number from 1 up is refused.
 *
 * @throws `RangeError` naming what `part` takes
 */
export function partOf(uri: string): number | undefined {
  const query = /\?([^#]*)/.exec(uri)?.[1]
  if (query === undefined) return undefined
  const value = new URLSearchParams(query).get('part')
  if (value === null) return undefined
  const part = Number(value)
  if (!Number.isInteger(part) || part < 1) throw new RangeError(`\`part\` takes a whole number from 1 up, got \`${value}\``)
  return part
}

/** Part `part` of `text` (1 is the first), `undefined` past its end. */
export function readPart(text: string, part: number): string | undefined {
  if (part > partsOf(text)) return undefined
  return text.slice((part - 1) * LIMITS.part, part * LIMITS.part)
}
