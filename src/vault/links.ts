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
  private readonly bySuffixExact = new Map<string, Ids>()
  private readonly exact = new Map<string, string>()
  private readonly notes: Pick<ParsedNote, 'id' | 'aliases'>[] = []
  /** The aliases and the case-folded keys, built when a link first needs them: most links match a path as written. */
  private more?: { bySuffixLower: Map<string, Ids>; lower: Map<string, Ids>; aliases: Map<string, Ids>; aliasesLower: Map<string, Ids> }

  constructor(notes: Iterable<Pick<ParsedNote, 'id' | 'aliases'>>) {
    for (const note of notes) {
      this.notes.push(note)
      for (let slash = note.id.indexOf('/'); slash !== -1; slash = note.id.indexOf('/', slash + 1)) push(this.bySuffixExact, note.id.slice(slash + 1), note.id)
      this.exact.set(note.id, note.id)
    }
  }

  private get folded(): NonNullable<LinkResolver['more']> {
    if (this.more) return this.more
    const more = { bySuffixLower: new Map<string, Ids>(), lower: new Map<string, Ids>(), aliases: new Map<string, Ids>(), aliasesLower: new Map<string, Ids>() }
    for (const note of this.notes) {
      for (let slash = note.id.indexOf('/'); slash !== -1; slash = note.id.indexOf('/', slash + 1)) {
        push(more.bySuffixLower, note.id.slice(slash + 1).toLowerCase(), note.id)
      }
      push(more.lower, note.id.toLowerCase(), note.id)
      for (const alias of note.aliases) {
        push(more.aliases, alias, note.id)
        push(more.aliasesLower, alias.toLowerCase(), note.id)
      }
    }
    this.more = more
    return more
  }

  /** Resolves a normalised link path (see `normalizeLink`). */
  resolve(link: string): LinkResolution {
    if (link === '') return { id: undefined, candidates: [] }
    const exact = this.exact.get(link)
    if (exact !== undefined) return { id: exact }
    const bySuffix = this.bySuffix(link, false)
    if (bySuffix) return bySuffix
    const folded = this.folded
    const alias = pick(folded.aliases.get(link))
    if (alias) return alias
    const lower = link.toLowerCase()
    const exactLower = pick(folded.lower.get(lower))
    if (exactLower) return exactLower
    return this.bySuffix(lower, true) ?? pick(folded.aliasesLower.get(lower)) ?? { id: undefined, candidates: [] }
  }

  private bySuffix(link: string, ignoreCase: boolean): LinkResolution | undefined {
    const shorter = pick((ignoreCase ? this.folded.bySuffixLower : this.bySuffixExact).get(link))
    if (shorter) return shorter
    // A plan kept in a subfolder of a bigger vault is linked by its full path:
    // `[[Plans/blog/review]]` -> `review`. The longest matching tail wins.
    const exact = ignoreCase ? this.folded.lower : undefined
    for (let slash = link.indexOf('/'); slash !== -1; slash = link.indexOf('/', slash + 1)) {
      const tail = link.slice(slash + 1)
      const found = exact ? pick(exact.get(tail)) : this.exact.has(tail) ? { id: tail } : undefined
      if (found) return found
    }
    return undefined
  }
}

/** The ids under one key: one id as it is (the usual case, no set to allocate), more in a set. */
type Ids = string | Set<string>

// Sets, so that adding the thousandth note of one name costs what the first did.
function push(map: Map<string, Ids>, key: string, id: string): void {
  const ids = map.get(key)
  if (ids === undefined) map.set(key, id)
  else if (typeof ids !== 'string') ids.add(id)
  else if (ids !== id) map.set(key, new Set([ids, id]))
}

function pick(ids: Ids | undefined): LinkResolution | undefined {
  if (ids === undefined) return undefined
  if (typeof ids === 'string') return { id: ids }
  if (ids.size === 0) return undefined
  return ids.size === 1 ? { id: ids.values().next().value! } : { id: undefined, candidates: [...ids].sort() }
}
