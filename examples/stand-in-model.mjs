// A stand-in for a real model, for the demo and for trying vaultplan offline.
// It speaks the OpenAI chat-completions protocol on 127.0.0.1, but it is a
// script, not a model: it writes placeholder step outputs and judges
// conditions by a fixed rule (the first visit of a step picks its last
// condition, later visits its first), so the draft/review loop goes round
// once and then leaves. Asked for a plan (the planning role), it writes the same
// small one for any task: research, draft, a review that loops back once, and
// publish. Point LLM_BASE_URL at a real endpoint to use a model.
import { createServer } from 'node:http'

/** Starts the stand-in on a free port; resolves to `{ url, close }`. */
export async function startStandInModel({ port = 0, log = () => {} } = {}) {
  const server = createServer(async (request, response) => {
    const chunks = []
    for await (const chunk of request) chunks.push(chunk)
    if (request.method !== 'POST' || !request.url?.endsWith('/chat/completions')) {
      response.writeHead(404, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ error: { message: `no route ${request.method} ${request.url}` } }))
      return
    }
    let body
    try {
      body = JSON.parse(Buffer.concat(chunks).toString('utf8'))
    } catch {
      response.writeHead(400, { 'content-type': 'application/json' })
      response.end(JSON.stringify({ error: { message: 'body is not JSON' } }))
      return
    }
    const system = body.messages?.find((m) => m.role === 'system')?.content ?? ''
    const prompt = body.messages?.findLast((m) => m.role === 'user')?.content ?? ''
    const content = reply(system, prompt)
    log(`stand-in model (${body.model}): ${content.split('\n')[0]}`)
    response.writeHead(200, { 'content-type': 'application/json' })
    response.end(
      JSON.stringify({
        id: `standin-${Date.now()}`,
        object: 'chat.completion',
        created: Math.floor(Date.now() / 1000),
        model: body.model,
        choices: [{ index: 0, message: { role: 'assistant', content }, finish_reason: 'stop' }],
        // No tokenizer here: a quarter of the characters, as an estimate, so the trace shows what a model would report.
        usage: {
          prompt_tokens: Math.ceil((system.length + prompt.length) / 4),
          completion_tokens: Math.ceil(content.length / 4),
          total_tokens: Math.ceil((system.length + prompt.length + content.length) / 4),
        },
      }),
    )
  })
  await new Promise((resolve) => server.listen(port, '127.0.0.1', resolve))
  const { port: bound } = server.address()
  return { url: `http://127.0.0.1:${bound}/v1`, close: () => new Promise((resolve) => server.close(resolve)) }
}

function reply(system, prompt) {
  if (/You write plans as one markdown document/.test(system)) return plan(/Write a plan for this task:\n\n([^\n]*)/.exec(prompt)?.[1] ?? 'the task')
  const conditions = [...(prompt.split('\nConditions:\n')[1] ?? '').matchAll(/^(\d+)\. (.*)$/gm)]
  if (/judge conditions/i.test(system) && conditions.length > 0) {
    const visit = Number(/\(visit (\d+)\)/.exec(prompt)?.[1] ?? 1)
    const pick = visit === 1 ? conditions.length : 1
    return conditions
      .map(([, n, label]) => `${n}: ${Number(n) === pick ? 'YES' : 'NO'} (stand-in rule: visit ${visit} picks "${conditions[pick - 1][2]}")`)
      .join('\n')
  }
  if (/which tools/i.test(system)) {
    const rows = [...(prompt.split('\nTools:\n')[1] ?? '').matchAll(/^(\d+)\. /gm)]
    return rows.map(([, n]) => `${n}: NO`).join('\n')
  }
  const step = /This step: (.*)/.exec(prompt)?.[1] ?? 'the step'
  const revised = /Output of an earlier step/.test(prompt) ? ' It takes the earlier outputs into account.' : ''
  return `[stand-in model] Placeholder result for "${step}".${revised} A real model would do the work described in the note here.`
}

/** The stand-in's plan for any task, in the planner's document format. */
function plan(task) {
  return [
    '## research',
    'type: start',
    `Find what is needed for: ${task}`,
    '### Next',
    '- [[draft]]',
    '',
    '## draft',
    'Write a first version from the research.',
    '### Next',
    '- [[review]]',
    '',
    '## review',
    'role: review',
    'Check the draft against the task.',
    '### Next',
    '- the draft is ready -> [[publish]]',
    '- the draft needs work -> [[draft]]',
    '',
    '## publish',
    'Put the final version together.',
    '',
  ].join('\n')
}
