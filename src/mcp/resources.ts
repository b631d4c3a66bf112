import { watch, type FSWatcher } from 'node:fs'
import { lstat, readdir, readFile } from 'node:fs/promises'
import { dirname, join } from 'node:path'
import type { Server } from '@modelcontextprotocol/sdk/server/index.js'
import {
  ErrorCode,
  ListResourcesRequestSchema,
  ListResourceTemplatesRequestSchema,
  McpError,
  ReadResourceRequestSchema,
  SubscribeRequestSchema,
  UnsubscribeRequestSchema,
} from '@modelcontextprotocol/sdk/types.js'
import { sameStamp, stampOf, type FileStamp } from '../vault/fs-atomic.js'
import { TRACE_FOLDER } from '../vault/run-folder.js'
import { confine, parseResourceUri, PathRefusal, resourceUri, vaultName, vaultPath } from './paths.js'
import { findVaults } from './vaults.js'
import { partOf, partsOf, readPart } from './parts.js'
import { unwatching, watching, writerOf } from './own-writes.js'

/** JSON-RPC error of MCP for a resource that does not exist. */
const RESOURCE_NOT_FOUND = -32002
/** Resources per page of `resources/list`. */
const PAGE = 200
/** The files of a trace folder that are offered in the list (outputs stay readable, but unlisted). */
const LISTED_TRACE_FILES = new Set(['trace.md', 'final.md'])
/** How long a folder's events are gathered before the stamps are compared: an editor's save is several events. */
const SETTLE_MS = 25

/**
 * Serves the notes and traces of the vaults under `root` as resources on
 * `server`: `resources/list` (paged), `resources/templates/list`,
 * `resources/read`, and `resources/subscribe`, after which an edit on disk
 * sends `notifications/resources/updated`, its `_meta.writer` `vaultplan`
 * for a change made by a tool call of this server, `other` for anyone
 * else's (a person's edit). Must be called before the server
 * connects. Resolves nothing; returns what stops the watchers.
 */
export function serveResources(server: Server, root: string): { close(): void } {
  server.registerCapabilities({ resources: { subscribe: true, listChanged: false } })
  const watches = new Watches(root, (uri, path) => {
    // Who wrote: the server's own calls (a claim's `status:`, a decision) or a person's edit, in the notification's `_meta`.
    void writerOf(path)
      .then((writer) => server.sendResourceUpdated({ uri, _meta: { writer } }))
      .catch(() => {
        // The client is gone; its watchers are closed with the session.
      })
  })

  server.setRequestHandler(ListResourcesRequestSchema, async (request) => {
    const offset = request.params?.cursor === undefined ? 0 : Number.parseInt(request.params.cursor, 10)
    if (!Number.isInteger(offset) || offset < 0)
      throw new McpError(ErrorCode.InvalidParams, `\`${request.params?.cursor}\` is no cursor of this server; list from the start`)
    const all = await listResources(root)
    const page = all.slice(offset, offset + PAGE)
    return offset + PAGE < all.length ? { resources: page, nextCursor: String(offset + PAGE) } : { resources: page }
  })
  server.setRequestHandler(ListResourceTemplatesRequestSchema, async () => ({
    resourceTemplates: [
      {
        uriTemplate: 'vaultplan://{vault}/{+path}',
        name: 'vault-file',
        description:
          "Any markdown file of a vault: its notes, the trace, each step's output note (00_plan-trace/outputs/). `vault` is percent-encoded as one segment; `?part=N` reads a long file in parts of 20,000 characters.",
        mimeType: 'text/markdown',
      },
    ],
  }))
  server.setRequestHandler(ReadResourceRequestSchema, async (request) => {
    const { uri } = request.params
    const path = await resourceFile(root, uri, true)
    let part
    try {
      part = partOf(uri)
    } catch (error) {
      throw new McpError(ErrorCode.InvalidParams, `\`${uri}\`: ${(error as Error).message}`)
    }
    const text = await readFile(path, 'utf8')
    if (part === undefined) return { contents: [{ uri, mimeType: 'text/markdown', text }] }
    const slice = readPart(text, part)
    if (slice === undefined) throw new McpError(RESOURCE_NOT_FOUND, `\`${uri}\` asks for part ${part}, and the file has ${partsOf(text)}`)
    return { contents: [{ uri, mimeType: 'text/markdown', text: slice, _meta: { part, parts: partsOf(text) } }] }
  })
  server.setRequestHandler(SubscribeRequestSchema, async (request) => {
    await watches.add(request.params.uri)
    return {}
  })
  server.setRequestHandler(UnsubscribeRequestSchema, async (request) => {
    watches.remove(request.params.uri)
    return {}
  })
  return { close: () => watches.close() }
}

/** Every note and trace of every vault under the root, as MCP resources, sorted by URI. */
async function listResources(root: string): Promise<{ uri: string; name: string; description: string; mimeType: string }[]> {
  const { vaults } = await findVaults(root)
  const resources = []
  for (const path of vaults) {
    const vault = vaultName(root, path)
    for (const file of await filesOf(path)) {
      const trace = file.split('/').includes(TRACE_FOLDER)
      const what = !trace ? 'a note of the plan' : file.endsWith('final.md') ? 'the final answer of the run of' : 'the trace of the run of'
      resources.push({ uri: resourceUri(vault, file), name: `${vault}/${file}`, description: `${what} ${vault}`, mimeType: 'text/markdown' })
    }
  }
  return resources
}

/** The markdown files of a vault, `/`-separated and sorted: notes (subplan folders included), traces and final answers. */
async function filesOf(vault: string): Promise<string[]> {
  const files: string[] = []
  const walk = async (folder: string, prefix: string): Promise<void> => {
    const entries = await readdir(folder, { withFileTypes: true }).catch(() => [])
    entries.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
    for (const entry of entries) {
      if (entry.name.startsWith('.') || entry.name === 'node_modules') continue
      const file = `${prefix}${entry.name}`
      if (entry.isDirectory() && entry.name === TRACE_FOLDER) {
        for (const name of await readdir(join(folder, entry.name)).catch(() => [] as string[])) {
          if (LISTED_TRACE_FILES.has(name)) files.push(`${file}/${name}`)
        }
      } else if (entry.isDirectory()) await walk(join(folder, entry.name), `${file}/`)
      else if (entry.isFile() && /\.md$/i.test(entry.name)) files.push(file)
    }
  }
  await walk(vault, '')
  return files.sort()
}

/**
 * The file a resource URI names, confined to its vault under the root: a
 * markdown file. `mustExist: false` lets a subscription wait for a file
 * that is not written yet.
 */
async function resourceFile(root: string, uri: string, mustExist: boolean): Promise<string> {
  let parsed
  let path
  try {
    parsed = parseResourceUri(uri)
    if (!parsed) throw new McpError(RESOURCE_NOT_FOUND, `\`${uri}\` is no resource of this server; its URIs read vaultplan://<vault>/<note path>`)
    if (!/\.md$/i.test(parsed.file))
      throw new McpError(RESOURCE_NOT_FOUND, `\`${uri}\` is not a markdown note; this server serves the notes and traces of vaults`)
    const vault = await vaultPath(root, parsed.vault)
    const found = await confine(vault, parsed.file, 'the note')
    if (!found.exists && mustExist) throw new McpError(RESOURCE_NOT_FOUND, `\`${uri}\` does not exist; resources/list shows the notes`)
    path = found.path
  } catch (error) {
    if (error instanceof PathRefusal) throw new McpError(error.code === 'not-found' ? RESOURCE_NOT_FOUND : ErrorCode.InvalidParams, error.message)
    throw error
  }
  if (mustExist && !(await lstat(path)).isFile()) throw new McpError(RESOURCE_NOT_FOUND, `\`${uri}\` is not a file`)
  return path
}

/**
 * The subscriptions of one session: one `fs.watch` per folder that holds a
 * subscribed file; an event in the folder compares the stamps of its
 * subscribed files, so a notification goes out only when a file changed
 * (written, replaced by an editor's atomic save, removed or created).
 */
class Watches {
  private readonly files = new Map<string, { path: string; stamp: FileStamp | undefined }>()
  private readonly folders = new Map<string, { watcher: FSWatcher; timer?: NodeJS.Timeout }>()
  private closed = false

  constructor(
    private readonly root: string,
    private readonly notify: (uri: string, path: string) => void,
  ) {}

  /** Subscribes to `uri`. A URI of another scheme is accepted and never fires: it names nothing here to change. */
  async add(uri: string): Promise<void> {
    if (!parseResourceUri(uri)) return
    const path = await resourceFile(this.root, uri, false)
    if (this.closed || this.files.has(uri)) return
    this.files.set(uri, { path, stamp: await stampOf(path).catch(() => undefined) })
    watching(path)
    const folder = dirname(path)
    if (this.folders.has(folder)) return
    try {
      const watcher = watch(folder, { persistent: false }, () => this.changed(folder))
      watcher.on('error', () => this.dropFolder(folder))
      this.folders.set(folder, { watcher })
    } catch (error) {
      this.files.delete(uri)
      unwatching(path)
      throw new McpError(RESOURCE_NOT_FOUND, `cannot watch \`${uri}\`: ${(error as Error).message}`)
    }
  }

  remove(uri: string): void {
    const entry = this.files.get(uri)
    if (!entry) return
    this.files.delete(uri)
    unwatching(entry.path)
    const folder = dirname(entry.path)
    if (![...this.files.values()].some((file) => dirname(file.path) === folder)) this.dropFolder(folder)
  }

  close(): void {
    this.closed = true
    for (const folder of [...this.folders.keys()]) this.dropFolder(folder)
    for (const file of this.files.values()) unwatching(file.path)
    this.files.clear()
  }

  private changed(folder: string): void {
    const entry = this.folders.get(folder)
    if (!entry || entry.timer) return
    entry.timer = setTimeout(() => {
      delete entry.timer
      void this.compare(folder)
    }, SETTLE_MS)
  }

  private async compare(folder: string): Promise<void> {
    for (const [uri, file] of this.files) {
      if (dirname(file.path) !== folder) continue
      const stamp = await stampOf(file.path).catch(() => undefined)
      const same = stamp === undefined ? file.stamp === undefined : sameStamp(stamp, file.stamp)
      if (same || this.files.get(uri) !== file) continue
      file.stamp = stamp
      this.notify(uri, file.path)
    }
  }

  private dropFolder(folder: string): void {
    const entry = this.folders.get(folder)
    if (!entry) return
    if (entry.timer) clearTimeout(entry.timer)
    entry.watcher.close()
    this.folders.delete(folder)
  }
}
