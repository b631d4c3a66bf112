import { getEventListeners } from 'node:events'
import { createServer, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { Writable } from 'node:stream'
import { Console } from 'node:console'
import { format, inspect } from 'node:util'
import fc from 'fast-check'
import { afterEach, describe, expect, it } from 'vitest'
import { createLLM, LLMError, ModelConfigError } from '../src/models/llm-client.js'
import { withoutSecrets } from '../src/models/secrets.js'
import { startChatServer } from './support/chat-server.js'

const closers: (() => Promise<void>)[] = []
afterEach(async () => {
  await Promise.all(closers.splice(0).map((close) => close()))
})

async function chatServer(...args: Parameters<typeof startChatServer>) {
  const server = await startChatServer(...args)
  closers.push(server.close)
  return server
}

/** Everything a person or a log can be shown of an error. */
function everyRendering(error: unknown): string[] {
  let logged = ''
  const sink = new Writable({
    write(chunk, _encoding, done) {
      logged += String(chunk)
      done()
    },
  })
  new Console({ stdout: sink, stderr: sink }).error(error)
  const cause = (error as { cause?: unknown }).cause
  return [
    logged,
    inspect(error, { depth: Infinity }),
    inspect(error, { depth: Infinity, showHidden: true, getters: true }),
    format('%o', error),
    String(error),
    (error as Error).stack ?? '',
    JSON.stringify(error) ?? '',
    JSON.stringify(cause) ?? '',
    JSON.stringify({ name: (error as Error).name, message: (error as Error).message }),
  ]
}

async function failure(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('the call should have failed'),
    (error: unknown) => error,
  )
}

describe('secrets in errors', () => {
  it('never shows the API key when the endpoint echoes it in response headers and body', async () => {
    const key = 'sk-live-echoed-0123456789abcdef'
    const server = await chatServer(() => ({
      status: 401,
      body: { error: { message: `Incorrect API key provided: ${key}`, code: 'invalid_api_key' } },
      headers: { 'x-echo-authorization': `Bearer ${key}`, 'x-request-id': key, [`x-${key}`]: 'as a header name' },
    }))
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.url, LLM_API_KEY: key }, maxRetries: 0 })
    const error = await failure(llm('p', { role: 'action' }))
    expect(error).toBeInstanceOf(LLMError)
    expect(server.requests[0]?.headers.authorization).toBe(`Bearer ${key}`)
    // The headers are still there to read, without the key.
    const headers = (error as { cause: { headers: Headers } }).cause.headers
    expect(headers).toBeInstanceOf(Headers)
    expect(headers.get('x-echo-authorization')).toBe('Bearer ***')
    for (const text of everyRendering(error)) {
      expect(text).not.toContain(key)
      expect(text).not.toContain(key.slice(0, 14))
    }
  })

  it('refuses a base URL holding a password before any request, and shows the password nowhere', async () => {
    const server = await chatServer(() => 'unused')
    const withCredentials = server.url.replace('http://', 'http://alice:hunter2-pass@')
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: withCredentials }, maxRetries: 0 })
    const error = await failure(llm('p', { role: 'action' }))
    expect(error).toBeInstanceOf(ModelConfigError)
    expect((error as Error).message).toContain('LLM_BASE_URL holds a user name or password')
    expect(server.requests).toHaveLength(0)
    for (const text of everyRendering(error)) expect(text).not.toContain('hunter2')
  })

  it('copies errors whose fields are getters on internal slots (DOMException) as plain errors, still printable', () => {
    const secret = 'sk-DOM-0123456789'
    const error = new Error('outer', { cause: new DOMException(`aborted with ${secret}`, 'AbortError') })
    const copy = withoutSecrets(error, [secret]) as Error & { cause: Error }
    expect(copy.cause).toMatchObject({ name: 'AbortError', message: 'aborted with ***' })
    for (const text of everyRendering(copy)) expect(text).not.toContain(secret)
  })

  it('copies any error chain without a secret, whatever holds it, and keeps everything else', () => {
    const secret = 'sk-PROP-9f8e7d6c5b'
    const text = fc.oneof(
      fc.string({ maxLength: 12 }),
      fc.tuple(fc.string({ maxLength: 6 }), fc.string({ maxLength: 6 })).map(([a, b]) => `${a}${secret}${b}`),
    )
    const tree = fc.letrec((tie) => ({
      value: fc.oneof({ depthSize: 'small' }, text, fc.integer(), fc.boolean(), tie('array'), tie('object'), tie('error'), tie('headers'), tie('map')),
      array: fc.array(tie('value'), { maxLength: 3 }),
      object: fc.dictionary(text, tie('value'), { maxKeys: 3 }),
      error: fc
        .record({ message: text, cause: fc.option(tie('value'), { nil: undefined }), hidden: text, field: tie('value') })
        .map(({ message, cause, hidden, field }) => {
          const error = new Error(message, cause === undefined ? {} : { cause }) as Error & { field?: unknown }
          error.field = field
          Object.defineProperty(error, 'hidden', { value: hidden, enumerable: false })
          Object.defineProperty(error, Symbol('internal'), { value: hidden, enumerable: false })
          Object.defineProperty(error, 'lazy', { get: () => hidden, enumerable: true })
          return error
        }),
      headers: fc.array(fc.tuple(fc.constantFrom('x-a', 'x-b', 'authorization'), text), { maxLength: 3 }).map((pairs) => {
        const headers = new Headers()
        for (const [name, value] of pairs) headers.append(name, value.replace(/[^\x20-\x7e]/g, ''))
        return headers
      }),
      map: fc.array(fc.tuple(text, tie('value')), { maxLength: 3 }).map((pairs) => new Map(pairs)),
    }))
    fc.assert(
      fc.property(tree.value, (value) => {
        const copy = withoutSecrets(value, [secret])
        for (const rendering of [
          inspect(copy, { depth: Infinity, showHidden: true, getters: true }),
          format('%o', copy),
          copy instanceof Error ? String(copy) : '',
          JSON.stringify(copy) ?? '',
        ]) {
          expect(rendering).not.toContain(secret)
        }
        const plain = JSON.stringify(value)
        if (plain !== undefined) expect(JSON.stringify(copy)).toBe(plain.split(secret).join('***'))
        if (value instanceof Error) expect(copy).toBeInstanceOf(Error)
      }),
      { numRuns: 300 },
    )
  })
})

/** A raw HTTP server on 127.0.0.1 whose every reply is `reply`; counts requests and bytes sent. */
async function rawServer(reply: (res: ServerResponse, sent: { bytes: number }) => void) {
  const sent = { bytes: 0, requests: 0 }
  const server = createServer((req, res) => {
    sent.requests++
    req.resume()
    req.on('end', () => reply(res, sent))
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections()
      server.close(() => resolve())
    })
  closers.push(close)
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}/v1`, sent }
}

const LIMIT = 1024 * 1024

describe('the reply size limit', () => {
  it('fails at once, without retries, on a reply that declares a huge body', async () => {
    const server = await rawServer((res) => {
      res.writeHead(200, { 'content-type': 'application/json', 'content-length': String(600 * 1024 * 1024) })
      res.write('{"id":"x","choices":[{"message":{"content":"')
    })
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.url }, maxReplyBytes: LIMIT, maxRetries: 2 })
    const error = await failure(llm('p', { role: 'action' }))
    expect(error).toBeInstanceOf(LLMError)
    expect((error as Error).message).toContain(`the reply (${600 * 1024 * 1024} bytes) is over the ${LIMIT}-byte limit (maxReplyBytes)`)
    expect(server.sent.requests).toBe(1)
  })

  it('stops reading an endless streamed body soon after the limit, without retries', async () => {
    const chunk = Buffer.alloc(64 * 1024, 'a')
    const server = await rawServer((res, sent) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"id":"x","choices":[{"message":{"content":"')
      const pump = () => {
        while (!res.destroyed && res.write(chunk)) sent.bytes += chunk.length
        if (!res.destroyed) res.once('drain', pump)
      }
      res.on('close', () => res.removeAllListeners('drain'))
      pump()
    })
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.url }, maxReplyBytes: LIMIT, maxRetries: 2 })
    const error = await failure(llm('p', { role: 'action' }))
    expect((error as Error).message).toContain(`the reply is over the ${LIMIT}-byte limit`)
    expect(server.sent.requests).toBe(1)
    // Socket buffers hold a few MB at most; an unbounded read would go on for good.
    expect(server.sent.bytes).toBeLessThan(64 * LIMIT)
  })

  it('reads a reply under the limit', async () => {
    const content = 'x'.repeat(LIMIT / 2)
    const server = await chatServer(() => content)
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.url }, maxReplyBytes: LIMIT })
    expect(await llm('p', { role: 'action' })).toBe(content)
  })

  it('refuses a limit that is not a positive integer', () => {
    expect(() => createLLM({ maxReplyBytes: 0 })).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: Expected \`maxReplyBytes\` to be a positive integer of bytes, got \`0\`]`,
    )
  })
})

describe('listeners on the caller’s signal', () => {
  it('adds one abort listener per call and removes it after, however many retries', async () => {
    const controller = new AbortController()
    const during: number[] = []
    let calls = 0
    const server = await chatServer(() => {
      during.push(getEventListeners(controller.signal, 'abort').length)
      // Every other request fails with a retryable status.
      return ++calls % 2 === 1 ? { status: 503, body: { error: { message: 'busy' } }, headers: { 'retry-after-ms': '1' } } : 'ok'
    })
    const warnings: string[] = []
    const onWarning = (warning: Error) => warnings.push(warning.name)
    process.on('warning', onWarning)
    try {
      const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.url }, maxRetries: 2 })
      for (let call = 0; call < 12; call++) expect(await llm('p', { role: 'action', signal: controller.signal })).toBe('ok')
    } finally {
      process.off('warning', onWarning)
    }
    expect(during).toHaveLength(24)
    expect(new Set(during)).toEqual(new Set([1]))
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    expect(warnings).not.toContain('MaxListenersExceededWarning')
  })
})
