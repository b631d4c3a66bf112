import type { ParsedNote } from './parse-note.js'

/** How a link resolved: one node id, nothing, or several candidates. */
export type LinkResolution = { id: string } | { id: undefined; candidates: string[] }

/**
 * Resolves wikilinks the way Obsidian and SilverBullet do: the exact path
 * first, then the unique note whose path ends with the link's path (or whose
 * path the link ends with, for a plan inside a larger vault), then an
 * `aliases:` entry, then all of that again ignoring case.
 */
export class LinkResolver {
  private readonly byName = new Map<string, string[]>()
  private readonly byNameLower = new Map<string, string[]>()
  private readonly exact = new Map<string, string>()
  private readonly lower = new Map<string, string[]>()
  private readonly aliases = new Map<string, string[]>()
  private readonly aliasesLower = new Map<string, string[]>()

  constructor(notes: Iterable<Pick<ParsedNote, 'id' | 'aliases'>>) {
    for (const note of notes) {
      push(this.byName, basename(note.id), note.id)
      push(this.byNameLower, basename(note.id).toLowerCase(), note.id)
      this.exact.set(note.id, note.id)
      push(this.lower, note.id.toLowerCase(), note.id)
      for (const alias of note.aliases) {
        push(this.aliases, alias, note.id)
        push(this.aliasesLower, alias.toLowerCase(), note.id)
      }
    }
  }

  /** Resolves a normalised link path (see `normalizeLink`). */
  resolve(link: string): LinkResolution {
    if (link === '') return { id: undefined, candidates: [] }
    const exact = this.exact.get(link)
    if (exact !== undefined) return { id: exact }
    const bySuffix = this.bySuffix(link, false)
    if (bySuffix) return bySuffix
    const alias = pick(this.aliases.get(link))
    if (alias) return alias
    const lower = link.toLowerCase()
    const exactLower = pick(this.lower.get(lower))
    if (exactLower) return exactLower
    return this.bySuffix(lower, true) ?? pick(this.aliasesLower.get(lower)) ?? { id: undefined, candidates: [] }
  }

  private bySuffix(link: string, ignoreCase: boolean): LinkResolution | undefined {
    const key = (id: string) => (ignoreCase ? id.toLowerCase() : id)
    const sameName = (ignoreCase ? this.byNameLower : this.byName).get(basename(link)) ?? []
    const shorter = sameName.filter((id) => key(id).endsWith(`/${link}`))
    if (shorter.length > 0) return pick(shorter)
    // A plan kept in a subfolder of a bigger vault is linked by its full path:
    // `[[Plans/blog/review]]` -> `review`. The longest matching tail wins.
    const exact = ignoreCase ? this.lower : undefined
    for (let slash = link.indexOf('/'); slash !== -1; slash = link.indexOf('/', slash + 1)) {
      const tail = link.slice(slash + 1)
      const found = exact ? pick(exact.get(tail)) : pick(this.exact.has(tail) ? [tail] : undefined)
      if (found) return found
    }
    return undefined
  }
}

function basename(path: string): string {
  return path.slice(path.lastIndexOf('/') + 1)
}

function push(map: Map<string, string[]>, key: string, id: string): void {
  const list = map.get(key)
  if (list) {
    if (!list.includes(id)) list.push(id)
  } else map.set(key, [id])
}

function pick(list: string[] | undefined): LinkResolution | undefined {
  if (!list || list.length === 0) return undefined
  return list.length === 1 ? { id: list[0]! } : { id: undefined, candidates: [...list].sort() }
}
