/** How deep {@link withoutSecrets} copies; what lies deeper is replaced by a note. */
const MAX_DEPTH = 8
const OMITTED = '[omitted by vaultplan]'

/** `text` with every occurrence of each secret replaced by `***`. Empty secrets are ignored. */
export function redact(text: string, secrets: readonly string[]): string {
  for (const secret of secrets) if (secret !== '') text = text.split(secret).join('***')
  return text
}

/**
 * A copy of `value` (typically an error and its causes) in which no string
 * holds a secret, so that whatever prints it (`console.error`,
 * `util.inspect` at any depth, `JSON.stringify`, `String`) cannot show one.
 * Everything is copied, not patched in place: own properties of any kind
 * (non-enumerable, symbol-keyed, getters, read once), `Headers`, `Map`,
 * `Set`, `URL`, arrays and byte buffers (as redacted text). Errors and other
 * objects keep their prototype, so `instanceof` still holds. A value deeper
 * than a few levels, or one whose contents hide in internal slots that
 * cannot be read back (a `Response`, a stream), is replaced by a short note.
 */
export function withoutSecrets<T>(value: T, secrets: readonly string[]): T {
  const live = secrets.filter((secret) => secret !== '')
  return copy(value, live, 0, new Map()) as T
}

function copy(value: unknown, secrets: readonly string[], depth: number, seen: Map<object, unknown>): unknown {
  if (typeof value === 'string') return redact(value, secrets)
  if (typeof value === 'function') return `[function ${redact(value.name, secrets)}]`
  if (typeof value !== 'object' || value === null) return value
  if (seen.has(value)) return seen.get(value)
  if (depth >= MAX_DEPTH) return OMITTED
  const next = (inner: unknown) => copy(inner, secrets, depth + 1, seen)
  if (value instanceof Headers) {
    const headers = new Headers()
    seen.set(value, headers)
    for (const [name, text] of value) headers.append(redact(name, secrets), redact(text, secrets))
    return headers
  }
  if (value instanceof URL) return redact(withoutCredentials(value), secrets)
  if (ArrayBuffer.isView(value) || value instanceof ArrayBuffer) {
    const bytes = value instanceof ArrayBuffer ? new Uint8Array(value) : new Uint8Array(value.buffer, value.byteOffset, value.byteLength)
    return redact(Buffer.from(bytes).toString('utf8'), secrets)
  }
  if (value instanceof Map) {
    const map = new Map()
    seen.set(value, map)
    for (const [key, inner] of value) map.set(next(key), next(inner))
    return map
  }
  if (value instanceof Set) {
    const set = new Set()
    seen.set(value, set)
    for (const inner of value) set.add(next(inner))
    return set
  }
  if (value instanceof Date || value instanceof RegExp) return redact(String(value), secrets)
  if (Array.isArray(value)) {
    const list: unknown[] = []
    seen.set(value, list)
    for (const inner of value) list.push(next(inner))
    return list
  }
  if (!isPlainCopyable(value)) return `[${redact(value.constructor?.name ?? 'object', secrets)} ${OMITTED}]`
  // A real error underneath, so that inspect prints it as one (stack first), with the original's prototype.
  let proto = Object.getPrototypeOf(value) as object | null
  const slotted = value instanceof Error && !readsOnCopy(proto)
  if (slotted) proto = Error.prototype
  const target = (value instanceof Error ? Object.setPrototypeOf(new Error(), proto) : Object.create(proto)) as Record<PropertyKey, unknown>
  seen.set(value, target)
  for (const key of Reflect.ownKeys(value)) {
    const descriptor = Reflect.getOwnPropertyDescriptor(value, key)!
    let inner: unknown
    try {
      inner = 'value' in descriptor ? descriptor.value : descriptor.get?.call(value)
    } catch {
      inner = undefined
    }
    Object.defineProperty(target, typeof key === 'string' ? redact(key, secrets) : key, {
      value: next(inner),
      enumerable: descriptor.enumerable ?? false,
      writable: true,
      configurable: true,
    })
  }
  if (slotted) {
    for (const key of ['name', 'message'] as const) {
      Object.defineProperty(target, key, { value: next(readSafely(value, key)), enumerable: false, writable: true, configurable: true })
    }
  }
  return target
}

/**
 * Whether an error's prototype reads `name` and `message` on a copy: not so
 * for `DOMException`, whose getters need its internal slots (a copy of one
 * becomes a plain `Error` holding both as its own values).
 */
function readsOnCopy(proto: object | null): boolean {
  try {
    const probe = Object.setPrototypeOf(new Error(), proto) as Error
    return typeof `${probe.name}${probe.message}` === 'string'
  } catch {
    return false
  }
}

function readSafely(value: Error, key: 'name' | 'message'): string {
  try {
    return String(value[key])
  } catch {
    return ''
  }
}

/**
 * Whether an object's contents are all own properties, so a copy of them is
 * the whole object: plain objects, errors and instances of ordinary classes,
 * not built-ins that keep their data in internal slots (`Response`,
 * `Request`, streams, promises, `WeakMap` ...).
 */
function isPlainCopyable(value: object): boolean {
  if (value instanceof Error) return true
  const tag = Object.prototype.toString.call(value)
  if (tag !== '[object Object]') return false
  const slots = [
    globalThis.Response,
    globalThis.Request,
    globalThis.ReadableStream,
    globalThis.WritableStream,
    globalThis.Blob,
    globalThis.AbortSignal,
    globalThis.FormData,
  ]
  return !slots.some((type) => typeof type === 'function' && value instanceof type)
}

/** A URL as text without its user name and password. */
function withoutCredentials(url: URL): string {
  const copy = new URL(url.href)
  copy.username = ''
  copy.password = ''
  return copy.href
}

/**
 * The strings a model configuration must never show: the key, and any user
 * name or password in the base URL, as written and percent-decoded.
 */
export function secretsOf(config: { apiKey?: string; baseURL: string }): string[] {
  const secrets = config.apiKey ? [config.apiKey] : []
  if (URL.canParse(config.baseURL)) {
    const { username, password } = new URL(config.baseURL)
    for (const part of [password, username]) {
      if (part === '') continue
      secrets.push(part)
      try {
        secrets.push(decodeURIComponent(part))
      } catch {
        // not valid percent-encoding: the raw form is enough
      }
    }
  }
  // Longest first, so that a secret containing another is redacted whole.
  return [...new Set(secrets)].sort((a, b) => b.length - a.length)
}
