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
  /** Each id under every tail of its path that follows a `/` (`a/b/c` under `b/c` and `c`). */
  private readonly bySuffixExact = new Map<string, Set<string>>()
  private readonly bySuffixLower = new Map<string, Set<string>>()
  private readonly exact = new Map<string, string>()
  private readonly lower = new Map<string, Set<string>>()
  private readonly aliases = new Map<string, Set<string>>()
  private readonly aliasesLower = new Map<string, Set<string>>()

  constructor(notes: Iterable<Pick<ParsedNote, 'id' | 'aliases'>>) {
    for (const note of notes) {
      for (let slash = note.id.indexOf('/'); slash !== -1; slash = note.id.indexOf('/', slash + 1)) {
        const tail = note.id.slice(slash + 1)
        push(this.bySuffixExact, tail, note.id)
        push(this.bySuffixLower, tail.toLowerCase(), note.id)
      }
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
    const shorter = pick((ignoreCase ? this.bySuffixLower : this.bySuffixExact).get(link))
    if (shorter) return shorter
    // A plan kept in a subfolder of a bigger vault is linked by its full path:
    // `[[Plans/blog/review]]` -> `review`. The longest matching tail wins.
    const exact = ignoreCase ? this.lower : undefined
    for (let slash = link.indexOf('/'); slash !== -1; slash = link.indexOf('/', slash + 1)) {
      const tail = link.slice(slash + 1)
      const found = exact ? pick(exact.get(tail)) : this.exact.has(tail) ? { id: tail } : undefined
      if (found) return found
    }
    return undefined
  }
}

// Sets, so that adding the thousandth note of one name costs what the first did.
function push(map: Map<string, Set<string>>, key: string, id: string): void {
  const ids = map.get(key)
  if (ids) ids.add(id)
  else map.set(key, new Set([id]))
}

function pick(ids: Set<string> | undefined): LinkResolution | undefined {
  if (!ids || ids.size === 0) return undefined
  return ids.size === 1 ? { id: ids.values().next().value! } : { id: undefined, candidates: [...ids].sort() }
}
