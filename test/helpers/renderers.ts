import { execFile } from 'node:child_process'

/** What Graphviz's `dot` made of a DOT text. */
export interface DotRun {
  code: number | null
  stdout: string
  stderr: string
}

/** Renders DOT text with Graphviz's own `dot -Tsvg` (Debian's `graphviz`, installed by `.ci/run`). */
export function renderDot(dot: string): Promise<DotRun> {
  return new Promise((done, fail) => {
    const child = execFile('dot', ['-Tsvg'], { maxBuffer: 16 * 1024 * 1024 }, (error, stdout, stderr) => {
      if (error && (error as NodeJS.ErrnoException).code === 'ENOENT') {
        fail(new Error("Graphviz's `dot` is not installed: `apt-get install graphviz` (.ci/run does)"))
        return
      }
      done({ code: error ? (typeof error.code === 'number' ? error.code : null) : 0, stdout, stderr })
    })
    child.stdin!.end(dot)
  })
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
    // jsdom ships no types and this is its one use: a window.
    const { JSDOM } = (await import('jsdom' as string)) as { JSDOM: new (html: string) => { window: { document: unknown } } }
    const { window } = new JSDOM('<!doctype html><html><body></body></html>')
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
  return text
    .replace(/ﬂ°°(\d+)¶ß/g, (_, code: string) => String.fromCodePoint(Number(code)))
    .replace(/<br\s*\/?>/g, '\n')
}
