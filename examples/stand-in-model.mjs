// A stand-in for a real model, for the demo and for trying vaultplan offline.
// It speaks the OpenAI chat-completions protocol on 127.0.0.1, but it is a
// script, not a model. Each visit of a step writes a new version of its
// result; a review sends the first version back, naming the first point of
// its own checklist, and approves the next, which says it addressed it. It
// judges conditions by a fixed rule (the first visit of a step picks its
// last condition, later visits its first), giving the review's words as its
// reason, so the draft/review loop goes round once and then leaves. Asked
// for a plan (the planning role), it writes the same small one for any task:
// research, draft, a review that loops back once, and publish. Point
// LLM_BASE_URL at a real endpoint to use a model.
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
  // The last list of conditions: the outputs above it are fenced, and may hold the word too.
  const conditions = [...prompt.slice(prompt.lastIndexOf('\nConditions:\n')).matchAll(/^(\d+)\. (.*)$/gm)]
  if (/judge conditions/i.test(system) && conditions.length > 0) return judge(prompt, conditions)
  if (/which tools/i.test(system)) {
    const rows = [...(prompt.split('\nTools:\n')[1] ?? '').matchAll(/^(\d+)\. /gm)]
    return rows.map(([, n]) => `${n}: NO`).join('\n')
  }
  return work(prompt)
}

/**
 * The fixed rule: the first visit of a step picks its last condition, later
 * visits its first (so a review loop goes round once). The reason says why
 * in the review's words when the output judged is one of the stand-in's
 * reviews.
 */
function judge(prompt, conditions) {
  const visit = Number(/The output of this visit \(visit (\d+)\):/.exec(prompt)?.[1] ?? 1)
  const pick = visit === 1 ? conditions.length : 1
  const output = /The output of this visit \(visit \d+\):\n<<<(DATA-\w+)\n([\s\S]*?)\n\1>>>/.exec(prompt)?.[2] ?? ''
  const asked = /^\[stand-in model\] Needs revision: (.*)$/m.exec(output)?.[1]
  const approved = /^\[stand-in model\] Approved: (.*)$/m.exec(output)?.[1]
  const because = asked
    ? `The review asks for a revision: ${asked}`
    : approved
      ? `The review approves it: ${approved}`
      : `Stand-in rule: visit ${visit} picks "${conditions[pick - 1][2]}".`
  return `${conditions.map(([, n]) => `${n}: ${Number(n) === pick ? 'YES' : 'NO'}`).join('\n')}\n${because}`
}

/**
 * A step's work, as a story a person can follow: each visit writes a new
 * version of the step's result, a review (a step whose title says so) sends
 * a first version back naming the first point of its own checklist, and the
 * next version says it addressed it.
 */
function work(prompt) {
  const title = /This step: (.*)/.exec(prompt)?.[1] ?? 'the step'
  const body = prompt.slice(prompt.indexOf('This step:')).split('\n\n').slice(1).join('\n\n')
  const earlier = [
    ...prompt.matchAll(/Output of an earlier step \(([^\n]*), visit (\d+)\):\n([\s\S]*?)(?=\n\nOutput of an earlier step \(|\n\nDo this step now|$)/g),
  ].map(([, node, visit, text]) => ({ node, visit: Number(visit), text, ...versionOf(text) }))
  const latest = earlier.find((output) => output.version !== undefined)
  if (/\breview/i.test(title) && latest) {
    if (latest.version === 1) {
      // The first point of the review's own checklist, else what any review asks of a first version.
      const point = /^\s*(?:\d+[.)]|[-*])\s+(.+?)[,.;]?$/m.exec(body)?.[1] ?? 'it should be specific about what the step asks for'
      return `[stand-in model] Needs revision: version 1 of "${latest.title}" is still general; check that ${point}.`
    }
    return `[stand-in model] Approved: version ${latest.version} of "${latest.title}" addresses what the review asked.`
  }
  const version = 1 + Math.max(0, ...earlier.filter((output) => output.title === title).map((output) => output.version))
  const asked = earlier.map((output) => /^\[stand-in model\] Needs revision: .*?; (check that .*)\.$/m.exec(output.text)?.[1]).find(Boolean)
  const task = /The overall task:\n(.*)/.exec(prompt)?.[1] ?? 'the task'
  const from = latest && latest.title !== title ? `, from version ${latest.version} of "${latest.title}"` : `, for "${task}"`
  if (version > 1 && asked) return `[stand-in model] ${title}, version ${version}: revised after the review, which asked to ${asked}; this version does.`
  return `[stand-in model] ${title}, version ${version}${from}. A real model would do the work the note describes here.`
}

/** The title and version a stand-in output names (`[stand-in model] Draft, version 2 ...`). */
function versionOf(text) {
  const match = /^\[stand-in model\] (.+?), version (\d+)/.exec(text)
  return match ? { title: match[1], version: Number(match[2]) } : {}
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
