/** What Graphviz made of a DOT text: the SVG, or why it failed. */
export interface DotRun {
  status: 'success' | 'failure'
  svg: string | undefined
  /** Graphviz's error messages (warnings, such as a guessed width of a non-ASCII letter, left out). */
  errors: string[]
}

/** Renders DOT text with Graphviz itself, compiled to WebAssembly (`@viz-js/viz`), as `dot -Tsvg` would. */
export async function renderDot(dot: string): Promise<DotRun> {
  const { instance } = await import('@viz-js/viz')
  const result = (await instance()).render(dot, { format: 'svg' })
  const errors = result.errors.filter((error) => error.level !== 'warning').map((error) => error.message)
  return { status: result.status, svg: result.status === 'success' ? result.output : undefined, errors }
}

/** An SVG document as a browser reads it: its root element, and the nodes and texts Graphviz drew. */
export interface SvgPicture {
  /** The root element's name and namespace: `svg`, `http://www.w3.org/2000/svg` for an SVG image. */
  root: string
  namespace: string | null
  /** The `<title>` of each `g.node`: Graphviz's node names (`n0`, `entry` ...). */
  nodes: string[]
  /** Every `<text>`, as drawn (no-break spaces read as spaces). */
  texts: string[]
  /** The `fill` of every filled shape of a node (`#dcfce7` ...), in node order. */
  fills: string[]
}

/** Parses SVG text with jsdom's XML parser; throws when it is not well-formed XML. */
export async function parseSvg(svg: string): Promise<SvgPicture> {
  const { window } = await jsdomWindow()
  const document = new window.DOMParser().parseFromString(svg, 'image/svg+xml')
  const error = document.getElementsByTagName('parsererror')[0]
  if (error) throw new Error(`not well-formed SVG: ${error.textContent ?? ''}`)
  const root = document.documentElement
  const all = (selector: string) => [...root.querySelectorAll(selector)]
  return {
    root: root.localName,
    namespace: root.namespaceURI,
    nodes: all('g.node > title').map((title) => title.textContent ?? ''),
    texts: all('text').map((text) => (text.textContent ?? '').replace(/\u00A0/g, ' ')),
    fills: all('g.node path, g.node polygon, g.node ellipse')
      .map((shape) => shape.getAttribute('fill') ?? 'none')
      .filter((fill) => fill !== 'none'),
  }
}

interface Element {
  localName: string
  namespaceURI: string | null
  textContent: string | null
  getAttribute(name: string): string | null
  querySelectorAll(selector: string): Iterable<Element>
}
interface JsdomWindow {
  document: unknown
  DOMParser: new () => { parseFromString(text: string, type: string): { documentElement: Element; getElementsByTagName(name: string): Element[] } }
}

let dom: Promise<{ window: JsdomWindow }> | undefined

/** A jsdom window, made once (jsdom ships no types and the tests use this much of it). */
function jsdomWindow(): Promise<{ window: JsdomWindow }> {
  dom ??= (import('jsdom' as string) as Promise<{ JSDOM: new (html: string) => { window: JsdomWindow } }>).then(
    ({ JSDOM }) => new JSDOM('<!doctype html><html><body></body></html>'),
  )
  return dom
}

/** A flowchart as mermaid's own parser read it: its vertices and edges, labels decoded. */
export interface MermaidFlowchart {
  diagramType: string
  vertices: { id: string; text: string; type: string | undefined; classes: string[] }[]
  edges: { start: string; end: string; text: string }[]
}

interface FlowDb {
  getVertices(): Map<string, { id: string; text?: string; type?: string; classes: string[] }>
  getEdges(): { start: string; end: string; text: string }[]
}

type Mermaid = typeof import('mermaid').default
let loading: Promise<Mermaid> | undefined

/**
 * Mermaid itself, from the npm registry. Its parser sanitizes labels with
 * DOMPurify, which takes the global `window` when it is first imported:
 * jsdom's window is put there for that import only, so nothing else in the
 * test process sees a browser.
 */
function mermaid(): Promise<Mermaid> {
  loading ??= (async () => {
    const { window } = await jsdomWindow()
    const globals = globalThis as { window?: unknown; document?: unknown }
    Object.assign(globals, { window, document: window.document })
    try {
      const { default: loaded } = await import('mermaid')
      loaded.initialize({ startOnLoad: false })
      return loaded
    } finally {
      delete globals.window
      delete globals.document
    }
  })()
  return loading
}

/**
 * Parses mermaid text with `mermaid.parse`, which throws on text it does not
 * accept, and reads back what it parsed. Labels are decoded the way mermaid
 * renders them: entity codes (`#34;`, which the parser keeps as its own
 * placeholders) become characters, `<br>` a line break.
 */
export async function parseMermaid(text: string): Promise<MermaidFlowchart> {
  const loaded = await mermaid()
  const { diagramType } = (await loaded.parse(text)) as { diagramType: string }
  const diagram = await loaded.mermaidAPI.getDiagramFromText(text)
  const db = diagram.db as unknown as FlowDb
  return {
    diagramType,
    vertices: [...db.getVertices().values()].map((vertex) => ({ id: vertex.id, text: decode(vertex.text ?? ''), type: vertex.type, classes: vertex.classes })),
    edges: db.getEdges().map((edge) => ({ start: edge.start, end: edge.end, text: decode(edge.text) })),
  }
}

function decode(text: string): string {
  return text.replace(/ﬂ°°(\d+)¶ß/g, (_, code: string) => String.fromCodePoint(Number(code))).replace(/<br\s*\/?>/g, '\n')
}
