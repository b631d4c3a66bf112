import type { ParsedNote } from '../../vault/parse-note.js'
import { splitFrontmatter } from '../../vault/frontmatter.js'
import { subplanFoldersOf } from '../../vault/subplan-folders.js'
import { observeRun } from '../read/observe-run.js'

/** A note an edit replaces: its id, the note as it is and as the edit writes it, and whether its section gave knobs alone or edges alone. */
export interface Replacing {
  id: string
  note: ParsedNote
  after: ParsedNote
  knobsOnly: boolean
  /** Its section gives its `### Next` alone. */
  edgesOnly: boolean
}

/** A step decomposed by an edit: the note that gained `plan:`, and the subplan folder (from the vault) its claim moves to. */
export interface Decomposed {
  node: string
  folder: string
}

/**
 * The notes being worked that an edit may replace all the same because it
 * decomposes them: each gains `plan:` (it had none), its section sets
 * knobs alone (its title, body and edges stay as a person wrote them), and
 * the visit's claim is the editing agent's (or nobody's in particular, for
 * an edit without an agent of a claim without one). Any other note being
 * worked or waiting is still `note-in-use`.
 */
export async function decompositions(dir: string, replacing: readonly Replacing[], agent: string | undefined): Promise<Decomposed[]> {
  const candidates = replacing.filter(
    ({ note, after, knobsOnly }) => note.status === 'active' && knobsOnly && note.plan === undefined && after.plan !== undefined,
  )
  if (candidates.length === 0) return []
  const { frontier } = await observeRun(dir, { hops: 0 })
  return candidates.flatMap(({ id, after }) => {
    const item = frontier.find((each) => each.node === id)
    const folder = subplanFoldersOf(after)[0]?.folder
    if (!item || item.claim?.agent !== agent || folder === undefined) return []
    return [{ node: id, folder }]
  })
}

/** Whether a section's note text gives its `### Next` alone (no knob, no text): a note being worked may take new edges. */
export function edgesAlone(section: string): boolean {
  const content = section.slice(splitFrontmatter(section).contentStart)
  return content === section && /^## Next[ \t]*\r?\n/.test(`${content.trimStart()}\n`) && !/^## (?!Next\b)/m.test(content)
}

/** Whether a section's note text gives knobs alone (frontmatter, then nothing but white space). */
export function knobsAlone(section: string): boolean {
  return section.slice(splitFrontmatter(section).contentStart).trim() === ''
}
