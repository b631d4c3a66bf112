import type { OpenAI } from 'openai'

/** The SDK, loaded on the first model call: runs that bring their own `llm` never pay for it. */
type SDK = typeof import('openai')
let sdk: Promise<SDK> | undefined
import type { CallLLM } from './types.js'

/** Where one role's calls go, as read from the environment by {@link resolveModelConfig}. */
export interface ModelConfig {
  role: string
  model: string
  /** The OpenAI-compatible endpoint, such as `http://127.0.0.1:11434/v1`. */
  baseURL: string
  /** Absent only for an endpoint on this machine, which needs none. */
  apiKey?: string
  temperature: number
}

/** Options of {@link createLLM}. */
export interface CreateLLMOptions {
  /** Where the `LLM_*` and `OPENAI_*` variables are read. @default process.env */
  env?: NodeJS.ProcessEnv
  /** How long one attempt may take, reply body included, in milliseconds. @default 120000 */
  timeoutMs?: number
  /** Retries after a timeout, a lost connection, a 408, 409, 429 or 5xx, with backoff (or the server's `retry-after`). @default 2 */
  maxRetries?: number
  /** The `fetch` the requests go through. @default globalThis.fetch */
  fetch?: typeof fetch
}

/** Thrown when the environment does not say which model and endpoint serve a role. */
export class ModelConfigError extends Error {
  override name = 'ModelConfigError' as const
  readonly code = 'MODEL_NOT_CONFIGURED' as const
  readonly role: string

  constructor(role: string, message: string) {
    super(message)
    this.role = role
  }
}

/** Thrown when a model call fails or its reply holds no text; `cause` is the underlying error. */
export class LLMError extends Error {
  override name = 'LLMError' as const
  readonly code = 'LLM_REQUEST_FAILED' as const
  readonly role: string
  readonly model: string
  /** The endpoint, without credentials or query. */
  readonly endpoint: string
  /** The HTTP status of the failed reply, when there was one. */
  readonly status?: number

  constructor(config: ModelConfig, detail: string, options: { cause?: unknown; status?: number } = {}) {
    const endpoint = describeEndpoint(config.baseURL)
    super(`LLM call for role \`${config.role}\` failed (model \`${config.model}\` at ${endpoint}): ${detail}`, {
      cause: options.cause,
    })
    this.role = config.role
    this.model = config.model
    this.endpoint = endpoint
    if (options.status !== undefined) this.status = options.status
  }
}

const DEFAULTS = { timeoutMs: 120_000, maxRetries: 2 } as const
const OPENAI_BASE_URL = 'https://api.openai.com/v1'
// The SDK refuses to run without a key; endpoints on this machine ignore it.
const PLACEHOLDER_KEY = 'not-needed'
const REPLY_PREVIEW = 200

/**
 * Reads the model, endpoint, key and temperature of `role` from `env`.
 * `LLM_<ROLE>_MODEL`, `LLM_<ROLE>_BASE_URL`, `LLM_<ROLE>_API_KEY` and
 * `LLM_<ROLE>_TEMPERATURE` (the role upper-cased, other characters as `_`)
 * fall back to `LLM_MODEL`, `LLM_BASE_URL` then `OPENAI_BASE_URL`,
 * `LLM_API_KEY` then `OPENAI_API_KEY`, and `LLM_TEMPERATURE` (default 0).
 * An endpoint on this machine (127.x, localhost, [::1]) needs no key. With no
 * base URL at all but `OPENAI_API_KEY` as the key, the endpoint is the OpenAI API.
 * Empty variables count as unset.
 *
 * @throws {ModelConfigError} when the model, the endpoint or a needed key is
 *   missing, or a base URL or temperature does not parse; the message names the
 *   variables to set.
 * @throws {TypeError} when `role` is empty.
 */
export function resolveModelConfig(role: string, env: NodeJS.ProcessEnv = process.env): ModelConfig {
  if (typeof role !== 'string' || role.trim() === '') {
    throw new TypeError(`Expected \`role\` to be a non-empty string, got \`${String(role)}\``)
  }
  const prefix = `LLM_${role.toUpperCase().replace(/[^A-Z0-9]/g, '_')}_`
  const read = (...names: string[]) =>
    names.map((name) => ({ name, value: env[name]?.trim() ?? '' })).find(({ value }) => value !== '')
  const model = read(`${prefix}MODEL`, 'LLM_MODEL')
  const key = read(`${prefix}API_KEY`, 'LLM_API_KEY', 'OPENAI_API_KEY')
  let base = read(`${prefix}BASE_URL`, 'LLM_BASE_URL', 'OPENAI_BASE_URL')
  // Someone who set only OPENAI_API_KEY means the OpenAI API, as the SDK assumes.
  if (!base && key?.name === 'OPENAI_API_KEY') base = { name: 'OPENAI_API_KEY', value: OPENAI_BASE_URL }
  const temperatureVar = read(`${prefix}TEMPERATURE`, 'LLM_TEMPERATURE')

  const fail = (message: string) => new ModelConfigError(role, message)
  const roleAlone = (name: string) => `${prefix}${name} for this role alone`

  if (!model && !base) {
    throw fail(
      `No model configured for role \`${role}\`: set LLM_MODEL and LLM_BASE_URL (or ${prefix}MODEL and ${roleAlone('BASE_URL')}), and LLM_API_KEY unless the endpoint is on this machine.`,
    )
  }
  if (!model) throw fail(`No model configured for role \`${role}\`: set LLM_MODEL (or ${roleAlone('MODEL')}).`)
  if (!base) {
    throw fail(
      `No endpoint configured for role \`${role}\` (model \`${model.value}\`): set LLM_BASE_URL (or ${roleAlone('BASE_URL')}), such as http://127.0.0.1:11434/v1 for Ollama or ${OPENAI_BASE_URL}.`,
    )
  }
  const url = URL.canParse(base.value) ? new URL(base.value) : undefined
  if (url?.protocol !== 'http:' && url?.protocol !== 'https:') {
    // A malformed value may be a pasted key: show only its length.
    throw fail(`${base.name} must be an http(s) URL such as http://127.0.0.1:11434/v1, got a value of ${base.value.length} characters.`)
  }
  if (!key && !isLoopback(url)) {
    throw fail(
      `No API key for role \`${role}\` at ${describeEndpoint(base.value)}: set LLM_API_KEY (or ${roleAlone('API_KEY')}, or OPENAI_API_KEY). Only an endpoint on this machine (127.0.0.1, localhost, [::1]) needs none.`,
    )
  }
  const temperature = temperatureVar ? Number(temperatureVar.value) : 0
  if (temperatureVar && !(temperature >= 0 && Number.isFinite(temperature))) {
    throw fail(`${temperatureVar.name} must be a number from 0 up, got \`${temperatureVar.value}\`.`)
  }
  return { role, model: model.value, baseURL: base.value, ...(key && { apiKey: key.value }), temperature }
}

/**
 * Creates the {@link CallLLM} that sends each call to the model of its
 * `role`, read from the environment by {@link resolveModelConfig} at the role's
 * first call and kept. Calls go through the official `openai` client to the
 * endpoint's `/chat/completions`, with the system message first when given.
 *
 * @throws {TypeError} at once when `timeoutMs` or `maxRetries` is not a valid count.
 * The returned function rejects with a {@link ModelConfigError} when the role is
 * not configured, with an {@link LLMError} when the call fails (naming role,
 * model, endpoint and HTTP status, never the key) or the reply holds no text,
 * and with `signal.reason` when the signal aborts it.
 */
export function createLLM(options: CreateLLMOptions = {}): CallLLM {
  const timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs
  const maxRetries = options.maxRetries ?? DEFAULTS.maxRetries
  if (!Number.isSafeInteger(timeoutMs) || timeoutMs <= 0) {
    throw new TypeError(`Expected \`timeoutMs\` to be a positive integer of milliseconds, got \`${timeoutMs}\``)
  }
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) {
    throw new TypeError(`Expected \`maxRetries\` to be an integer from 0 up, got \`${maxRetries}\``)
  }
  const clients = new Map<string, { config: ModelConfig; client: OpenAI }>()

  const clientFor = async (role: string) => {
    let entry = clients.get(role)
    if (!entry) {
      const config = resolveModelConfig(role, options.env ?? process.env)
      const { OpenAI } = await (sdk ??= import('openai'))
      const client = new OpenAI({
        baseURL: config.baseURL,
        apiKey: config.apiKey ?? PLACEHOLDER_KEY,
        // Explicit nulls stop the SDK from reading these from process.env and
        // sending them to endpoints that are not OpenAI's.
        organization: null,
        project: null,
        adminAPIKey: null,
        webhookSecret: null,
        timeout: timeoutMs,
        maxRetries,
        fetch: (url, init) => readWhole(options.fetch ?? fetch, url, init),
      })
      entry = { config, client }
      clients.set(role, entry)
    }
    return entry
  }

  return async (prompt, { role, system, signal, onUsage }) => {
    signal?.throwIfAborted()
    const { config, client } = await clientFor(role)
    const messages: OpenAI.ChatCompletionMessageParam[] = []
    if (system !== undefined) messages.push({ role: 'system', content: system })
    messages.push({ role: 'user', content: prompt })
    const secrets = [config.apiKey ?? PLACEHOLDER_KEY]
    let reply: unknown
    try {
      reply = await client.chat.completions.create(
        { model: config.model, temperature: config.temperature, messages, stream: false },
        signal ? { signal } : undefined,
      )
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      const { detail, status } = describeFailure(await sdk!, error, timeoutMs, maxRetries, secrets)
      throw new LLMError(config, detail, {
        cause: scrub(error, secrets),
        ...(status !== undefined && { status }),
      })
    }
    const completion = reply as Partial<OpenAI.ChatCompletion> | undefined
    const message = completion?.choices?.[0]?.message
    if (typeof message?.content === 'string') {
      const usage = completion?.usage
      onUsage?.({ role, model: typeof completion?.model === 'string' && completion.model ? completion.model : config.model, ...(usage && { input: usage.prompt_tokens, output: usage.completion_tokens }) })
      return message.content
    }
    const detail = message?.refusal
      ? `the model refused: ${truncate(redact(message.refusal, secrets))}`
      : `the reply holds no message content: ${truncate(redact(JSON.stringify(reply) ?? String(reply), secrets))}`
    throw new LLMError(config, detail)
  }
}

// Redacts before truncating, so that no cut-off piece of a key survives.
function describeFailure({ APIError, APIConnectionTimeoutError }: SDK, error: unknown, timeoutMs: number, maxRetries: number, secrets: string[]) {
  const attempts = `${maxRetries + 1} attempt${maxRetries === 0 ? '' : 's'}`
  if (error instanceof APIConnectionTimeoutError) {
    return { detail: `no reply within ${timeoutMs} ms, ${attempts}`, status: undefined }
  }
  if (error instanceof APIError && error.status !== undefined) {
    // The SDK prefixes its message with the status; say it once.
    const text = error.message.replace(new RegExp(`^${error.status}\\s*`), '')
    const retried = [408, 409, 429].includes(error.status) || error.status >= 500 ? ` after ${attempts}` : ''
    return { detail: `HTTP ${error.status}${retried}: ${truncate(redact(text, secrets))}`, status: error.status }
  }
  const code = findCode(error)
  const text = error instanceof Error ? error.message : String(error)
  return { detail: `${truncate(redact(text, secrets))}${code ? ` (${code})` : ''}`, status: undefined }
}

/** The system error code (ECONNREFUSED, ENOTFOUND ...) buried in fetch's causes, if any. */
function findCode(error: unknown): string | undefined {
  for (let depth = 0; error instanceof Error && depth < 5; depth++) {
    const code = (error as { code?: unknown }).code
    if (typeof code === 'string' && /^E[A-Z]+$/.test(code)) return code
    error = error.cause
  }
  return undefined
}

/**
 * Fetches and reads the whole body while the SDK's per-attempt timer still runs:
 * the SDK stops its timer once headers arrive, so a body that stalls would
 * otherwise hang the call for good.
 */
async function readWhole(fetcher: typeof fetch, url: string | URL | Request, init?: RequestInit): Promise<Response> {
  const response = await fetcher(url, init)
  if (response.body === null) return response
  return new Response(await response.arrayBuffer(), response)
}

function isLoopback(url: URL): boolean {
  const host = url.hostname
  return host === 'localhost' || host.endsWith('.localhost') || host === '[::1]' || /^127(\.\d{1,3}){3}$/.test(host)
}

/** The endpoint as shown in messages: no user, password, query or fragment, which may carry secrets. */
function describeEndpoint(baseURL: string): string {
  try {
    const url = new URL(baseURL)
    return `${url.protocol}//${url.host}${url.pathname.replace(/\/$/, '')}`
  } catch {
    return '<invalid URL>'
  }
}

function redact(text: string, secrets: string[]): string {
  for (const secret of secrets) text = text.split(secret).join('***')
  return text
}

/**
 * Removes the key from an error chain in place: a server may echo the key in
 * its error body, and Node prints an error's causes and fields when it is logged.
 */
function scrub(value: unknown, secrets: string[], depth = 0): unknown {
  if (depth > 4 || typeof value !== 'object' || value === null) return value
  const record = value as Record<string, unknown>
  const keys = new Set(Object.keys(record))
  if (value instanceof Error) for (const key of ['message', 'stack', 'cause']) keys.add(key)
  for (const key of keys) {
    try {
      const field = record[key]
      if (typeof field !== 'string') scrub(field, secrets, depth + 1)
      else if (redact(field, secrets) !== field) record[key] = redact(field, secrets)
    } catch {}
  }
  return value
}

function truncate(text: string): string {
  return text.length > REPLY_PREVIEW ? `${text.slice(0, REPLY_PREVIEW)}... (${text.length} characters)` : text
}
