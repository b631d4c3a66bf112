/**
 * How often the line readers of plain frontmatter and plain `## Next`
 * sections answered without the YAML or markdown parser. For tests and
 * benchmarks: a fast path that silently stopped being taken would cost
 * every load the parsers' price with every result unchanged. Not part of
 * the package's exports.
 */
export const fastPathCounts = { frontmatter: 0, next: 0 }
