import type { OpenAI } from 'openai'
import { followSignal } from '../core/abort.js'
import { checkTimeoutMs } from '../core/durations.js'
import { VaultplanError } from '../core/errors.js'
import { describeEndpoint, resolveModelConfig, type ModelConfig } from './model-config.js'
import { redact, secretsOf, withoutSecrets } from './secrets.js'
import type { CallLLM } from '../core/types.js'

export { ModelConfigError, resolveModelConfig, type ModelConfig } from './model-config.js'

/** The SDK, loaded on the first model call: runs that bring their own `llm` never pay for it. */
type SDK = typeof import('openai')
let sdk: Promise<SDK> | undefined

/** Options of {@link createLLM}. */
export interface CreateLLMOptions {
  /** Where the `LLM_*` and `OPENAI_*` variables are read. @default process.env */
  env?: Record<string, string | undefined>
  /** How long one attempt may take, reply body included, in milliseconds. @default 120000 */
  timeoutMs?: number
  /** Retries after a timeout, a lost connection, a 408, 409, 429 or 5xx, with backoff (or the server's `retry-after`). @default 2 */
  maxRetries?: number
  /** The largest reply body read, in bytes; a larger one fails the call (no retry) as soon as it is seen. @default 8388608 (8 MiB, a plan note's limit) */
  maxReplyBytes?: number
  /** The `fetch` the requests go through. @default globalThis.fetch */
  fetch?: typeof fetch
}

/** Thrown when a model call fails or its reply holds no text; `cause` is the underlying error. */
export class LLMError extends VaultplanError<'llm-request-failed'> {
  override readonly name = 'LLMError'
  readonly role: string
  readonly model: string
  /** The endpoint, without credentials or query. */
  readonly endpoint: string
  /** The HTTP status of the failed reply, when there was one. */
  readonly status?: number

  constructor(config: ModelConfig, detail: string, options: { cause?: unknown; status?: number } = {}) {
    const endpoint = describeEndpoint(config.baseURL)
    super('llm-request-failed', `LLM call for role \`${config.role}\` failed (model \`${config.model}\` at ${endpoint}): ${detail}`, {
      cause: options.cause,
    })
    this.role = config.role
    this.model = config.model
    this.endpoint = endpoint
    if (options.status !== undefined) this.status = options.status
  }
}

const DEFAULTS = { timeoutMs: 120_000, maxRetries: 2, maxReplyBytes: 8 * 1024 * 1024 } as const
// The SDK refuses to run without a key; endpoints on this machine ignore it.
const PLACEHOLDER_KEY = 'not-needed'
const REPLY_PREVIEW = 200

/**
 * Creates the {@link CallLLM} that sends each call to the model of its
 * `role`, read from the environment by {@link resolveModelConfig} at the role's
 * first call and kept. Calls go through the official `openai` client to the
 * endpoint's `/chat/completions`, with the system message first when given,
 * and a temperature only when the environment sets one. Each call puts one
 * listener on the caller's `signal` and removes it when the call is over.
 *
 * @throws `TypeError` at once when `timeoutMs`, `maxRetries` or `maxReplyBytes` is not a valid count.
 * The returned function rejects with a {@link ModelConfigError} when the role is
 * not configured, with an {@link LLMError} when the call fails (naming role,
 * model, endpoint and HTTP status; the key and the URL's credentials appear
 * nowhere in the error or its causes), the reply is over `maxReplyBytes` or
 * holds no text, and with `signal.reason` when the signal aborts it.
 */
export function createLLM(options: CreateLLMOptions = {}): CallLLM {
  const timeoutMs = options.timeoutMs ?? DEFAULTS.timeoutMs
  const maxRetries = options.maxRetries ?? DEFAULTS.maxRetries
  const maxReplyBytes = options.maxReplyBytes ?? DEFAULTS.maxReplyBytes
  checkTimeoutMs('timeoutMs', timeoutMs)
  if (!Number.isSafeInteger(maxRetries) || maxRetries < 0) {
    throw new TypeError(`Expected \`maxRetries\` to be an integer from 0 up, got \`${maxRetries}\``)
  }
  if (!Number.isSafeInteger(maxReplyBytes) || maxReplyBytes <= 0) {
    throw new TypeError(`Expected \`maxReplyBytes\` to be a positive integer of bytes, got \`${maxReplyBytes}\``)
  }
  const fetcher = options.fetch ?? fetch
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
    const secrets = [...secretsOf(config), PLACEHOLDER_KEY]
    const call = followSignal(signal)
    let tooLarge: { bytes: number | undefined } | undefined
    // A client of this call only, so that an oversized body ends this call and is not retried.
    const perCall = client.withOptions({
      fetch: (url, init) =>
        readLimited(fetcher, url, init, maxReplyBytes, (bytes) => {
          tooLarge = { bytes }
          call.abort(new Error('reply too large'))
        }),
    })
    let reply: unknown
    try {
      reply = await perCall.chat.completions.create(
        { model: config.model, ...(config.temperature !== undefined && { temperature: config.temperature }), messages, stream: false },
        { signal: call.signal },
      )
    } catch (error) {
      if (signal?.aborted) throw signal.reason
      if (tooLarge) {
        const size = tooLarge.bytes === undefined ? '' : ` (${tooLarge.bytes} bytes)`
        throw new LLMError(config, `the reply${size} is over the ${maxReplyBytes}-byte limit (maxReplyBytes); it was not read further`)
      }
      const { detail, status } = describeFailure(await sdk!, error, timeoutMs, maxRetries, secrets)
      throw new LLMError(config, detail, {
        cause: withoutSecrets(error, secrets),
        ...(status !== undefined && { status }),
      })
    } finally {
      call.dispose()
    }
    const completion = reply as Partial<OpenAI.ChatCompletion> | undefined
    const message = completion?.choices?.[0]?.message
    if (typeof message?.content === 'string') {
      const usage = completion?.usage
      onUsage?.({
        role,
        model: typeof completion?.model === 'string' && completion.model ? completion.model : config.model,
        ...(usage && { input: usage.prompt_tokens, output: usage.completion_tokens }),
      })
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
 * Fetches and reads the whole body, at most `limit` bytes, while the SDK's
 * per-attempt timer still runs: the SDK stops its timer once headers arrive,
 * so a body that stalls would otherwise hang the call for good. A body
 * declared or found larger than `limit` is cancelled as soon as that is
 * known (`tooLarge` is told first), never buffered whole.
 */
async function readLimited(
  fetcher: typeof fetch,
  url: string | URL | Request,
  init: RequestInit | undefined,
  limit: number,
  tooLarge: (bytes: number | undefined) => void,
): Promise<Response> {
  const response = await fetcher(url, init)
  if (response.body === null) return response
  const declared = Number(response.headers.get('content-length') ?? Number.NaN)
  if (declared > limit) {
    tooLarge(declared)
    await response.body.cancel().catch(() => {})
    throw new Error(`the reply is ${declared} bytes, over the limit`)
  }
  const reader = response.body.getReader()
  const chunks: Uint8Array[] = []
  let length = 0
  for (;;) {
    const { done, value } = await reader.read()
    if (done) break
    length += value.byteLength
    if (length > limit) {
      tooLarge(undefined)
      await reader.cancel().catch(() => {})
      throw new Error('the reply is over the limit')
    }
    chunks.push(value)
  }
  return new Response(Buffer.concat(chunks), response)
}

function truncate(text: string): string {
  return text.length > REPLY_PREVIEW ? `${text.slice(0, REPLY_PREVIEW)}... (${text.length} characters)` : text
}
