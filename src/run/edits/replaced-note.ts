import type { Scalar } from 'yaml'
import { lazyModule } from '../../core/lazy-module.js'
import { parseFrontmatter, setFrontmatterValue, splitFrontmatter } from '../../vault/frontmatter.js'
import { scanHeadings } from '../../vault/headings.js'
import { sectionName, type ParsedNote } from '../../vault/parse-note.js'

/** The YAML parser, to read where each knob's value stands in a section. */
const yaml = lazyModule<typeof import('yaml')>('yaml')

/** A note replaced by a section: its new text, or the note as it is and why the section's knobs cannot be set in it. */
export type ReplacedNote = { text: string; problem?: undefined } | { text: string; problem: string }

/**
 * The text of a note replaced by a plan document's section (`section`, the
 * section as a note's text), changing only what the section names: each
 * knob it sets is patched into the note's frontmatter in place (a key the
 * note lacks is added last), every other key, comment, blank line and
 * style kept byte for byte, `status:` never set (it is the run's); the
 * section's title and body replace the note's (each only when the section
 * gives it); the note's `## Next` becomes the section's `### Next` when it
 * has one, where it stood (after the text when it had none); every other `## ` section of the note
 * (`## Feedback`, a person's `## Journal`) stays where it is, as it is.
 * A section whose knob lines do not read as YAML is returned as it is, so
 * that the check of the plan reports them.
 *
 * @returns the new text, or the note unchanged with a `problem` when its frontmatter cannot take a knob in place
 */
export function replacedNoteText(before: string, note: ParsedNote, section: string): ReplacedNote {
  const front = parseFrontmatter(section)
  if (front.problems.length > 0) return { text: section }
  const split = splitFrontmatter(before)
  let text = before.slice(0, split.contentStart) + replacedContent(before.slice(split.contentStart), section.slice(front.split.contentStart), split.eol)
  for (const [key, source] of knobSources(front.split.yaml)) {
    // The status is the run's (a person's), never the document's; a value the note holds already is left as written.
    if (key === 'status' || JSON.stringify(note.frontmatter[key]) === JSON.stringify(front.data[key])) continue
    try {
      text = setFrontmatterValue(text, key, source)
    } catch (error) {
      return { text: before, problem: (error as Error).message }
    }
  }
  // A note the section leaves as it was stays byte for byte: a repeated edit writes nothing.
  return { text: sameNote(before, text) ? before : text }
}

/** The knobs of a section's frontmatter, each with its value as the document wrote it (comments aside), in order. */
function knobSources(text: string | undefined): [string, string][] {
  if (text === undefined || text.trim() === '') return []
  const { isMap, isScalar, parseDocument } = yaml()
  const contents = parseDocument(text).contents
  if (!isMap(contents)) return []
  return contents.items.flatMap((pair) => {
    const range = (pair.value as Scalar | null)?.range
    return isScalar(pair.key) && range ? [[String(pair.key.value), text.slice(range[0], range[1]).trim()] as [string, string]] : []
  })
}

/** A stretch of a note's content: the text before its first `## ` heading, its `## Next` section, or another section. */
interface Block {
  kind: 'lead' | 'next' | 'other'
  /** The text, without the white space that ends it. */
  core: string
  /** The white space between it and what follows (the end of the note's text for the last). */
  tail: string
}

/**
 * The note's content with its text and `## Next` replaced by the section's,
 * as far as the section names them: a section with no text keeps the
 * note's title and body, one with no `# Title` its title, one with a title
 * alone its body, one with no `### Next` its `## Next` (an empty `### Next`
 * takes the edges away). Every other section is kept as it is.
 */
function replacedContent(content: string, section: string, eol: '\n' | '\r\n'): string {
  const inEol = (text: string) => (eol === '\n' ? text : text.replace(/\r?\n/g, eol))
  const blocks = blocksOf(content)
  const given = blocksOf(section)
  const nextAt = given.findIndex((block) => block.kind === 'next')
  const [old, ...rest] = blocks as [Block, ...Block[]]
  const lead = mergedLead(
    old.core,
    inEol(
      given
        .slice(0, nextAt === -1 ? given.length : nextAt)
        .map((block) => block.core + block.tail)
        .join('')
        .trimEnd(),
    ),
    eol,
  )
  const written =
    nextAt === -1
      ? ''
      : inEol(
          given
            .slice(nextAt)
            .map((block) => block.core + block.tail)
            .join('')
            .trimEnd(),
        )
  // An empty `### Next` takes the edges away, heading and all.
  const next = /^## Next$/.test(written) ? '' : written
  // A block written anew with no white space of the note's to end it (`tail` undefined) ends as blocks do, below.
  const out: (Omit<Block, 'tail'> & { tail: string | undefined })[] = []
  if (lead !== '') out.push({ kind: 'lead', core: lead, tail: old.core === '' ? undefined : old.tail })
  let placed = false
  for (const block of rest) {
    if (block.kind !== 'next' || nextAt === -1) out.push(block)
    else if (!placed && next !== '') out.push({ kind: 'next', core: next, tail: block.tail })
    // A `## Next` dropped as the last section leaves the note's ending to the section before it.
    else if (block === rest.at(-1) && out.length > 0) out.at(-1)!.tail = block.tail
    if (block.kind === 'next') placed = true
  }
  if (!placed && next !== '') {
    // After the text, taking over what followed it.
    const after = out[0]?.kind === 'lead' ? 1 : 0
    out.splice(after, 0, { kind: 'next', core: next, tail: after === 1 ? out[0]!.tail : undefined })
    if (after === 1) out[0]!.tail = eol + eol
  }
  // A blank line before the next block, one line break at the end.
  return out.map((block, at) => block.core + (block.tail ?? (at === out.length - 1 ? eol : eol + eol))).join('')
}

/**
 * A note's text before its first `## ` heading as a section replaces it: the
 * section's title and body where it gives them, the note's where it does not.
 */
function mergedLead(before: string, given: string, eol: string): string {
  if (given === '') return before
  const note = titled(before)
  const section = titled(given)
  if (section.body !== '' && (section.title !== undefined || note.title === undefined)) return given
  // A title alone: the note's body stays, under the new title.
  if (section.body === '') return note.title === undefined ? `${given}${eol}${eol}${before}` : before.replace(note.title, section.title!)
  // A body alone: under the note's title.
  return `${note.title}${eol}${given}`
}

/** A note's lead cut into its `# Title` line (none when it has none) and the rest. */
function titled(lead: string): { title: string | undefined; body: string } {
  const heading = scanHeadings(lead).headings.find((found) => found.depth === 1)
  if (heading === undefined) return { title: undefined, body: lead.trim() }
  const title = lead.slice(heading.start, heading.bodyStart).trimEnd()
  return { title, body: (lead.slice(0, heading.start) + lead.slice(heading.bodyStart)).trim() }
}

/** A note's content cut into its text before the first `## ` heading and its sections (from each heading of level 1 or 2 on). */
function blocksOf(content: string): Block[] {
  const { headings } = scanHeadings(content)
  const first = headings.findIndex((heading) => heading.depth === 2)
  const starts = first === -1 ? [] : headings.slice(first).filter((heading) => heading.depth <= 2)
  const pieces: { kind: Block['kind']; text: string }[] = [{ kind: 'lead', text: content.slice(0, starts[0]?.start ?? content.length) }]
  for (const [at, heading] of starts.entries()) {
    pieces.push({ kind: sectionName(heading) === 'next' ? 'next' : 'other', text: content.slice(heading.start, starts[at + 1]?.start ?? content.length) })
  }
  return pieces.map(({ kind, text }) => {
    const core = text.trimEnd()
    return { kind, core, tail: text.slice(core.length) }
  })
}

/** Whether two texts of a note say the same, line ends and the final line break aside. */
function sameNote(a: string, b: string): boolean {
  const norm = (text: string) => text.replace(/\r\n/g, '\n').trimEnd()
  return norm(a) === norm(b)
}
