import { lazyModule } from '../../core/lazy-module.js'
import { parseFrontmatter } from '../../vault/frontmatter.js'
import type { ParsedNote } from '../../vault/parse-note.js'

/** The YAML writer, loaded when a note is replaced. */
const yaml = lazyModule<typeof import('yaml')>('yaml')

/**
 * The text of a note replaced by a plan document's section (`section`, the
 * section as a note's text): the section's knobs over the note's own
 * frontmatter, the note's `status:` kept as it is, then the section's
 * title, body and `## Next`, then the note's `## Feedback` when it has one.
 * A section whose knob lines do not read as YAML is returned as it is, so
 * that the check of the plan reports them.
 */
export function replacedNoteText(before: string, note: ParsedNote, section: string): string {
  const front = parseFrontmatter(section)
  if (front.problems.length > 0) return section
  const data: Record<string, unknown> = { ...note.frontmatter, ...front.data }
  // The status is the run's (a person's), never the document's.
  if (Object.hasOwn(note.frontmatter, 'status')) data.status = note.frontmatter.status
  else delete data.status
  let text = Object.keys(data).length > 0 ? `---\n${yaml().stringify(data)}---\n` : ''
  text += section.slice(front.split.contentStart)
  if (note.feedback !== '') text += `\n## Feedback\n\n${note.feedback}\n`
  // A note the section leaves as it was stays byte for byte: a repeated edit writes nothing.
  return sameNote(before, text) ? before : text
}

/** Whether two texts of a note say the same, line ends and the final line break aside. */
function sameNote(a: string, b: string): boolean {
  const norm = (text: string) => text.replace(/\r\n/g, '\n').trimEnd()
  return norm(a) === norm(b)
}
