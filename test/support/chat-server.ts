import { createServer, type IncomingHttpHeaders } from 'node:http'
import type { AddressInfo } from 'node:net'

/** One chat-completions request as the scripted server received it. */
export interface ChatRequest {
  path: string
  model: string
  temperature: number | undefined
  system: string
  prompt: string
  headers: IncomingHttpHeaders
  /** What kind of call the prompt is: a judge grid, a tool choice, tool arguments or step work. */
  kind: 'judge' | 'tool-choice' | 'arguments' | 'work'
}

type Reply = string | { status: number; body: unknown; headers?: Record<string, string> }

/**
 * A real HTTP server on 127.0.0.1 speaking the chat-completions protocol
 * (streaming off); `respond` scripts each reply.
 */
export async function startChatServer(respond: (request: ChatRequest) => Reply | Promise<Reply>) {
  const requests: ChatRequest[] = []
  const server = createServer(async (incoming, response) => {
    const chunks: Buffer[] = []
    for await (const chunk of incoming) chunks.push(chunk as Buffer)
    const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as {
      model: string
      temperature?: number
      messages: { role: string; content: string }[]
    }
    const system = body.messages.find((message) => message.role === 'system')?.content ?? ''
    const prompt = body.messages.filter((message) => message.role === 'user').at(-1)?.content ?? ''
    const kind = /judge conditions/i.test(system)
      ? 'judge'
      : /which tools/i.test(system)
        ? 'tool-choice'
        : /arguments of one tool call/i.test(system)
          ? 'arguments'
          : 'work'
    const request: ChatRequest = { path: incoming.url ?? '', model: body.model, temperature: body.temperature, system, prompt, headers: incoming.headers, kind }
    requests.push(request)
    const reply = await respond(request)
    if (typeof reply === 'string') {
      response.writeHead(200, { 'content-type': 'application/json' })
      response.end(
        JSON.stringify({
          id: `chat-${requests.length}`,
          object: 'chat.completion',
          created: Math.floor(Date.now() / 1000),
          model: body.model,
          choices: [{ index: 0, message: { role: 'assistant', content: reply }, finish_reason: 'stop' }],
          // A count as a real endpoint reports it: a quarter of the characters stands in for a tokenizer.
          usage: {
            prompt_tokens: Math.ceil((system.length + prompt.length) / 4),
            completion_tokens: Math.ceil(reply.length / 4),
            total_tokens: Math.ceil((system.length + prompt.length + reply.length) / 4),
          },
        }),
      )
    } else {
      response.writeHead(reply.status, { 'content-type': 'application/json', ...reply.headers })
      response.end(JSON.stringify(reply.body))
    }
  })
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const { port } = server.address() as AddressInfo
  return {
    url: `http://127.0.0.1:${port}/v1`,
    requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections()
        server.close(() => resolve())
      }),
  }
}

/** The step title a work or judge prompt is about. */
export function stepOf(request: ChatRequest): string {
  return /This step: (.*)/.exec(request.prompt)?.[1] ?? /The step:\n<<<DATA-\w+\n# (.*)/.exec(request.prompt)?.[1] ?? ''
}
