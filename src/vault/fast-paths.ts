/**
 * How often the line readers of plain frontmatter and plain `## Next`
 * sections, and the writer of flat frontmatter, answered without the YAML
 * or markdown package. For tests and
 * benchmarks: a fast path that silently stopped being taken would cost
 * every load the parsers' price with every result unchanged. Not part of
 * the package's exports.
 */
export const fastPathCounts = { frontmatter: 0, next: 0, flatYaml: 0 }
