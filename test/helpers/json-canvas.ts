/**
 * Checks a document against the JSON Canvas 1.0 spec (jsoncanvas.org/spec/1.0):
 * every node has a unique string `id`, a known `type`, integer `x`, `y`,
 * `width`, `height`, and the fields of its type; every edge a unique `id`
 * and `fromNode`/`toNode` naming existing nodes; sides, ends and colours
 * from the spec's lists (a preset `"1"`..`"6"` or a hex colour). Returns
 * every problem, none for a valid document.
 */
export function canvasProblems(document: unknown): string[] {
  const problems: string[] = []
  if (!isObject(document)) return ['the document is not an object']
  const { nodes = [], edges = [] } = document
  if (!Array.isArray(nodes)) problems.push('`nodes` is not an array')
  if (!Array.isArray(edges)) problems.push('`edges` is not an array')
  for (const key of Object.keys(document)) if (key !== 'nodes' && key !== 'edges') problems.push(`unknown top-level key \`${key}\``)
  if (problems.length > 0) return problems

  const ids = new Set<string>()
  const unique = (where: string, id: unknown) => {
    if (typeof id !== 'string' || id === '') problems.push(`${where}: \`id\` is not a non-empty string`)
    else if (ids.has(id)) problems.push(`${where}: id \`${id}\` is used twice`)
    else ids.add(id)
  }
  const nodeIds = new Set<string>()
  ;(nodes as unknown[]).forEach((node, index) => {
    const where = `node ${index}`
    if (!isObject(node)) return problems.push(`${where} is not an object`)
    unique(where, node.id)
    if (typeof node.id === 'string') nodeIds.add(node.id)
    for (const key of ['x', 'y', 'width', 'height']) if (!Number.isInteger(node[key])) problems.push(`${where}: \`${key}\` is not an integer`)
    const fields: Record<string, [required: string[], optional: string[]]> = {
      text: [['text'], []],
      file: [['file'], ['subpath']],
      link: [['url'], []],
      group: [[], ['label', 'background', 'backgroundStyle']],
    }
    const own = typeof node.type === 'string' && Object.hasOwn(fields, node.type) ? fields[node.type]! : undefined
    if (!own) return problems.push(`${where}: \`type\` \`${String(node.type)}\` is not text, file, link or group`)
    for (const key of own[0]) if (typeof node[key] !== 'string') problems.push(`${where}: a ${node.type} node needs a string \`${key}\``)
    for (const key of own[1]) if (key in node && typeof node[key] !== 'string') problems.push(`${where}: \`${key}\` is not a string`)
    if (node.type === 'file' && typeof node.subpath === 'string' && !node.subpath.startsWith('#')) problems.push(`${where}: \`subpath\` does not start with #`)
    if (node.type === 'group' && 'backgroundStyle' in node && !['cover', 'ratio', 'repeat'].includes(node.backgroundStyle as string))
      problems.push(`${where}: bad \`backgroundStyle\``)
    const known = new Set(['id', 'type', 'x', 'y', 'width', 'height', 'color', ...own[0], ...own[1]])
    for (const key of Object.keys(node)) if (!known.has(key)) problems.push(`${where}: unknown key \`${key}\``)
    colour(where, node, problems)
  })
  ;(edges as unknown[]).forEach((edge, index) => {
    const where = `edge ${index}`
    if (!isObject(edge)) return problems.push(`${where} is not an object`)
    unique(where, edge.id)
    for (const key of ['fromNode', 'toNode']) {
      if (typeof edge[key] !== 'string' || !nodeIds.has(edge[key])) problems.push(`${where}: \`${key}\` \`${String(edge[key])}\` is no node`)
    }
    for (const key of ['fromSide', 'toSide'])
      if (key in edge && !['top', 'right', 'bottom', 'left'].includes(edge[key] as string)) problems.push(`${where}: bad \`${key}\``)
    for (const key of ['fromEnd', 'toEnd']) if (key in edge && !['none', 'arrow'].includes(edge[key] as string)) problems.push(`${where}: bad \`${key}\``)
    if ('label' in edge && typeof edge.label !== 'string') problems.push(`${where}: \`label\` is not a string`)
    const known = new Set(['id', 'fromNode', 'fromSide', 'fromEnd', 'toNode', 'toSide', 'toEnd', 'color', 'label'])
    for (const key of Object.keys(edge)) if (!known.has(key)) problems.push(`${where}: unknown key \`${key}\``)
    colour(where, edge, problems)
  })
  return problems
}

function colour(where: string, item: Record<string, unknown>, problems: string[]): void {
  if ('color' in item && !(typeof item.color === 'string' && /^(?:[1-6]|#[\da-f]{3}|#[\da-f]{6})$/i.test(item.color))) {
    problems.push(`${where}: \`color\` \`${String(item.color)}\` is neither a preset "1".."6" nor a hex colour`)
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value)
}
