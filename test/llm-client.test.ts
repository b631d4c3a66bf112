import { createServer, type IncomingMessage, type ServerResponse } from 'node:http'
import type { AddressInfo } from 'node:net'
import { inspect } from 'node:util'
import { afterEach, describe, expect, it } from 'vitest'
import { createLLM, LLMError, ModelConfigError, resolveModelConfig } from '../src/models/llm-client.js'

interface Received {
  method: string | undefined
  url: string | undefined
  authorization: string | undefined
  body: { model?: string; temperature?: number; stream?: boolean; messages?: unknown[] }
}

type Reply = (res: ServerResponse, request: Received) => void

const servers: { close: () => Promise<void> }[] = []

afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()))
})

/** A chat-completions server on 127.0.0.1 that answers each request with the next reply (the last one repeats). */
async function startServer(...replies: Reply[]) {
  const requests: Received[] = []
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    let text = ''
    req.setEncoding('utf8')
    req.on('data', (chunk: string) => (text += chunk))
    req.on('end', () => {
      const request: Received = {
        method: req.method,
        url: req.url,
        authorization: req.headers.authorization,
        body: JSON.parse(text) as Received['body'],
      }
      requests.push(request)
      const reply = replies[Math.min(requests.length, replies.length) - 1] ?? completion('')
      reply(res, request)
    })
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  const handle = {
    baseURL: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
  servers.push(handle)
  return handle
}

function json(status: number, body: unknown, headers: Record<string, string> = {}): Reply {
  return (res) => {
    res.writeHead(status, { 'content-type': 'application/json', ...headers })
    res.end(JSON.stringify(body))
  }
}

function completion(content: string | ((request: Received) => string)): Reply {
  return (res, request) =>
    json(200, {
      id: 'chatcmpl-1',
      object: 'chat.completion',
      created: 1_700_000_000,
      model: request.body.model,
      choices: [
        {
          index: 0,
          message: { role: 'assistant', content: typeof content === 'string' ? content : content(request) },
          finish_reason: 'stop',
        },
      ],
    })(res, request)
}

const silent: Reply = () => {}
const retryFast = { 'retry-after-ms': '10' }

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  return promise.then(
    () => expect.unreachable('the call should have failed'),
    (error: unknown) => error,
  )
}

async function llmError(promise: Promise<unknown>, baseURL: string): Promise<LLMError & { text: string }> {
  const error = await rejection(promise)
  expect(error).toBeInstanceOf(LLMError)
  const failure = error as LLMError
  return Object.assign(failure, { text: failure.message.replaceAll(baseURL, '<endpoint>') })
}

describe('resolveModelConfig', () => {
  it('reads the role variables first, then the shared ones', () => {
    const env = {
      LLM_MODEL: 'qwen2.5:7b',
      LLM_BASE_URL: 'http://127.0.0.1:11434/v1',
      LLM_TEMPERATURE: '0.3',
      LLM_REVIEW_MODEL: 'gpt-4o',
      LLM_REVIEW_BASE_URL: 'https://api.example.com/v1',
      LLM_REVIEW_API_KEY: 'sk-review',
    }
    expect(resolveModelConfig('review', env)).toEqual({
      role: 'review',
      model: 'gpt-4o',
      baseURL: 'https://api.example.com/v1',
      apiKey: 'sk-review',
      temperature: 0.3,
    })
    expect(resolveModelConfig('action', env)).toEqual({
      role: 'action',
      model: 'qwen2.5:7b',
      baseURL: 'http://127.0.0.1:11434/v1',
      temperature: 0.3,
    })
  })

  it('falls back to OPENAI_BASE_URL and OPENAI_API_KEY, and sets no temperature unless told', () => {
    const env = { LLM_MODEL: 'm', OPENAI_BASE_URL: 'https://proxy.example.com/v1', OPENAI_API_KEY: 'sk-openai' }
    expect(resolveModelConfig('action', env)).toEqual({
      role: 'action',
      model: 'm',
      baseURL: 'https://proxy.example.com/v1',
      apiKey: 'sk-openai',
    })
    expect(resolveModelConfig('action', { ...env, LLM_API_KEY: 'sk-llm' }).apiKey).toBe('sk-llm')
    expect(resolveModelConfig('action', { ...env, LLM_TEMPERATURE: '0' }).temperature).toBe(0)
  })

  it('never assumes the OpenAI API: a model with a key but no base URL is refused, saying which variable to set', () => {
    const refusal = (env: NodeJS.ProcessEnv) => {
      try {
        resolveModelConfig('transition', env)
      } catch (error) {
        expect(error).toBeInstanceOf(ModelConfigError)
        return (error as Error).message
      }
      return expect.unreachable('resolveModelConfig should have thrown')
    }
    // An OPENAI_API_KEY left in the shell, and a model meant for a local server.
    expect(refusal({ LLM_MODEL: 'llama3.1', OPENAI_API_KEY: 'sk-openai-0123456789' })).toMatchInlineSnapshot(
      `"No endpoint configured for role \`transition\` (model \`llama3.1\`): set LLM_BASE_URL (or ` +
        `LLM_TRANSITION_BASE_URL for this role alone), such as http://127.0.0.1:11434/v1 for Ollama ` +
        `or https://api.openai.com/v1. OPENAI_API_KEY is set, but a key does not say where the notes ` +
        `go: to use the OpenAI API, set OPENAI_BASE_URL=https://api.openai.com/v1."`,
    )
    expect(refusal({ LLM_TRANSITION_MODEL: 'gpt-4o-mini', OPENAI_API_KEY: 'sk-openai-0123456789' })).toContain('OPENAI_BASE_URL=https://api.openai.com/v1')
    expect(resolveModelConfig('transition', { LLM_MODEL: 'gpt-4o-mini', OPENAI_API_KEY: 'sk-o', OPENAI_BASE_URL: 'https://api.openai.com/v1' })).toEqual({
      role: 'transition',
      model: 'gpt-4o-mini',
      baseURL: 'https://api.openai.com/v1',
      apiKey: 'sk-o',
    })
  })

  it('needs no key on this machine, and maps role names to variable names', () => {
    for (const host of ['localhost:8080', '[::1]:8080', '127.0.0.2']) {
      const config = resolveModelConfig('code-review 2', {
        LLM_CODE_REVIEW_2_MODEL: 'llama3.1',
        LLM_CODE_REVIEW_2_BASE_URL: `http://${host}/v1`,
        LLM_CODE_REVIEW_2_TEMPERATURE: '1',
      })
      expect(config).toEqual({ role: 'code-review 2', model: 'llama3.1', baseURL: `http://${host}/v1`, temperature: 1 })
    }
  })

  it('names the variables to set when a role is not configured', () => {
    const message = (role: string, env: NodeJS.ProcessEnv) => {
      try {
        resolveModelConfig(role, env)
      } catch (error) {
        expect(error).toBeInstanceOf(ModelConfigError)
        expect(error).toMatchObject({ name: 'ModelConfigError', code: 'model-not-configured', role })
        return (error as Error).message
      }
      return expect.unreachable('resolveModelConfig should have thrown')
    }
    expect(message('review', {})).toMatchInlineSnapshot(
      `"No model configured for role \`review\`: set LLM_MODEL and LLM_BASE_URL (or LLM_REVIEW_MODEL ` +
        `and LLM_REVIEW_BASE_URL for this role alone), and LLM_API_KEY unless the endpoint is on this ` +
        `machine."`,
    )
    expect(message('review', { LLM_BASE_URL: 'http://localhost:11434/v1', LLM_MODEL: '' })).toMatchInlineSnapshot(
      `"No model configured for role \`review\`: set LLM_MODEL (or LLM_REVIEW_MODEL for this role alone)."`,
    )
    expect(message('action', { LLM_MODEL: 'llama3.1', LLM_API_KEY: 'sk-1' })).toMatchInlineSnapshot(
      `"No endpoint configured for role \`action\` (model \`llama3.1\`): set LLM_BASE_URL (or LLM_ACTION_BASE_URL ` +
        `for this role alone), such as http://127.0.0.1:11434/v1 for Ollama or https://api.openai.com/v1."`,
    )
    expect(message('review', { LLM_MODEL: 'gpt-4o', LLM_BASE_URL: 'https://api.example.com/v1/?token=t' })).toMatchInlineSnapshot(
      `"No API key for role \`review\` at https://api.example.com/v1: set LLM_API_KEY (or LLM_REVIEW_API_KEY ` +
        `for this role alone, or OPENAI_API_KEY). Only an endpoint on this machine (127.0.0.1, localhost, ` +
        `[::1]) needs none."`,
    )
    expect(message('review', { LLM_MODEL: 'm', LLM_REVIEW_BASE_URL: 'sk-pasted-by-mistake' })).toMatchInlineSnapshot(
      `"LLM_REVIEW_BASE_URL must be an http(s) URL such as http://127.0.0.1:11434/v1, got a value of 20 characters."`,
    )
    expect(message('review', { LLM_MODEL: 'm', LLM_BASE_URL: 'http://localhost/v1', LLM_REVIEW_TEMPERATURE: 'warm' })).toMatchInlineSnapshot(
      `"LLM_REVIEW_TEMPERATURE must be a number from 0 up, got \`warm\`."`,
    )
  })
})

describe('createLLM', () => {
  it('routes each role to its model, endpoint and temperature', async () => {
    const shared = await startServer(completion((request) => `shared:${request.body.model}`))
    const review = await startServer(completion((request) => `review:${request.body.model}`))
    const llm = createLLM({
      env: {
        LLM_MODEL: 'drafter',
        LLM_BASE_URL: shared.baseURL,
        LLM_REVIEW_MODEL: 'reviewer',
        LLM_REVIEW_BASE_URL: review.baseURL,
        LLM_REVIEW_TEMPERATURE: '0.7',
      },
    })

    expect(await llm('Is it done?', { role: 'review', system: 'You review.' })).toBe('review:reviewer')
    expect(await llm('Write it.', { role: 'action' })).toBe('shared:drafter')

    expect(review.requests.map(({ method, url, body }) => ({ method, url, body }))).toEqual([
      {
        method: 'POST',
        url: '/v1/chat/completions',
        body: {
          model: 'reviewer',
          temperature: 0.7,
          stream: false,
          messages: [
            { role: 'system', content: 'You review.' },
            { role: 'user', content: 'Is it done?' },
          ],
        },
      },
    ])
    expect(shared.requests.map(({ body }) => body)).toEqual([{ model: 'drafter', stream: false, messages: [{ role: 'user', content: 'Write it.' }] }])
  })

  it('uses LLM_TEMPERATURE for roles without their own', async () => {
    const server = await startServer(completion('ok'))
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL, LLM_TEMPERATURE: '0.4' } })
    await llm('p', { role: 'transition' })
    expect(server.requests[0]?.body.temperature).toBe(0.4)
  })

  it('sends the key as a bearer token, and a placeholder to a keyless local endpoint', async () => {
    const server = await startServer(completion('ok'))
    await createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL, LLM_API_KEY: 'sk-secret-1' } })('p', {
      role: 'action',
    })
    await createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL } })('p', { role: 'action' })
    expect(server.requests.map(({ authorization }) => authorization)).toEqual(['Bearer sk-secret-1', 'Bearer not-needed'])
  })

  it('retries a 429 and a 500, then returns the reply', async () => {
    const server = await startServer(
      json(429, { error: { message: 'slow down' } }, retryFast),
      json(500, { error: { message: 'boom' } }, retryFast),
      completion('third time'),
    )
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL }, maxRetries: 2 })
    expect(await llm('p', { role: 'action' })).toBe('third time')
    expect(server.requests).toHaveLength(3)
  })

  it('gives up after maxRetries with the status in the error', async () => {
    const server = await startServer(json(503, { error: { message: 'overloaded' } }, retryFast))
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL }, maxRetries: 1 })
    const error = await llmError(llm('p', { role: 'action' }), server.baseURL)
    expect(server.requests).toHaveLength(2)
    expect(error).toMatchObject({ code: 'llm-request-failed', status: 503, role: 'action', model: 'm' })
    expect(error.text).toMatchInlineSnapshot(`"LLM call for role \`action\` failed (model \`m\` at <endpoint>): HTTP 503 after 2 attempts: overloaded"`)
  })

  it('times out a server that never answers', async () => {
    const server = await startServer(silent)
    const llm = createLLM({ env: { LLM_REVIEW_MODEL: 'slow', LLM_BASE_URL: server.baseURL }, timeoutMs: 200, maxRetries: 0 })
    const error = await llmError(llm('p', { role: 'review' }), server.baseURL)
    expect(error).toMatchObject({ name: 'LLMError', role: 'review', model: 'slow', endpoint: server.baseURL })
    expect(error.status).toBeUndefined()
    expect(error.text).toMatchInlineSnapshot(`"LLM call for role \`review\` failed (model \`slow\` at <endpoint>): no reply within 200 ms, 1 attempt"`)
  })

  it('times out a reply whose body stalls after the headers', async () => {
    const server = await startServer((res) => {
      res.writeHead(200, { 'content-type': 'application/json' })
      res.write('{"id":')
    })
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL }, timeoutMs: 200, maxRetries: 0 })
    const error = await llmError(llm('p', { role: 'action' }), server.baseURL)
    expect(error.text).toMatchInlineSnapshot(`"LLM call for role \`action\` failed (model \`m\` at <endpoint>): no reply within 200 ms, 1 attempt"`)
  })

  it('sends the requests through the given fetch', async () => {
    const server = await startServer(completion('ok'))
    const urls: string[] = []
    const llm = createLLM({
      env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL },
      fetch: (input, init) => {
        urls.push(String(input))
        return fetch(input, init)
      },
    })
    expect(await llm('p', { role: 'action' })).toBe('ok')
    expect(urls).toEqual([`${server.baseURL}/chat/completions`])
  })

  it('reports a reply without message content', async () => {
    const server = await startServer(json(200, { foo: 1 }))
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL } })
    const error = await llmError(llm('p', { role: 'action' }), server.baseURL)
    expect(error.text).toMatchInlineSnapshot(`"LLM call for role \`action\` failed (model \`m\` at <endpoint>): the reply holds no message content: {"foo":1}"`)
  })

  it('truncates a long reply without content', async () => {
    const server = await startServer(json(200, { choices: [], padding: 'x'.repeat(1000) }))
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL } })
    const error = await llmError(llm('p', { role: 'action' }), server.baseURL)
    expect(error.message.length).toBeLessThan(400)
    expect(error.message).toContain('(1027 characters)')
  })

  it('never shows the API key, even when the server echoes it', async () => {
    const key = 'sk-live-0123456789abcdef'
    const server = await startServer(json(401, { error: { message: `Incorrect API key provided: ${key}.`, code: 'invalid_api_key' } }))
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL, LLM_API_KEY: key } })
    const error = await llmError(llm('p', { role: 'action' }), server.baseURL)
    expect(server.requests[0]?.authorization).toBe(`Bearer ${key}`)
    expect(error.status).toBe(401)
    expect(error.cause).toBeInstanceOf(Error)
    expect(error.text).toMatchInlineSnapshot(`"LLM call for role \`action\` failed (model \`m\` at <endpoint>): HTTP 401: Incorrect API key provided: ***."`)
    for (const text of [error.message, error.stack, String(error.cause), inspect(error, { depth: 10 })]) {
      expect(text).not.toContain(key)
      expect(text).not.toContain(key.slice(0, 12))
    }
  })

  it('names the refused connection', async () => {
    const server = await startServer(completion('unused'))
    await server.close()
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL }, maxRetries: 0 })
    const error = await llmError(llm('p', { role: 'action' }), server.baseURL)
    expect(error.text).toMatchInlineSnapshot(`"LLM call for role \`action\` failed (model \`m\` at <endpoint>): Connection error. (ECONNREFUSED)"`)
  })

  it('rejects with the signal reason when aborted', async () => {
    const server = await startServer(silent)
    const llm = createLLM({ env: { LLM_MODEL: 'm', LLM_BASE_URL: server.baseURL } })
    const controller = new AbortController()
    const call = llm('p', { role: 'action', signal: controller.signal })
    await expect.poll(() => server.requests.length).toBe(1)
    controller.abort(new Error('user stopped the run'))
    expect(await rejection(call)).toEqual(new Error('user stopped the run'))
    const early = await rejection(llm('p', { role: 'action', signal: AbortSignal.abort() }))
    expect(early).toMatchObject({ name: 'AbortError' })
    expect(server.requests).toHaveLength(1)
  })

  it('reads a role configuration at its first call, not at creation', async () => {
    const llm = createLLM({ env: {} })
    const error = await rejection(llm('p', { role: 'planning' }))
    expect(error).toBeInstanceOf(ModelConfigError)
    expect((error as Error).message).toContain('LLM_PLANNING_MODEL')
  })

  it('refuses invalid options at once', () => {
    expect(() => createLLM({ timeoutMs: 0 })).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: Expected \`timeoutMs\` to be milliseconds from 1 up to 2147483647 (about 24.8 days, the longest a timer waits), got \`0\`]`,
    )
    expect(() => createLLM({ maxRetries: -1 })).toThrowErrorMatchingInlineSnapshot(
      `[TypeError: Expected \`maxRetries\` to be an integer from 0 up, got \`-1\`]`,
    )
  })
})
